"""Helpers for the recorder tests: run child scripts, read tables the way readers must."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from recorders.format import KEYS, parse_part_name

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


def popen(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HERE / script), *map(str, args)], cwd=ROOT,
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HERE / script), *map(str, args)], cwd=ROOT,
                          env=child_env(), capture_output=True, text=True, timeout=timeout)


def meta(run_dir: Path, name: str = "run.json") -> dict:
    return json.loads((Path(run_dir) / name).read_text())


def parts(run_dir: Path, table: str) -> list[tuple[int, int, Path]]:
    folder = Path(run_dir) / table
    out = []
    for p in folder.iterdir() if folder.is_dir() else ():
        parsed = parse_part_name(p.name)
        if parsed:
            out.append((parsed[1], parsed[0], p))
    return sorted(out)


def read_table(run_dir: Path, table: str) -> pa.Table | None:
    """All parts of ``table``, keeping per key the row of the highest seq (the format's rule).

    Parts a surviving merged part replaces (a kill inside compaction) are
    dropped, read straight from the footers here, not through the code under test.
    """
    found = parts(run_dir, table)
    replaced = set()
    for seq, rank, path in found:
        raw = (pq.read_schema(pa.OSFile(os.fsencode(path))).metadata or {}).get(b"runlens.replaces", b"")
        replaced |= {(rank, int(x)) for x in raw.decode().split(",") if x and int(x) < seq}
    tables = []
    for seq, rank, path in found:
        if (rank, seq) in replaced:
            continue
        t = pq.read_table(pa.OSFile(os.fsencode(path)))
        if "layer" in t.column_names:
            t = t.set_column(t.column_names.index("layer"), "layer", t.column("layer").cast(pa.string()))
        tables.append(t.append_column("_seq", pa.array([seq] * t.num_rows, pa.int64())))
    if not tables:
        return None
    t = pa.concat_tables(tables, promote_options="permissive")
    key = KEYS[table]
    if key is None:
        return t
    rows = t.to_pylist()
    best: dict = {}
    for i, row in enumerate(rows):
        k = tuple(row[c] for c in key)
        if k not in best or row["_seq"] >= rows[best[k]]["_seq"]:
            best[k] = i
    keep = sorted(best.values(), key=lambda i: tuple(rows[i][c] for c in key))
    return t.take(pa.array(keep))
