"""Part files: Arrow tables with the spec's exact types, atomic writes, compaction.

Every part is written under a dot-name and renamed into place, so a reader
(or a SIGKILL) never meets half a part. Compaction merges one rank's parts of
a table into a few large ones whose seq is higher than every part they
replace; the old parts are removed only after the merged ones are on disk,
and a merged part keeps, per key, the row a reader would have kept (highest
seq), so a crash at any point leaves a run that reads the same.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from recorders import _merge
from recorders.format import FIELDS, KEYS, REQUIRED, parse_part_name, part_name, temp_part_name

COMPRESSION = "zstd"
REPLACES_KEY = _merge.REPLACES_KEY


def now(t: float | None = None) -> float:
    """A row's ``time``: ``t`` or the current Unix time."""
    return time.time() if t is None else float(t)


def plain_number(value: Any) -> Any:
    """Plain Python number from numpy/torch scalars; bools become ints (the format has no bool)."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    return value


def value_type(value: Any) -> pa.DataType | None:
    """Arrow type of one user scalar, None when it is not a number."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return pa.int64()
    if isinstance(value, (float, np.floating)):
        return pa.float64()
    return None


def _column(values: list[Any], typ: pa.DataType) -> pa.Array:
    if pa.types.is_integer(typ):
        values = [None if v is None else int(v) for v in values]
    else:
        values = [None if v is None else float(v) for v in values]
    return pa.array(values, type=typ)


def rows_table(table: str, rows: Sequence[dict[str, Any]],
               user_types: dict[str, pa.DataType]) -> pa.Table:
    """scalars/evals/events rows as a table; a column exists if any row names it."""
    fixed = FIELDS[table]
    present: dict[str, None] = dict.fromkeys(REQUIRED[table])
    for row in rows:
        present.update(dict.fromkeys(row))
    names = [c for c in fixed if c in present] + [c for c in present if c not in fixed]
    arrays, fields = [], []
    for name in names:
        typ = fixed.get(name) or user_types[name]
        values = [row.get(name) for row in rows]
        arr = pa.array(values, type=typ) if pa.types.is_string(typ) else _column(values, typ)
        arrays.append(arr)
        fields.append(pa.field(name, typ))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


LAYER_VALUE_COLUMNS = ("grad_norm", "weight_norm", "update_norm", "grad_abs_max",
                       "grad_zero_frac", "nonfinite")


def _layer_column(chunks: Sequence[tuple[int, np.ndarray, dict[str, Any]]], col: str,
                  typ: pa.DataType) -> pa.Array:
    """One column over all chunks: a None chunk or a masked entry becomes null."""
    dtype = typ.to_pandas_dtype()
    values, masks, any_value, any_mask = [], [], False, False
    for _, idx, cols in chunks:
        v = cols.get(col)
        if v is None:
            values.append(np.zeros(len(idx), dtype))
            masks.append(np.ones(len(idx), dtype=bool))
            any_mask = True
            continue
        any_value = True
        mask = np.ma.getmaskarray(v) if np.ma.isMaskedArray(v) else np.zeros(len(idx), dtype=bool)
        any_mask = any_mask or bool(mask.any())
        masks.append(mask)
        values.append(np.asarray(np.ma.getdata(v), dtype=dtype).reshape(-1))
    n = sum(len(v) for v in values)
    if not any_value:
        return pa.nulls(n, type=typ)
    return pa.array(np.concatenate(values), type=typ, mask=np.concatenate(masks) if any_mask else None)


def layers_table(chunks: Sequence[tuple[int, np.ndarray, dict[str, Any]]],
                 dictionary: Sequence[str]) -> pa.Table:
    """Chunks of ``(step, layer indices into dictionary, {column: array|None})``."""
    steps = np.concatenate([np.full(len(idx), step, dtype=np.int64) for step, idx, _ in chunks])
    indices = np.concatenate([idx for _, idx, _ in chunks]).astype(np.int32, copy=False)
    layer = pa.DictionaryArray.from_arrays(pa.array(indices), pa.array(list(dictionary), pa.string()))
    arrays = [pa.array(steps, pa.int64()), layer]
    arrays += [_layer_column(chunks, col, FIELDS["layers"][col]) for col in LAYER_VALUE_COLUMNS]
    schema = pa.schema([pa.field(c, t) for c, t in FIELDS["layers"].items()])
    return pa.Table.from_arrays(arrays, schema=schema)


def write_part(folder: Path, rank: int, seq: int, table: pa.Table, *, fsync: bool = False) -> Path:
    """Write ``table`` as part ``seq`` of ``rank``: dot-temp name first, then rename."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / temp_part_name(rank, seq)
    with _merge.open_output(tmp) as f:  # by bytes path: a non-UTF-8 run directory still works
        pq.write_table(table, f, compression=COMPRESSION)
    if fsync:
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    final = folder / part_name(rank, seq)
    os.replace(tmp, final)
    return final


def list_parts(folder: Path, rank: int | None = None) -> list[tuple[int, int, Path]]:
    """``(seq, rank, path)`` of final parts in ``folder``, ordered by seq."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for name in names:
        parsed = parse_part_name(name)
        if parsed and (rank is None or parsed[0] == rank):
            out.append((parsed[1], parsed[0], folder / name))
    return sorted(out)


def remove_stale_temps(folder: Path, rank: int) -> None:
    """Drop dot-temp parts a killed writer of this rank left behind."""
    prefix = f".tmp-r{rank}-"
    for name in os.listdir(folder) if folder.is_dir() else ():
        if name.startswith(prefix):
            try:
                os.remove(folder / name)
            except OSError:
                pass


def max_step(folders: Iterable[Path]) -> int | None:
    """Highest ``step`` in the scalars parts of ``folders`` (unreadable parts skipped)."""
    best = None
    for folder in folders:
        for _, _, path in list_parts(folder):
            try:
                steps = _merge.read_part(path, columns=["step"]).column("step")
            except Exception:  # noqa: BLE001 - an unreadable part is a reader's warning, not ours
                continue
            top = pc.max(steps).as_py()
            if top is not None and (best is None or top > best):
                best = top
    return best


def _dedup_last(table: pa.Table, key: tuple[str, ...] | None) -> pa.Table:
    """Keep, per key, the last row (the parts were concatenated in seq order)."""
    if key is None or table.num_rows == 0:
        return table
    step = table.column("step").to_numpy().astype(np.int64)
    sub = None
    if len(key) == 2:
        codes = pc.dictionary_encode(table.column(key[1]).cast(pa.string())).combine_chunks()
        sub = codes.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    keep = _merge.last_per_key(step, sub)
    return table if keep is None else table.take(pa.array(keep))


def _kind(typ: pa.DataType) -> str:
    """The suffix of a column kept apart because its type cannot join the numeric one (``acc__str``)."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_dictionary(typ):
        return "str"
    return "".join(c if c.isalnum() else "_" for c in str(typ)).strip("_") or "other"


def _separate(tables: list[pa.Table], on_warn: Callable[[str], None]) -> list[pa.Table]:
    """Parts whose column types cannot be unified get the odd ones renamed, never dropped.

    Booleans join integers (the format has no bool); numeric types are promoted by :func:`_merge.concat`.
    A column that is numeric in some parts and, say, a string in others keeps the numbers under its
    name and the rest under ``{name}__{kind}`` (``acc__str``), so compaction never deletes a value.
    """
    tables = [t.cast(pa.schema([pa.field(f.name, pa.int64()) if pa.types.is_boolean(f.type) else f
                                for f in t.schema])) for t in tables]
    seen: dict[str, set[pa.DataType]] = {}
    for t in tables:
        for f in t.schema:
            seen.setdefault(f.name, set()).add(f.type)
    odd = {name for name, types in seen.items() if _merge.unify_types(types) is None}
    if not odd:
        return tables
    out = []
    for t in tables:
        names = [f"{f.name}__{_kind(f.type)}" if f.name in odd and not _numeric(f.type) else f.name
                 for f in t.schema]
        out.append(t.rename_columns(names))
    for name in sorted(odd):
        kinds = sorted({_kind(typ) for typ in seen[name] if not _numeric(typ)})
        on_warn(f"runlens: compaction: column {name!r} holds {', '.join(kinds)} values in some parts and "
                f"numbers in others; kept apart as {', '.join(f'{name}__{k}' for k in kinds)}")
    return out


def _numeric(typ: pa.DataType) -> bool:
    return pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_null(typ)


def _unify(tables: list[pa.Table], table_name: str, on_warn: Callable[[str], None]) -> pa.Table:
    merged = _merge.concat(_separate(tables, on_warn))
    fixed = FIELDS[table_name]
    fields = []
    for f in merged.schema:
        if f.name in fixed:
            fields.append(pa.field(f.name, fixed[f.name]))
        elif pa.types.is_integer(f.type):
            fields.append(pa.field(f.name, pa.int64()))
        elif _numeric(f.type):
            fields.append(pa.field(f.name, pa.float64()))
        else:  # a non-numeric column kept apart: as it was written
            fields.append(f)
    merged = merged.cast(pa.schema(fields))
    if "layer" in merged.column_names:
        merged = merged.unify_dictionaries()
    return merged


def _groups(parts: list[tuple[int, int, Path]], target_rows: int) -> list[list[tuple[int, int, Path]]]:
    groups: list[list[tuple[int, int, Path]]] = []
    current: list[tuple[int, int, Path]] = []
    rows = 0
    for part in parts:
        with _merge.open_input(part[2]) as f:
            n = pq.ParquetFile(f).metadata.num_rows
        if current and rows + n > target_rows:
            groups.append(current)
            current, rows = [], 0
        current.append(part)
        rows += n
    if current:
        groups.append(current)
    return groups


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def finish_interrupted_compaction(folder: Path, rank: int) -> int:
    """Remove ``rank``'s parts that a surviving merged part replaces (a kill hit between
    writing it and removing them); returns how many were removed."""
    parts = list_parts(folder, rank)
    gone = _merge.replaced_parts((r, s, p) for s, r, p in parts)
    for seq, r, path in parts:
        if (r, seq) in gone:
            os.remove(path)
    return len(gone)


def compact(folder: Path, table_name: str, rank: int, next_seq: int,
            target_rows: int = 2_000_000, on_warn: Callable[[str], None] | None = None) -> int:
    """Merge ``rank``'s parts of one table; returns the next free seq.

    Groups of consecutive parts (in seq order) become one part each, written
    with seqs above every existing one in the same order, so "highest seq
    wins" still picks the newest row for a key. Each merged part records
    the seqs it replaces, so a kill before the old parts are removed never
    duplicates a row (readers drop replaced parts, and the next writer
    removes them).
    """
    finish_interrupted_compaction(folder, rank)
    parts = list_parts(folder, rank)
    if len(parts) < 2:
        return next_seq
    groups = _groups(parts, target_rows)
    # Leading parts already full-sized (an earlier close compacted them) stay:
    # they are older than everything merged after them, so order holds.
    # A full part further on must be rewritten, or an older merge would
    # outrank it.
    while groups and len(groups[0]) == 1:
        groups.pop(0)
    if sum(len(g) for g in groups) == len(groups):
        return next_seq
    written: list[tuple[int, int, Path]] = []
    for group in groups:
        tables = [_merge.read_part(p) for _, _, p in group]
        merged = _dedup_last(_unify(tables, table_name, on_warn or _warn), KEYS[table_name])
        replaces = _merge.replaces_value(seq for seq, _, _ in group)
        merged = merged.replace_schema_metadata({REPLACES_KEY: replaces})
        write_part(folder, rank, next_seq, merged, fsync=True)
        next_seq += 1
        written.extend(group)
    for _, _, path in written:
        os.remove(path)
    return next_seq
