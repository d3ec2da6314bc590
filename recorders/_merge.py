"""Part merge and dedup: the one implementation the loader and compaction share.

The format's reading rules, as code (pyarrow and numpy only):

- **What a merged part replaces.** Compaction writes a merged part whose
  Parquet metadata (``runlens.replaces``) lists the seqs of the same rank's
  parts it holds; the old parts are removed afterwards. A kill between the
  two leaves both on disk. :func:`replaced_parts` names the parts a reader
  must then drop, so events (never deduplicated) are not counted twice.
- **Union of columns** (:func:`concat`): parts may carry different columns;
  a column whose types disagree beyond int/float widening is dropped (the
  caller is told which).
- **Highest seq wins** (:func:`last_per_key`): rows concatenated in seq
  order, the last row of each key is kept, in key order.

Paths are opened through :func:`open_input` / :func:`open_output`, which
take the path as bytes, so a run directory whose name is not valid UTF-8
(pyarrow's own path handling refuses those) is read and written like any other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPLACES_KEY = b"runlens.replaces"
#: Rows decoded from one part at most (20M; compaction itself writes parts of 2,000,000 rows).
#: The engine's documented limit, ``runlens.io.bounded.MAX_PART_ROWS``, is this same number.
MAX_PART_ROWS = 20_000_000
#: Values per decoded batch (rows times columns): 128 MB of float64, so a part of 10,000 columns
#: is decoded 1,677 rows at a time and one of 5 columns in batches of 3.3M rows.
BATCH_CELLS = 1 << 24

__all__ = ["BATCH_CELLS", "MAX_PART_ROWS", "REPLACES_KEY", "TooManyRows", "concat", "decode_bounded",
           "in_key_order", "last_per_key", "open_input", "open_output", "part_replaces", "read_part",
           "replaced_parts", "replaces_value", "unify_types"]


def open_input(path: str | os.PathLike[str]) -> pa.NativeFile:
    """A native file for reading ``path``, whatever bytes its name holds."""
    return pa.OSFile(os.fsencode(path), "rb")


def open_output(path: str | os.PathLike[str]) -> pa.NativeFile:
    return pa.OSFile(os.fsencode(path), "wb")


def replaces_value(seqs: Iterable[int]) -> bytes:
    """The ``runlens.replaces`` metadata value for a merged part of ``seqs``."""
    return ",".join(str(int(s)) for s in seqs).encode()


def part_replaces(path: str | os.PathLike[str]) -> tuple[int, ...]:
    """Seqs a part says it replaces (from its footer); () for an ordinary or unreadable part."""
    try:
        with open_input(path) as f:
            meta = pq.read_schema(f).metadata or {}
    except (OSError, ValueError, pa.ArrowException):
        return ()
    raw = meta.get(REPLACES_KEY)
    if not raw:
        return ()
    try:
        return tuple(int(x) for x in raw.decode().split(",") if x)
    except ValueError:  # a lying footer replaces nothing
        return ()


def replaced_parts(parts: Iterable[tuple[int, int, str | os.PathLike[str]]]) -> set[tuple[int, int]]:
    """``(rank, seq)`` of the ``(rank, seq, path)`` parts that a merged part of the same rank replaces.

    A merged part only ever replaces lower seqs of its own rank; anything
    else in its metadata is ignored, so a corrupt footer cannot hide newer rows.
    """
    parts = list(parts)
    present = {(r, s) for r, s, _ in parts}
    out: set[tuple[int, int]] = set()
    for rank, seq, path in parts:
        for old in part_replaces(path):
            if old < seq and (rank, old) in present:
                out.add((rank, old))
    return out


def unify_types(seen: set[pa.DataType]) -> pa.DataType | None:
    """One type for a column whose parts disagree, or None when they cannot agree."""
    seen = {t for t in seen if not pa.types.is_null(t)} or seen
    if len(seen) == 1:
        return next(iter(seen))
    if all(pa.types.is_integer(t) for t in seen):
        return pa.int64()
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in seen):
        return pa.float64()
    if all(pa.types.is_dictionary(t) or pa.types.is_string(t) for t in seen):
        return pa.dictionary(pa.int32(), pa.string())
    return None


def concat(pieces: list[pa.Table], on_drop: Callable[[str], None] | None = None) -> pa.Table:
    """Concatenate parts (in seq order) over the union of their columns."""
    if len(pieces) == 1:
        return pieces[0]
    types: dict[str, set[pa.DataType]] = {}
    for piece in pieces:
        for f in piece.schema:
            types.setdefault(f.name, set()).add(f.type)
    unified = {}
    for name, seen in types.items():
        target = unify_types(seen)
        if target is None:
            if on_drop is not None:
                on_drop(name)
            continue
        unified[name] = target
    fixed = []
    for piece in pieces:
        piece = piece.select([c for c in piece.column_names if c in unified])
        fixed.append(piece.cast(pa.schema([pa.field(c, unified[c]) for c in piece.column_names])))
    return pa.concat_tables(fixed, promote_options="default")


def in_key_order(step: np.ndarray, sub: np.ndarray | None, *, strict: bool, block: int = 1 << 20) -> bool:
    """Whether rows are already in key order (strict: and without duplicate keys).

    Checked in blocks so the temporaries stay small next to a 10M-row column.
    """
    for a in range(0, max(len(step) - 1, 0), block):
        b = min(a + block + 1, len(step))
        ds = np.diff(step[a:b])
        if np.any(ds < 0):
            return False
        if not strict:
            continue
        tie = ds == 0
        if tie.any() and (sub is None or np.any(np.diff(sub[a:b])[tie] <= 0)):
            return False
    return True


def last_per_key(step: np.ndarray, sub: np.ndarray | None = None) -> np.ndarray | None:
    """Row indices keeping the last row of each ``(step, sub)`` key, in key order.

    Rows must come in seq order (the parts concatenated oldest first), so
    the last row of a key is the newest written. None when the rows are
    already in strict key order: nothing to drop or reorder.
    """
    if in_key_order(step, sub, strict=True):
        return None
    idx = np.lexsort((step,) if sub is None else (sub, step))
    s = step[idx]
    # lexsort is stable, so the last row of each key group is the latest written.
    last = np.ones(len(idx), dtype=bool)
    same = s[1:] == s[:-1]
    if sub is not None:
        d = sub[idx]
        same &= d[1:] == d[:-1]
    last[:-1] = ~same
    return idx[last]


class TooManyRows(ValueError):
    """A part holds more rows than the reader's ceiling (its footer may say fewer)."""


def decode_bounded(pf: pq.ParquetFile, columns: list[str] | None = None,
                   max_rows: int = MAX_PART_ROWS) -> pa.Table:
    """``columns`` of an open part (None: all), decoded in batches and refused past ``max_rows``.

    A 2 MB part of repeated values decodes to 2x10^8 rows, and the file's row count in its
    footer can claim 1,000 of them: the row groups' own counts (what pyarrow decodes) are
    checked too before decoding, and the rows counted again batch by batch, so a part past the
    ceiling raises :class:`TooManyRows` at most one batch past it, never after decoding it
    whole. Batches hold about :data:`BATCH_CELLS` values, however many columns the part has.
    """
    meta = pf.metadata
    claimed = max(meta.num_rows, sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups)))
    if claimed > max_rows:
        raise TooManyRows(f"{claimed:,} rows, more than the {max_rows:,} decoded from one part")
    return _decode_counting(pf, columns, max_rows)


def _decode_counting(pf: pq.ParquetFile, columns: list[str] | None, max_rows: int) -> pa.Table:
    # pyarrow decodes no more rows than a row group's footer entry says (checked above); the count
    # here holds whatever a future reader or a corrupt page makes of that.
    meta = pf.metadata
    width = len(columns) if columns is not None else len(pf.schema_arrow)
    rows, batches = 0, []
    for batch in pf.iter_batches(batch_size=max(1024, BATCH_CELLS // max(width, 1)), columns=columns):
        rows += batch.num_rows
        if rows > max_rows:
            raise TooManyRows(f"more than {max_rows:,} rows decoded although the footer claims "
                              f"{meta.num_rows:,}, the most decoded from one part")
        batches.append(batch)
    if batches:
        return pa.Table.from_batches(batches)
    schema = pf.schema_arrow
    return schema.empty_table() if columns is None else schema.empty_table().select(columns)


def read_part(path: Path, columns: list[str] | None = None, max_rows: int = MAX_PART_ROWS) -> pa.Table:
    """A whole part (or ``columns`` of it), opened by bytes path, at most ``max_rows`` rows
    (:class:`TooManyRows` past them): compaction, resume and ``validate`` read parts they did
    not necessarily write."""
    with open_input(path) as f, pq.ParquetFile(f) as pf:
        return decode_bounded(pf, columns, max_rows)
