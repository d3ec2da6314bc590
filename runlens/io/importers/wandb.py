"""Weights & Biases: the CSV a chart exports, and the ``.wandb`` file of an offline run.

Chart export (``Export panel data > CSV``): a ``Step`` column, then per run
``<run> - <metric>`` with ``<run> - <metric>__MIN`` / ``__MAX`` (the
smoothing band, dropped). Several runs in one export: the last column
group's run is imported unless ``run=N`` picks another (the warnings name
them all).

``.wandb`` (``wandb/offline-run-*/run-*.wandb``, or the folder holding it):
its LevelDB-log framing is read here (wandb 0.19+ reads it only in its Go
core) with every record's checksum verified, and the records are decoded
with the wandb package's protobuf classes; history records only (``_step``
is the step). Without wandb installed the import is refused with the extra
to install: ``pip install 'runlens[wandb]'``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

from runlens.errors import ImportFailedError
from runlens.io.bounded import bounded_int, bounded_steps, loads_json
from runlens.io.importers import csv as _csv
from runlens.io.importers._common import Imported, Series, Take, record_runs, require_file
from runlens.io.importers._names import Mapper

_COL = re.compile(r"^(?P<run>.+?) - (?P<metric>.+?)(?P<band>__MIN|__MAX)?$")
_STEP_COLS = ("Step", "step", "_step", "trainer/global_step")


def _export(path: Path, *, step: str | None, loss: str | None, val_loss: str | None) -> Take:
    """The export read once: ``take(run)`` is the importer's run ``run`` of it."""
    warnings: list[str] = []
    header, cols = _csv.read_rows(path, conflict=None, warnings=warnings)
    step_col = step or next((c for c in _STEP_COLS if c in header), None)
    if step_col is None or step_col not in cols:
        raise ImportFailedError(f"{path}: no step column (Step, _step, ...); columns are: {', '.join(header[:12])}")
    runs: dict[str, dict[str, str]] = {}
    for h in header:
        m = _COL.match(h)
        if m and not m.group("band") and h != step_col:
            runs.setdefault(m.group("run"), {})[m.group("metric")] = h
    if not runs:
        raise ImportFailedError(f"{path}: no '<run> - <metric>' columns: not a W&B chart export")
    # A step beyond int64 (or missing, or negative) is -1 here: its rows are skipped, with a warning.
    beyond: list[str] = []
    bounded = iter(bounded_steps([s for s in cols[step_col] if s is not None], repr(step_col), beyond).tolist())
    steps = [None if s is None else next(bounded) for s in cols[step_col]]
    return functools.partial(_take_export, path, warnings, beyond, runs, cols, steps, (loss, val_loss))


def _take_export(path: Path, notes: list[str], beyond: list[str], runs: dict[str, dict[str, str]],
                 cols: dict[str, list], steps: list[int | None], names_given: tuple[str | None, str | None],
                 run: int | None) -> Imported:
    names = list(runs)
    chosen = len(names) if run is None else run
    if not 1 <= chosen <= len(names):
        raise ImportFailedError(f"{path}: --run {run}: the export holds {len(names)} run(s): {', '.join(names)}")
    warnings = list(notes)
    imp = Imported(kind="wandb", source=path, warnings=warnings, name=names[chosen - 1])
    if len(names) > 1:
        warnings.append(f"the export holds {len(names)} runs ({', '.join(f'{i} {n}' for i, n in enumerate(names, 1))}); "
                        f"imported run {chosen} ({names[chosen - 1]}); pick another with --run N")
        record_runs(imp.config, [(n, None) for n in names], chosen, warnings[-1])
    warnings.extend(beyond)
    mapper = Mapper(*names_given)  # its own: a mapper keeps the first name seen in each role
    for metric, col in runs[names[chosen - 1]].items():
        pairs = [(s, v) for s, v in zip(steps, cols[col], strict=True) if s is not None and s >= 0 and v is not None]
        if pairs:
            _put(imp, metric, pairs, mapper)
    return imp


def _put(imp: Imported, metric: str, pairs: list[tuple[int, float]], mapper: Mapper) -> None:
    is_eval, col = mapper(metric)
    (imp.evals if is_eval else imp.train)[col] = Series.from_lists([p[0] for p in pairs], [p[1] for p in pairs])
    imp.config.setdefault("import_fields", {})[col] = metric


_BLOCK = 32_768
_HEADER = b":W&B\xe1\xbe\x00"  # ident, magic 0xBEE1, version 0


def records(path: Path, warnings: list[str]) -> Iterator[bytes]:
    """The data of every record of a ``.wandb`` file: LevelDB log framing (32 KiB blocks, records of
    ``crc32 | length | type`` headers, FULL or FIRST/MIDDLE/LAST pieces), each checksum verified.

    Recent wandb releases read these files in their Go core only, so the framing is read here; the
    records themselves are decoded with wandb's own protobuf classes.
    """
    import struct
    import zlib

    data = path.read_bytes()
    if not data.startswith(_HEADER):
        raise ImportFailedError(f"{path}: not a .wandb file (no ':W&B' header)")
    pos, pending = len(_HEADER), b""
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < 7:
            pos += left  # a block's tail too short for a header is padding
            continue
        crc, n, kind = struct.unpack_from("<IHB", data, pos)
        body = data[pos + 7:pos + 7 + n]
        if kind == 0 and n == 0:
            pos += left  # zero padding to the end of the block
            continue
        if len(body) < n or zlib.crc32(bytes([kind]) + body) & 0xFFFFFFFF != crc:
            warnings.append(f"{path.name}: record at byte offset {pos} is truncated or fails its checksum: "
                            "the rest of the file is not read")
            return
        pos += 7 + n
        if kind == 1:
            yield body
        elif kind == 2:
            pending = body
        elif kind == 3:
            pending += body
        elif kind == 4:
            yield pending + body
            pending = b""


def _offline(path: Path, *, loss: str | None, val_loss: str | None) -> Imported:
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError:
        raise ImportFailedError(f"{path}: reading a .wandb file needs the wandb package: "
                                "pip install 'runlens[wandb]'") from None
    imp = Imported(kind="wandb", source=path)
    metrics: dict[str, list[tuple[int, float]]] = {}
    beyond = 0
    for data in records(path, imp.warnings):
        # protobuf-generated: wandb ships no stub for it, so its message classes are unknown to mypy
        rec = wandb_internal_pb2.Record()  # type: ignore[attr-defined]
        try:
            rec.ParseFromString(data)
        except Exception:  # noqa: BLE001 - protobuf's DecodeError: one bad record, not the file
            imp.warnings.append(f"{path.name}: a record that is not a wandb Record: skipped")
            continue
        if rec.WhichOneof("record_type") == "run" and rec.run.display_name:
            imp.name = rec.run.display_name
        if rec.WhichOneof("record_type") != "history":
            continue
        row = {(i.key or "/".join(i.nested_key)): i.value_json for i in rec.history.item}
        step = rec.history.step.num if rec.history.HasField("step") else _json_step(row.get("_step", "0"))
        if step is None or step < 0:  # int64 on the wire: a uint64 step past 2**63 reads negative
            beyond += 1
            continue
        for key, raw in row.items():
            value = _json_number(raw)
            if key.startswith("_") or value is None:
                continue
            metrics.setdefault(key, []).append((step, value))
    if beyond:
        imp.warnings.append(f"{beyond} history records whose step is not an integer from 0 to 2**63-1: skipped")
    mapper = Mapper(loss, val_loss)
    for key, pairs in metrics.items():
        _put(imp, key, pairs, mapper)
    return imp


def _json_step(raw: str) -> int | None:
    """``_step`` of a history record: an int64 step >= 0 (a uint64 read as negative is not one), else None."""
    try:
        value = loads_json(raw)
    except ValueError:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    value = bounded_int(value, "_step", None)
    return value if value is not None and value >= 0 else None


def _json_number(raw: str) -> float | None:
    """A history value: JSON numbers, and the NaN/Infinity W&B writes bare."""
    try:
        value = loads_json(raw)
    except ValueError:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def read(source: str | Path, *, step: str | None = None, loss: str | None = None,
         val_loss: str | None = None, run: int | None = None) -> Imported:
    """A W&B chart CSV export, a ``.wandb`` file, or an offline run folder holding one."""
    return parse_runs(source, step=step, loss=loss, val_loss=val_loss)(run)


def parse_runs(source: str | Path, *, step: str | None = None, loss: str | None = None,
               val_loss: str | None = None) -> Take:
    """The source read once: ``take(run)`` is :func:`read` with ``run``."""
    path = Path(source)
    if path.is_dir():
        found = sorted(path.glob("*.wandb")) or sorted(path.glob("*/run-*.wandb"))
        if not found:
            raise ImportFailedError(f"{path}: no .wandb file in this folder")
        path = found[-1]
    require_file(path, "wandb")
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b":W&B" or path.suffix == ".wandb":
        # One run per file, read when taken (``run`` never picked among several here).
        return lambda run: _offline(path, loss=loss, val_loss=val_loss)
    return _export(path, step=step, loss=loss, val_loss=val_loss)
