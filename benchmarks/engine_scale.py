"""How ``runlens analyze`` scales: time and peak memory against a plain pyarrow read.

A synthetic run in format v1 (written with pyarrow directly: N scalar
steps, 100 layers recorded every 10 steps, a validation pass every 1,000
steps, 100 parts per table as a run left uncompacted would have) is
analysed in a fresh subprocess, and the same columns are read with pyarrow
in another, so each reports its own peak RSS. Usage::

    python benchmarks/engine_scale.py                      # 10^4, 10^5, 10^6 steps
    python benchmarks/engine_scale.py --steps 10000 --out -

Data goes to benchmarks/_data/ (git-ignored) and is reused between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from recorders import format as fmt  # noqa: E402

DATA = ROOT / "benchmarks" / "_data"
LAYERS, LAYERS_EVERY, EVALS_EVERY, PARTS = 100, 10, 1000, 100


def generate(n: int, where: Path) -> Path:
    """Write the synthetic run once; later calls reuse it."""
    if (where / "run.json").exists():
        return where
    rng = np.random.default_rng(0)
    names = [f"blocks.{i // 2}.{'weight' if i % 2 == 0 else 'bias'}" for i in range(LAYERS)]
    steps = np.arange(n, dtype=np.int64)
    loss = 0.3 + 2.0 * np.exp(-steps / (n / 6)) + rng.normal(0, 0.02, n) * np.exp(-steps / n)
    scalars = pa.table({"step": steps, "time": 1.7e9 + steps * 0.1, "loss": loss,
                        "lr": np.full(n, 1e-3), "grad_norm": np.abs(1 + rng.normal(0, 0.05, n))})
    ls = steps[::LAYERS_EVERY]
    rows = len(ls) * LAYERS
    depth = np.tile(np.arange(LAYERS, dtype=np.int32), len(ls))
    weight = (5 + depth / LAYERS).astype(np.float32) * (1 + 0.1 * np.repeat(ls, LAYERS) / n).astype(np.float32)
    noise = lambda: np.exp(rng.normal(0, 0.1, rows)).astype(np.float32)  # noqa: E731
    layer = pa.DictionaryArray.from_arrays(pa.array(depth), pa.array(names))
    layers = pa.table({"step": np.repeat(ls, LAYERS), "layer": layer,
                       "grad_norm": (0.2 + 0.001 * depth).astype(np.float32) * noise(),
                       "weight_norm": weight, "update_norm": weight * np.float32(1e-3) * noise(),
                       "grad_abs_max": np.full(rows, 0.05, np.float32),
                       "grad_zero_frac": np.zeros(rows, np.float32), "nonfinite": np.zeros(rows, np.int32)})
    es = steps[EVALS_EVERY - 1::EVALS_EVERY]
    evals = pa.table({"step": es, "time": 1.7e9 + es * 0.1, "val_loss": loss[es] + 0.05})
    for name, table in (("scalars", scalars), ("layers", layers), ("evals", evals)):
        _write_parts(where / name, table)
    meta = {"format": fmt.FORMAT, "format_version": 1, "run_id": "bench", "name": where.name,
            "status": "finished", "started_at": "2026-01-01T00:00:00+00:00", "ended_at": None,
            "heartbeat_at": None, "flush_every": 100, "flush_seconds": 30, "host": "bench", "pid": 1,
            "config": {"layers_every": LAYERS_EVERY}, "seed": 0, "environment": {"python": "3"},
            "layers": [{"name": nm, "index": i, "module": nm.rsplit(".", 1)[0], "kind": "Linear",
                        "shape": [1], "numel": 1} for i, nm in enumerate(names)],
            "attempts": [], "error": None}
    (where / "run.json").write_text(json.dumps(meta))
    return where


def _write_parts(folder: Path, table: pa.Table) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, table.num_rows, min(PARTS, table.num_rows) + 1).astype(int)
    for seq, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        pq.write_table(table.slice(a, b - a), folder / fmt.part_name(0, seq))


RAW = """
import json, resource, sys, time
import pyarrow as pa
import pyarrow.parquet as pq
pa.set_memory_pool(pa.system_memory_pool())  # the allocator runlens analyze uses
from pathlib import Path
from runlens.analysis import projection, _instances
cols = projection(_instances(None))
t0 = time.perf_counter()
nbytes, held = 0, []
for table, names in cols.items():
    folder = Path(sys.argv[1]) / table
    for part in sorted(folder.glob("r*.parquet")):
        have = pq.read_schema(part).names
        t = pq.read_table(part, columns=[c for c in ["step", "layer", *names] if c in have])
        nbytes += t.nbytes
        held.append(t)  # kept, as the analysis keeps its tables
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "decoded_mb": nbytes / 2**20, "columns": cols}))
"""

ANALYZE = """
import contextlib, io, json, resource, sys, time, psutil
from runlens.cli import main
import runlens.analysis, runlens.detectors.curve, runlens.render.text  # imports are not the analysis
base = psutil.Process().memory_info().rss / 2**20
out = io.StringIO()
t0 = time.perf_counter()
with contextlib.redirect_stdout(out):
    main(["analyze", sys.argv[1], "--format", "json"], standalone_mode=False)
dt = time.perf_counter() - t0
d = json.loads(out.getvalue())
print(json.dumps({"seconds": dt, "import_mb": base,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "curve": d["curve"], "findings": [f["code"] for f in d["findings"]]}))
"""

SPLIT = """
import json, sys, time
from runlens.cli.analyze import use_system_allocator
from runlens.analysis import analyze, projection, _instances
from runlens.io.loader import load_run
import runlens.detectors.curve
use_system_allocator()
t0 = time.perf_counter()
run = load_run(sys.argv[1], columns=projection(_instances(None)))
t1 = time.perf_counter()
analyze(run)
print(json.dumps({"load_s": t1 - t0, "detect_s": time.perf_counter() - t1}))
"""

PROFILE = """
def _slowest(run):
    import time
    from runlens.analysis import _instances, run_detector, first_nonfinite_step, _classify
    from runlens.detectors import Context
    ctx = Context(first_nonfinite_step=first_nonfinite_step(run))
    out = {}
    t = time.perf_counter(); _classify(run, ctx, []); out["curve"] = time.perf_counter() - t
    for det in _instances(None):
        t = time.perf_counter(); run_detector(det, run, ctx); out[det.code] = time.perf_counter() - t
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:6])
"""

_PROFILE_MAIN = """
import json, sys
from runlens.cli.analyze import use_system_allocator
use_system_allocator()
from runlens.analysis import projection, _instances
from runlens.io.loader import load_run
print(json.dumps(_slowest(load_run(sys.argv[1], columns=projection(_instances(None))))))
"""


def child(code: str, *args: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          timeout=3600)
    if proc.returncode:
        raise SystemExit(f"child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def best_of(repeat: int, code: str, path: Path) -> dict:
    """The fastest of ``repeat`` runs (the machine is shared), with the highest peak seen."""
    runs = [child(code, str(path)) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "peak_mb": max(r["peak_mb"] for r in runs)}


def measure(n: int, profile: bool, repeat: int) -> dict:
    path = generate(n, DATA / f"scale_{n}")
    raw = best_of(repeat, RAW, path)
    ana = best_of(repeat, ANALYZE, path)
    ana.update(child(SPLIT, str(path)))
    if profile:
        ana["slowest"] = child(PROFILE + _PROFILE_MAIN, str(path))
    return {"steps": n, "repeat": repeat, "layer_rows": (n // LAYERS_EVERY) * LAYERS, "raw": raw, "analyze": ana}


def report(results: list[dict]) -> str:
    lines = ["# Engine scale benchmark", "",
             f"Generated by `python benchmarks/engine_scale.py` on {time.strftime('%Y-%m-%d', time.gmtime())}. "
             f"Synthetic healthy run: N scalar steps, {LAYERS} layers every {LAYERS_EVERY} steps, "
             f"a validation pass every {EVALS_EVERY} steps, {PARTS} parts per table. Each measurement "
             f"runs in its own subprocess, best time of {results[0]['repeat']} (the machine is shared), "
             f"highest peak RSS of them (imports included); both sides use the system allocator, as the CLI does. Raw read "
             "= `pq.read_table` of exactly the columns the analysis projects, every part kept in "
             "memory; analyze = `runlens analyze RUN --format json` run in-process after its imports "
             "(load with that projection, curve classifier, every registered detector, JSON); the "
             "load/detect split comes from a separate run of the API.", "",
             "| steps | layer rows | raw read s | analyze s (load + detect) | ratio | decoded MB | "
             "raw peak MB | analyze peak MB | analyze peak - imports MB | memory ratio |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        raw, ana = r["raw"], r["analyze"]
        extra = ana["peak_mb"] - ana["import_mb"]
        lines.append(
            f"| {r['steps']:,} | {r['layer_rows']:,} | {raw['seconds']:.2f} | {ana['seconds']:.2f} "
            f"({ana['load_s']:.2f} + {ana['detect_s']:.2f}) | {ana['seconds'] / raw['seconds']:.1f}x | "
            f"{raw['decoded_mb']:.0f} | {raw['peak_mb']:.0f} | {ana['peak_mb']:.0f} | {extra:.0f} | "
            f"{extra / max(raw['decoded_mb'], 1e-9):.1f}x |")
    lines += ["", "Columns read: `" + json.dumps(results[-1]["raw"]["columns"]) + "`", ""]
    for r in results:
        if r["analyze"].get("slowest"):
            slow = ", ".join(f"{k} {v:.2f}s" for k, v in r["analyze"]["slowest"].items())
            lines.append(f"- {r['steps']:,} steps, slowest parts of the analysis: {slow}")
    lines += ["", *_verdict(results)]
    lines += ["", "Findings on the largest run (a healthy synthetic run should have none but "
              f"info): `{results[-1]['analyze']['findings']}`, curve `{results[-1]['analyze']['curve']}`."]
    return "\n".join(lines) + "\n"


def _verdict(results: list[dict]) -> list[str]:
    """Targets (analyze <= 3x the raw read in time, <= 3x the decoded columns in memory) and growth."""
    big = results[-1]
    t = big["analyze"]["seconds"] / big["raw"]["seconds"]
    m = (big["analyze"]["peak_mb"] - big["analyze"]["import_mb"]) / big["raw"]["decoded_mb"]
    out = [f"- Largest run: analyze takes {t:.1f}x the raw read ({'met' if t <= 3 else 'NOT met'}: "
           f"target <= 3x); its peak memory above the imports is {m:.1f}x the decoded columns "
           f"({'met' if m <= 3 else 'NOT met'}: target <= 3x)."]
    if len(results) > 1:
        small = results[0]
        steps = big["steps"] / small["steps"]
        grow = big["analyze"]["seconds"] / small["analyze"]["seconds"]
        raw = big["raw"]["seconds"] / small["raw"]["seconds"]
        out.append(f"- Growth from {small['steps']:,} to {big['steps']:,} steps ({steps:.0f}x the data): "
                   f"analyze time x{grow:.0f}, raw read x{raw:.0f} (linear would be x{steps:.0f}).")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="10000,100000,1000000")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "engine_scale.md"))
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    args = ap.parse_args()
    results = [measure(int(n), not args.no_profile, args.repeat) for n in args.steps.split(",")]
    text = report(results)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(text)


if __name__ == "__main__":
    main()
