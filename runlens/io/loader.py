"""Read a run directory (format v1) into one in-memory :class:`~runlens.io.run.Run`.

What the loader decides, so detectors do not have to:

- **Parts**: every ``r{rank}-{seq}.parquet`` of a table is read with Arrow
  (only the projected columns); names starting with ``.`` and unknown files
  are ignored. A part that cannot be read (truncated, zero bytes, not
  Parquet, lacking a required column, a column of the wrong type) is skipped
  with a line in ``Run.warnings``; loading never fails because of a part.
- **Union of columns**: parts may carry different user columns; the table
  has all of them, null where a part lacked one. A user column that is an
  integer in one part and a float in another becomes float64.
- **Resumes**: for the same key (``step``; ``(step, layer)`` for layers) the
  row from the highest ``seq`` wins, and within one part the last row.
  Events are never deduplicated. Tables come out sorted by step (layers by
  step, then depth).
- **Ranks**: in distributed training each rank writes its own parts. The
  training curve (``scalars``, ``evals``) is the lowest rank whose parts of
  that table can be read (rank 0 normally): other ranks log the loss of their own
  shard, and mixing them would turn one curve into several interleaved
  ones. ``layers`` take the union of all ranks (sharded models record
  different parameters on different ranks); for a key written by several
  ranks the lowest rank wins. ``events`` keep every rank's flags.
- **Concurrent compaction**: a part that vanishes between the listing and
  the read (a writer compacted the table meanwhile) makes the table be read
  again from a fresh listing, so a read sees it before or after a
  compaction, never half of each.
- **Bounds**: only regular files are read (a FIFO named like a part is
  ignored, a FIFO or device named run.json is refused by name); a part
  holding more than ``MAX_PART_ROWS`` rows (counted as it is decoded in
  batches, whatever its footer claims) is skipped with a warning, and
  a table past ``MAX_TABLE_ROWS`` rows is refused in one line.
- **Status**: a run.json left ``running`` is ``killed`` when its heartbeat
  is older than ``3 * flush_seconds``, or when it was written on this host
  by a pid that no longer exists; otherwise it stays ``running``.
- **Paths**: ``path`` is the run directory (or its run.json); ``Run.path``
  keeps it exactly as given, since the analysis output echoes it.
- **Not a run directory**: when ``path`` has no ``run.json``, the importers
  (``runlens.io.importers``) are asked whether they recognise it (a CSV log, a
  TensorBoard folder, ...) and the converted run is loaded instead.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from recorders import format as fmt
from recorders import merge as _merge
from runlens.errors import RunFormatError, UsageError
from runlens.io._listing import READ_ATTEMPTS as _READ_ATTEMPTS
from runlens.io._listing import Part as _Part
from runlens.io._listing import Vanished as _Vanished
from runlens.io._listing import parts as _parts
from runlens.io.bounded import MAX_PART_COLUMNS, MAX_PART_ROWS, MAX_TABLE_ROWS
from runlens.io.layer_order import layer_depth, layer_order
from runlens.io.logruns import LogRuns, read_foreign, read_in_log, runs_in_log, split_note
from runlens.io.rewinds import rewinds
from runlens.io.run import Run, wanted_columns
from runlens.io.runmeta import derive_status, one_line, read_meta

Columns = Mapping[str, "Iterable[str] | None"]

def load_run(path: str | os.PathLike[str], columns: Columns | None = None, *,
             import_options: Mapping[str, Any] | None = None) -> Run:
    """Read the run at ``path``.

    ``columns`` projects the read: ``{"scalars": ["loss"], "layers": None}``
    loads only the listed columns of the listed tables (``None``: every
    column of that table); tables not named are not read at all. A name
    ending in ``*`` reads every column with that prefix (``"val_loss*"``:
    ``val_loss`` and every ``val_loss@<set>``). Key columns
    (``step``, and ``layer`` for layers) are always read. ``columns=None``
    reads everything. ``import_options`` go to the importer when ``path``
    is another tool's log (``step``, ``loss``, ``val_loss``, ``run``).

    Raises :class:`RunFormatError` when ``path`` is neither a run directory
    nor something an importer recognises, or run.json is unusable, and
    :class:`UnsupportedVersionError` for an unknown ``format_version``.
    """
    return load_runs(path, columns, import_options=import_options).run()


def load_runs(path: str | os.PathLike[str], columns: Columns | None = None, *,
              import_options: Mapping[str, Any] | None = None) -> LogRuns:
    """:func:`load_run` for each run ``path`` holds: ``.run()`` is what ``load_run`` gives, ``.run(i)``
    what it gives with ``run=i`` added to ``import_options``. Another tool's log is parsed here, once,
    however many runs it holds; a run directory is read when a run is asked for."""
    unknown = sorted(set(columns or ()) - set(fmt.TABLES))
    if unknown:
        raise UsageError(f"columns names unknown table(s) {', '.join(unknown)}; tables are "
                         f"{', '.join(fmt.TABLES)}")
    shown = os.fspath(path)
    root = Path(shown)
    if root.name == "run.json" and os.path.exists(root) and not root.is_dir():
        root = root.parent
    if not os.path.lexists(root / "run.json"):
        return read_foreign(shown, columns, import_options)
    # A run directory is one run: the importer's run index means nothing to it.
    return LogRuns(lambda _index: _load_dir(root, shown, columns))


def _load_dir(root: Path, shown: str, columns: Columns | None) -> Run:
    warnings: list[str] = []
    meta = read_meta(root, warnings)
    warnings.extend(_import_notes(meta))
    order = layer_order(meta)
    tables: dict[str, pa.Table | None] = {}
    steps: dict[str, np.ndarray] = {}
    written: dict[str, np.ndarray] = {}  # a table's steps in the order its rows were written
    for table in fmt.TABLES:
        if columns is not None and table not in columns:
            tables[table] = None
            continue
        wanted = None if columns is None else columns[table]
        tables[table], step = _load_table(root, table, wanted, warnings, order, written)
        if step is not None:
            steps[table] = step
    run = Run(path=shown, meta=MappingProxyType(meta), status=derive_status(meta)[0],
              warnings=tuple(warnings), scalars=tables.get("scalars"), evals=tables.get("evals"),
              layers=tables.get("layers"), events=tables.get("events"),
              step_rewinds=rewinds(written["scalars"], meta) if "scalars" in written else None)
    for table, step in steps.items():
        # The dedup pass already decoded the step column: hand it to the run instead of decoding it again.
        run.prime_steps(table, step)
    return run


# -- tables -----------------------------------------------------------------

def _load_table(root: Path, table: str, wanted: Iterable[str] | None, warnings: list[str],
                order: Mapping[str, int], written: dict[str, np.ndarray] | None = None,
                ) -> tuple[pa.Table | None, np.ndarray | None]:
    """The merged table and its step column as int64 (None, None when no part could be read).

    Compaction writes its merged parts before it removes the parts they replace, so a
    part that vanished between the listing and the read means a merged part holding
    its rows is on disk: the table is read again from a fresh listing. Each read sees
    the table wholly before or wholly after a compaction, never half of each.
    """
    keys = fmt.KEYS[table] or ("step",)
    want = None if wanted is None else list(dict.fromkeys([*keys, *wanted]))
    for attempt in range(_READ_ATTEMPTS):
        notes: list[str] = []
        try:
            pieces = _read_pieces(root, table, want, notes, strict=attempt < _READ_ATTEMPTS - 1)
            break
        except _Vanished:
            continue
    warnings.extend(notes)
    if not pieces:
        return None, None
    merged = _concat(pieces, table, warnings)
    return _dedup_and_sort(merged, table, order, written)


def _read_pieces(root: Path, table: str, want: list[str] | None, warnings: list[str],
                 strict: bool) -> list[pa.Table]:
    """The readable parts of one listing, in ascending preference (a later part's row wins a
    duplicate key); ``strict``: raise
    :class:`_Vanished` for a part removed since the listing instead of skipping it."""
    parts = _parts(root, table, warnings, strict)
    # A kill inside compaction leaves a merged part beside the parts it replaces: drop those,
    # or every event in them would be counted twice (events are never deduplicated).
    gone = _merge.replaced_parts((p.rank, p.seq, p.path) for p in parts)
    parts = [p for p in parts if (p.rank, p.seq) not in gone]
    if table not in ("scalars", "evals"):
        # Lowest rank is preferred, so it comes last.
        parts.sort(key=lambda p: (-p.rank, p.seq))
        return _read_all(parts, table, want, root, warnings, strict)
    # The training curve is one rank's: the lowest whose parts can be read (rank 0's curve
    # when its files are fine, rank 1's when every rank-0 part is damaged, never none).
    for rank in sorted({p.rank for p in parts}):
        mine = sorted((p for p in parts if p.rank == rank), key=lambda p: p.seq)
        pieces = _read_all(mine, table, want, root, warnings, strict)
        if pieces:
            if rank != min(p.rank for p in parts):
                warnings.append(f"{table}: no part of a lower rank could be read; the curve is rank {rank}'s")
            return pieces
    return []


def _read_all(parts: list[_Part], table: str, want: list[str] | None, root: Path,
              warnings: list[str], strict: bool) -> list[pa.Table]:
    rows = 0
    pieces = []
    for part in parts:
        piece = _read_part(part, table, want, root, warnings, strict)
        if piece is None:
            continue
        rows += piece.num_rows
        if rows > MAX_TABLE_ROWS:
            raise RunFormatError(f"{root}: {table} holds more than {MAX_TABLE_ROWS:,} rows, "
                                 "the most runlens reads into memory")
        pieces.append(piece)
    return pieces


def _read_part(part: _Part, table: str, want: list[str] | None, root: Path,
               warnings: list[str], strict: bool = False) -> pa.Table | None:
    rel = part.path.relative_to(root)
    try:
        with _source(part.path) as src, pq.ParquetFile(src) as pf:
            names = pf.schema_arrow.names
            if len(names) > MAX_PART_COLUMNS:
                warnings.append(f"skipped {rel}: {len(names):,} columns, more than the {MAX_PART_COLUMNS:,} "
                                "runlens reads from one part")
                return None
            missing = [c for c in fmt.REQUIRED[table] if c not in names]
            if missing:
                warnings.append(f"skipped {rel}: lacks required column(s) {', '.join(missing)}")
                return None
            # Counted once: names.count() per name is quadratic on a part with 150,000 columns.
            twice = sorted(n for n, k in Counter(names).items() if k > 1)
            if twice:
                # Which of two `loss` columns is the loss? The format says: skip the part.
                warnings.append(f"skipped {rel}: column name(s) {', '.join(twice[:5])} appear more than once")
                return None
            # In batches, counting rows: a 2 MB part of repeated values decodes to 2x10^8 rows,
            # and its footer may claim far fewer.
            data = _merge.decode_bounded(pf, None if want is None else wanted_columns(want, names), MAX_PART_ROWS)
        data = _normalise(data, table)
    except _merge.TooManyRows as exc:
        warnings.append(f"skipped {rel}: {exc}")
        return None
    except FileNotFoundError as exc:
        if strict:
            raise _Vanished(str(part.path)) from None
        warnings.append(f"skipped {rel}: unreadable part ({one_line(exc)})")
        return None
    except (OSError, ValueError, pa.ArrowException) as exc:
        warnings.append(f"skipped {rel}: unreadable part ({one_line(exc)})")
        return None
    if data.column("step").null_count:
        warnings.append(f"{rel}: dropped {data.column('step').null_count} row(s) without a step")
        data = data.filter(pc.is_valid(data.column("step")))
    return data


def _source(path: Path) -> contextlib.nullcontext[str] | pa.OSFile:
    """What pyarrow opens ``path`` with: the path itself, or for a name that is not
    valid UTF-8 (Arrow encodes str paths strictly) a file opened by its bytes."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return pa.OSFile(os.fsencode(text))
    return contextlib.nullcontext(text)


def _normalise(data: pa.Table, table: str) -> pa.Table:
    """Cast the spec's columns to their exact types (raises ArrowInvalid if impossible)."""
    known = fmt.FIELDS[table]
    fields, arrays = [], []
    for name, col in zip(data.column_names, data.columns, strict=True):
        target = known.get(name)
        if target is not None and col.type != target:
            if pa.types.is_dictionary(target):
                col = pc.cast(col, target.value_type).dictionary_encode()
                col = col.cast(target)
            else:
                col = _safe_cast(col, target, name)
        fields.append(pa.field(name, col.type))
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _safe_cast(col: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    if pa.types.is_string(target):
        kind = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)):
            raise pa.ArrowInvalid(f"column {name} is {col.type}, expected {target}")
        return pc.cast(col, target)
    numeric = pa.types.is_integer(col.type) or pa.types.is_floating(col.type)
    if not numeric and not pa.types.is_null(col.type):
        raise pa.ArrowInvalid(f"column {name} is {col.type}, expected {target}")
    # Float columns may hold NaN/Inf on purpose; only an int key must be exact.
    return pc.cast(col, target, safe=pa.types.is_integer(target))


def _concat(pieces: list[pa.Table], table: str, warnings: list[str]) -> pa.Table:
    def dropped(name: str) -> None:
        warnings.append(f"dropped {table} column {name}: parts disagree on its type")
    return _merge.concat(pieces, dropped)


def _dedup_and_sort(data: pa.Table, table: str, order: Mapping[str, int],
                    written: dict[str, np.ndarray] | None = None) -> tuple[pa.Table, np.ndarray | None]:
    """Keep the last row of each key, then order by step (and depth for layers); also the
    resulting step column as int64. ``written`` receives the scalars' steps in row order."""
    if data.num_rows == 0:
        return data, None
    # Chunk by chunk: combining a 10M-row table first would double its memory.
    step = _numpy(data.column("step"))
    if table == "layers":
        data, step, depth = layer_depth(data, step, order)
    else:
        depth = None
    step = step.astype(np.int64, copy=False)
    if written is not None and table == "scalars":
        written[table] = step
    if fmt.KEYS[table] is None:
        if _merge.in_key_order(step, None, strict=False):
            return data, step
        idx = np.argsort(step, kind="stable")
        return data.take(pa.array(idx)), step[idx]
    keep = _merge.last_per_key(step, depth)  # shared with the writer's compaction
    return (data, step) if keep is None else (data.take(pa.array(keep)), step[keep])


def _numpy(col: pa.ChunkedArray) -> np.ndarray:
    parts = [c.to_numpy(zero_copy_only=False) for c in col.chunks]
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


# -- imported runs ----------------------------------------------------------

def _import_notes(meta: Mapping[str, Any]) -> list[str]:
    """An imported run's ``config.import_warnings``: what the importer could not map belongs in the
    analysis warnings too, not only in `runlens import`'s output."""
    config = meta.get("config")
    if not isinstance(config, Mapping):
        return []
    source = config.get("imported_from")
    kind = source.get("kind") if isinstance(source, Mapping) else None
    notes = config.get("import_warnings")
    if not kind or not isinstance(notes, list) or not isinstance(source, Mapping):
        return []
    split, origin = split_note(config), _origin(config, source)
    # The importer's note about the log's runs ends "--run N reads another", which is true of the log
    # but not of this folder: it holds the one run imported, and another comes from importing again.
    return [f"import ({kind}): {origin if n == split and origin else n}" for n in notes if isinstance(n, str)]


def _origin(config: Mapping[str, Any], source: Mapping[str, Any]) -> str | None:
    """Which run of which log this folder holds, from ``config["import_runs"]``."""
    runs, path = config.get("import_runs"), source.get("path")
    count = runs_in_log(config)
    read = read_in_log(config, count)
    if count < 2 or read is None or not isinstance(path, str) or not isinstance(runs, Mapping):
        return None
    listed = runs.get("runs")
    listed = listed if isinstance(listed, list) else []
    labels = [str(r.get("label")) for r in listed if isinstance(r, Mapping) and r.get("label")]
    which = f" ({labels[read - 1]})" if len(labels) == count else ""
    return (f"this folder holds run {read}{which} of the {count} runs of {path}; "
            f"`runlens import {source.get('kind')} {path} OUT --run N` imports another")
