"""How ``runlens.analyze`` scales against reading the same tables with pyarrow.

The run is synthetic but real in form: N training steps, 100 layers recorded every 10
steps, a validation pass every 1,000 steps, written by the project's own
``recorders.writer.RunWriter`` and compacted on close, as the recorder leaves a run.

Time (same process, after imports and a warm-up analysis of a small run):
``runlens.analyze(RUN)`` against ``pyarrow.dataset.dataset(RUN/table).to_table()``
for scalars, evals and layers together, in interleaved rounds; the medians and
their ratio are reported (target: at most 3x).

Memory: the peak RSS of ``runlens analyze RUN --format json`` in a fresh process,
against the decoded bytes of those three tables (target: at most 3x); the peak of a
process that only imports runlens is shown too, so the analysis's own share can be
read off.

    python benchmarks/engine_scale.py                         # 10^4 .. 10^6 steps
    python benchmarks/engine_scale.py --steps 10000,10000000  # the growth to 10^7

Data goes to benchmarks/_data/ (git-ignored) and is reused between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "benchmarks" / "_data"
LAYERS, LAYERS_EVERY, EVALS_EVERY = 100, 10, 1000
OUT = ROOT / "benchmarks" / "results" / "engine_scale.md"


def generate(n: int, where: Path) -> Path:
    """Write the synthetic run with RunWriter once (compacted on close); later calls reuse it."""
    from recorders.writer import RunWriter

    if (where / "run.json").exists() and json.loads((where / "run.json").read_text()).get("status") == "finished":
        return where
    rng = np.random.default_rng(0)
    names = [f"blocks.{i // 2}.{'weight' if i % 2 == 0 else 'bias'}" for i in range(LAYERS)]
    depth = np.arange(LAYERS)
    w = RunWriter(where, name=where.name, config={"optimizer": "adam", "lr": 1e-3}, flush_every=10_000,
                  flush_seconds=1e9, heartbeat=False, fsync_meta=False, max_pending_rows=10 ** 9)
    w.set_layers([{"name": nm, "index": i, "module": nm.rsplit(".", 1)[0], "kind": "Linear",
                   "shape": [64, 64] if i % 2 == 0 else [64], "numel": 4096 if i % 2 == 0 else 64}
                  for i, nm in enumerate(names)])
    steps = np.arange(n)
    loss = 0.3 + 2.0 * np.exp(-steps / (n / 6)) + rng.normal(0, 0.02, n) * np.exp(-steps / n)
    gnorm = np.abs(1 + rng.normal(0, 0.05, n))
    for s in range(n):
        w.add_scalars(s, float(loss[s]), time=1.7e9 + s * 0.1, lr=1e-3, grad_norm=float(gnorm[s]))
        if s % LAYERS_EVERY == 0:
            noise = np.exp(rng.normal(0, 0.1, (2, LAYERS))).astype(np.float32)
            weight = ((5 + depth / LAYERS) * (1 + 0.1 * s / n)).astype(np.float32)
            w.add_layers(s, names, ((0.2 + 0.001 * depth) * noise[0]).astype(np.float32), weight,
                         update_norm=weight * np.float32(1e-3) * noise[1],
                         grad_abs_max=np.full(LAYERS, 0.05, np.float32),
                         grad_zero_frac=np.zeros(LAYERS, np.float32), nonfinite=np.zeros(LAYERS, np.int32),
                         copy=False)
        if s % EVALS_EVERY == EVALS_EVERY - 1:
            w.add_eval(s, float(loss[s] + 0.05), time=1.7e9 + s * 0.1)
    w.close()
    return where


def read_tables(run: Path):
    import pyarrow.dataset as ds

    return [ds.dataset(run / t, format="parquet").to_table() for t in ("scalars", "evals", "layers")]


def timed_rounds(run: Path, rounds: int) -> dict:
    """Interleaved rounds of the raw read and the analysis, in this (warm) process."""
    import runlens

    raw, ana = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        tables = read_tables(run)
        raw.append(time.perf_counter() - t0)
        del tables
        t0 = time.perf_counter()
        d = runlens.analyze(run)
        ana.append(time.perf_counter() - t0)
        d = {"curve": d.curve.label, "findings": [f.code for f in d.findings]}
    return {"raw_s": statistics.median(raw), "analyze_s": statistics.median(ana), "raw_all": raw,
            "analyze_all": ana, **d}


# VmHWM, not getrusage: a child's ru_maxrss starts at its parent's size at fork, and this parent is large.
PEAK = """
import sys, io, contextlib
{body}
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
print(int(hwm.split()[1]) / 1024)
"""
ANALYZE = """from runlens.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["analyze", sys.argv[1], "--format", "json"], standalone_mode=False)
    except SystemExit:
        pass
assert out.getvalue().lstrip().startswith("{")"""
IMPORTS = "import runlens.cli, runlens.analysis, runlens.detectors"


def peak_mb(body: str, *args: str) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", PEAK.format(body=body), *args], capture_output=True, text=True,
                          env=env, timeout=7200)
    if proc.returncode:
        raise SystemExit(f"child failed:\n{proc.stderr}")
    return float(proc.stdout.strip().splitlines()[-1])


def measure(n: int, rounds: int) -> dict:
    import pyarrow as pa

    run = generate(n, DATA / f"writer_{n}")
    # The fresh-process peaks first, while this process is still small (the machine is shared).
    peaks = {"peak_mb": peak_mb(ANALYZE, str(run)), "imports_mb": peak_mb(IMPORTS)}
    decoded = sum(t.nbytes for t in read_tables(run)) / 2 ** 20
    timing = timed_rounds(run, rounds)
    pa.default_memory_pool().release_unused()
    return {"steps": n, "layer_rows": -(-n // LAYERS_EVERY) * LAYERS, "decoded_mb": decoded, **timing, **peaks}


def report(results: list[dict], rounds: int) -> str:
    lines = ["# Engine scale benchmark", "",
             f"Generated by `python benchmarks/engine_scale.py` on {time.strftime('%Y-%m-%d', time.gmtime())}, "
             f"on a shared 2-core machine. Synthetic healthy run: N steps, {LAYERS} layers every {LAYERS_EVERY} "
             f"steps, a validation pass every {EVALS_EVERY} steps, written by `RunWriter` and compacted on close. "
             f"Time: medians of {rounds} interleaved rounds in one process, after imports and a warm-up analysis "
             "of a 10,000-step run; raw = `pyarrow.dataset.dataset(RUN/table).to_table()` for scalars, evals and "
             "layers; analyze = `runlens.analyze(RUN)` (load, signals, curve, every registered detector). "
             "Memory: peak RSS of `runlens analyze RUN --format json` in a fresh process; decoded = the "
             "Arrow bytes of the three tables; imports = peak RSS of a process that only imports runlens.", "",
             "| steps | layer rows | raw read s | analyze s | time ratio | decoded MB | analyze peak MB | "
             "imports MB | peak / decoded | (peak - imports) / decoded |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(
            f"| {r['steps']:,} | {r['layer_rows']:,} | {r['raw_s']:.3f} | {r['analyze_s']:.3f} | "
            f"{r['analyze_s'] / r['raw_s']:.2f}x | {r['decoded_mb']:.0f} | {r['peak_mb']:.0f} | "
            f"{r['imports_mb']:.0f} | {r['peak_mb'] / r['decoded_mb']:.2f}x | "
            f"{(r['peak_mb'] - r['imports_mb']) / r['decoded_mb']:.2f}x |")
    big, small = results[-1], results[0]
    lines += ["", f"- Largest run ({big['steps']:,} steps): analyze takes {big['analyze_s'] / big['raw_s']:.2f}x the "
              f"raw read (target <= 3x: {'met' if big['analyze_s'] <= 3 * big['raw_s'] else 'NOT met'}); peak "
              f"memory {big['peak_mb'] / big['decoded_mb']:.2f}x the decoded bytes (target <= 3x: "
              f"{'met' if big['peak_mb'] <= 3 * big['decoded_mb'] else 'NOT met'})."]
    if len(results) > 1:
        k = big["steps"] / small["steps"]
        lines.append(f"- Growth from {small['steps']:,} to {big['steps']:,} steps ({k:.0f}x the data): analyze "
                     f"x{big['analyze_s'] / small['analyze_s']:.0f}, raw read x{big['raw_s'] / small['raw_s']:.0f}, "
                     f"peak memory x{big['peak_mb'] / small['peak_mb']:.1f}.")
    lines += ["", f"Findings on the largest run (healthy: none expected): `{big['findings']}`, curve "
              f"`{big['curve']}`.", "", "Raw per-round seconds: " + "; ".join(
                  f"{r['steps']:,}: raw {[round(x, 3) for x in r['raw_all']]}, analyze "
                  f"{[round(x, 3) for x in r['analyze_all']]}" for r in results)]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="10000,100000,1000000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    import runlens

    runlens.analyze(generate(10_000, DATA / "writer_10000"))  # warm-up
    results = [measure(int(n), args.rounds) for n in args.steps.split(",")]
    text = report(results, args.rounds)
    if args.out != "-":
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
