"""Generate the held-out set: ``python -m benchmarks.heldout [--only NAME,...] [--list]``.

Each run trains into ``benchmarks/_data/heldout/<name>/``; beside its tables
go ``probe.npz`` (what was measured in torch during training) and
``label.json`` (the fault, the accepted curves, the codes, the criteria and
their numbers, ``confirmed``). A run whose label file matches its
definition is not retrained.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.heldout import criteria, probe  # noqa: E402
from benchmarks.heldout.catalog import RUNS, fault_of, runs, varied  # noqa: E402
from benchmarks.heldout.train import Run, train  # noqa: E402

DATA = ROOT / "benchmarks" / "_data" / "heldout"
FRESH_DATA = ROOT / "benchmarks" / "_data" / "heldout-fresh"
# The fresh set's seed shift: every draw of the held-out set (seed * 7919 + salt, salts < 1e6)
# lands outside the original seeds' draws.
FRESH_SEED_OFFSET = 1000
# The varied set: other seeds again, and every run redrawn at another length and width.
VARIED_DATA = ROOT / "benchmarks" / "_data" / "heldout-varied"
VARIED_SEED_OFFSET = 2000
VARIED2_DATA = ROOT / "benchmarks" / "_data" / "heldout-varied2"
VARIED2_SEED_OFFSET = 3000
VERSION = 2  # bump when the generator changes what a definition produces


def fingerprint(kind: str, run: Run) -> str:
    """What decides the recorded run (the label is recomputed from the saved probe every time)."""
    blob = json.dumps({"v": VERSION, "kind": kind, "run": dataclasses.asdict(run)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# The rate each optimizer trains the healthy runs with: a too-high or too-low run's twin uses it.
ORDINARY_LR = {"adamw": 1e-3, "adam": 1e-3, "rmsprop": 1e-3, "sgd": 0.1, "nesterov": 0.02}
TWIN_FAULTS = ("lr_too_high", "lr_too_low")


def context(kind: str, run: Run, raised: dict | None, twin: dict | None = None) -> dict:
    k = {"tabular": 3, "deep": 3, "vit": 4, "gru_lm": 12, "rnn": 2, "infonce": run.batch}.get(run.setup.task)
    return {"chance_k": k, "change_step": int(run.change_at * run.steps), "crash_at": run.crash_at,
            "raised": raised, "twin": twin}


def train_twin(kind: str, run: Run) -> dict | None:
    """The same run at another learning rate: whether it does better decides "too high"/"too low"."""
    if kind not in TWIN_FAULTS:
        return None
    twin = dataclasses.replace(run, name=f"{run.name}-twin", lr=ORDINARY_LR[run.optimizer])
    with tempfile.TemporaryDirectory(prefix="heldout-twin-") as tmp:
        p, _ = train(twin, Path(tmp) / "run")
    return p.arrays()


def label(kind: str, run: Run, measured: dict, raised: dict | None, seconds: float,
          twin: dict | None = None) -> dict:
    fault = fault_of(kind)
    name = "crash" if kind.startswith("crash:") else kind
    ok, detail = criteria.CRITERIA[name](measured, context(kind, run, raised, twin))
    if raised and not kind.startswith("crash:"):
        ok, detail = False, {**detail, "unexpected_exception": raised}
    must, may = list(fault.must), list(fault.may)
    # Facts of the measured data that the fault does not fix, decided here, before scoring:
    # a non-finite training loss makes nonfinite_loss true of the run.
    if criteria.first_nonfinite(measured["loss"]) is not None:
        if kind == "diverged":
            must.append("nonfinite_loss")
            may.remove("nonfinite_loss")
        elif "nonfinite_loss" not in may:
            may.append("nonfinite_loss")
    # Gradient facts the probe measured, whatever the fault: a first matrix whose gradient is
    # <= 1e-3 of the last one's (the vanishing criterion's bound) makes vanishing_gradients true
    # of the run; one whose gradient is exactly zero on most steps makes dead_layers true.
    g1 = measured["grad_first"]
    if criteria.depth_ratio(g1, measured["grad_last"]) <= 1e-3 and "vanishing_gradients" not in must + may:
        may.append("vanishing_gradients")
    if g1.size and float(np.mean(g1 == 0)) > 0.5 and "dead_layers" not in must + may:
        may.append("dead_layers")
    return {"fault": kind, "curve_ok": list(fault.curve_ok), "status": "crashed" if kind.startswith("crash:")
            else "finished", "must_include": must, "may_include": may, "first": list(fault.first),
            "confirmed": ok, "criterion": name, "measured": detail, "seconds": round(seconds, 2),
            "steps": int(len(measured["loss"])), "task": run.setup.task, "optimizer": run.optimizer,
            "schedule": run.schedule}


def generate_one(kind: str, run: Run, root: Path = DATA) -> dict:
    out = root / run.name
    stamp = out / "label.json"
    fp = fingerprint(kind, run)
    if stamp.exists() and (out / "probe.npz").exists():
        cached = json.loads(stamp.read_text())
        if cached.get("fingerprint") == fp:
            twin = probe.load(out / "twin-probe.npz") if (out / "twin-probe.npz").exists() else None
            lab = {**label(kind, run, probe.load(out / "probe.npz"), cached.get("raised"), cached["seconds"], twin),
                   "fingerprint": fp, "raised": cached.get("raised")}
            stamp.write_text(json.dumps(lab, indent=1, default=_json) + "\n")
            return lab
    if out.exists():
        shutil.rmtree(out)
    t0 = time.monotonic()
    p, raised = train(run, out)
    twin = train_twin(kind, run)
    seconds = time.monotonic() - t0
    p.save(out / "probe.npz")
    if twin is not None:
        np.savez_compressed(out / "twin-probe.npz", **twin)
    lab = {**label(kind, run, probe.load(out / "probe.npz"), raised, seconds, twin), "fingerprint": fp,
           "raised": raised}
    stamp.write_text(json.dumps(lab, indent=1, default=_json) + "\n")
    return lab


def _json(x):
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return str(x)


def generate(only: set[str] | None = None, root: Path = DATA, seed_offset: int = 0,
             vary: bool = False) -> dict[str, dict]:
    root.mkdir(parents=True, exist_ok=True)
    catalog = varied(seed_offset) if vary else runs(seed_offset)
    names = {run.name for _, run in catalog}
    for stale in root.iterdir():
        # A run no longer in the catalog (renamed or redefined): drop it so it cannot be graded.
        if stale.is_dir() and stale.name not in names and (stale / "label.json").exists():
            shutil.rmtree(stale)
    labels = {}
    t0 = time.monotonic()
    for kind, run in catalog:
        if only and run.name not in only and kind not in only:
            continue
        labels[run.name] = lab = generate_one(kind, run, root)
        mark = "ok " if lab["confirmed"] else "OFF"
        print(f"[{time.monotonic() - t0:6.1f}s] {mark} {run.name:28s} {lab['seconds']:6.1f}s {lab['measured']}",
              flush=True)
    return labels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated run names or fault kinds")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="shift every seed by N (new draws of the same runs); default root then "
                         "benchmarks/_data/heldout-fresh/ when N is the fresh set's offset")
    ap.add_argument("--vary", action="store_true",
                    help="also redraw each run's length and width (the varied set, see catalog.varied)")
    ap.add_argument("--root", type=Path, help="output folder (default benchmarks/_data/heldout/)")
    args = ap.parse_args(argv)
    if args.list:
        for kind, run in RUNS:
            print(f"{kind:14s} {run.name:28s} {run.setup.task:8s} {run.optimizer:8s} {run.schedule:9s} "
                  f"steps={run.steps}")
        print(f"{len(RUNS)} runs")
        return 0
    default = (VARIED2_DATA if args.vary and args.seed_offset == VARIED2_SEED_OFFSET else VARIED_DATA if args.vary
               else FRESH_DATA if args.seed_offset == FRESH_SEED_OFFSET else DATA)
    root = args.root or default
    if (args.seed_offset or args.vary) and root == DATA:
        ap.error("--seed-offset/--vary need --root other than benchmarks/_data/heldout/ (it would overwrite the set)")
    generate(set(args.only.split(",")) if args.only else None, root, args.seed_offset, args.vary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
