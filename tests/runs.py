"""The one writer of run folders for the tests: a run.json and format-v1 parts.

Runs are built in memory by :func:`runlens.testing.build_run` (or as column
values); :func:`write_run` puts one on disk the way the recorder lays it out,
so a test reads it back through the loader.

    from runlens.testing import build_run
    from tests.runs import write_run

    write_run(tmp_path / "r", build_run(loss=[2.3, 1.1]))
    write_run(tmp_path / "ddp", {"scalars": [(0, 0, cols0), (1, 0, cols1)]})
    update_meta(tmp_path / "r", config={"lr": 0.1})
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from recorders import format as fmt
from runlens.io.run import Run
from runlens.testing import format_table, run_meta

TABLES = ("scalars", "evals", "layers", "events")


def write_part(root: os.PathLike | str, table: str, data: Mapping[str, Any] | pa.Table, rank: int = 0,
               seq: int = 0) -> Path:
    """One part file of ``table``: a ``pa.Table`` is written as it is (its own types, even off the
    format), column values are typed as the format says (:func:`runlens.testing.format_table`)."""
    folder = Path(root) / table
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / fmt.part_name(rank, seq)
    pq.write_table(data if isinstance(data, pa.Table) else format_table(table, data), path)
    return path


def write_run(root: os.PathLike | str, run: Run | Mapping[str, Any] | None = None, *,
              meta: Mapping[str, Any] | None = None, rank: int = 0) -> Path:
    """Write a run folder at ``root`` (created) and return it.

    ``run``: a :class:`Run` (each of its tables is one part, run.json is its ``meta``) or table
    name -> parts, where parts is one table (``pa.Table`` or column values), a list of them
    (sequence numbers 0, 1... of rank ``rank``) or of ``(rank, seq, table)`` tuples; ``None`` is
    no table. ``meta``: the run.json to write (default: the run's own, else an unremarkable one
    named after the folder).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if isinstance(run, Run):
        tables: Mapping[str, Any] = {t: getattr(run, t) for t in TABLES}
        meta = run.meta if meta is None else meta
    else:
        tables = run or {}
    (root / "run.json").write_text(json.dumps(dict(meta) if meta is not None else run_meta(root.name)),
                                   encoding="utf-8")
    for table, parts in tables.items():
        for part_rank, seq, data in _parts(parts, rank):
            write_part(root, table, data, part_rank, seq)
    return root


def update_meta(root: os.PathLike | str, **keys: Any) -> Path:
    """Replace or add ``keys`` in the run.json of the run folder at ``root`` (written before) and
    return its path: a run that differs from its twin in its run.json alone, such as its ``config``."""
    path = Path(root) / "run.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**meta, **keys}), encoding="utf-8")
    return path


def _parts(parts: Any, rank: int) -> list[tuple[int, int, Any]]:
    if parts is None:
        return []
    if isinstance(parts, (Mapping, pa.Table)):
        parts = [parts]
    if not isinstance(parts, Sequence):
        raise TypeError(f"parts must be a table, column values or a list of them, not {type(parts).__name__}")
    return [part if isinstance(part, tuple) else (rank, i, part) for i, part in enumerate(parts)]
