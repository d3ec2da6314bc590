"""Generate the third set: ``python -m benchmarks.third [--only NAME,...] [--list] [--seed-shift N] [--vary]``.

Each run trains into ``benchmarks/_data/third/<name>/`` with the project's
recorder; its fixed twin (buggy runs only) trains beside it without a
recorder. ``probe.npz`` and ``twin.npz`` hold what was measured in torch;
``label.json`` holds the bug, the criteria's numbers, the codes and
``confirmed``, recomputed from the probes on every call. A run whose
definition is unchanged is not retrained.

A new, never-seen set is drawn with ``--seed-shift N`` (every run's seed
shifted by N: new data, initialisation, batch order and label permutation)
and ``--vary`` (every run redrawn at another length, hidden width, learning
rate and batch size within its scenario's intent; ``catalog.redraw`` states
the ranges), e.g. ``--seed-shift 5000 --vary --out benchmarks/_data/third-fresh``.
The bug each run names is written into its loop as before, and its twin
confirmation (``truth.py``) decides its label as before. Without either flag
the set is exactly the catalog's. ``draw.json`` in the output folder records
the flags, every drawn scenario and when the last call that trained
anything started and ended.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.third import truth  # noqa: E402
from benchmarks.third.catalog import draw  # noqa: E402
from benchmarks.third.train import train  # noqa: E402

DATA = ROOT / "benchmarks" / "_data" / "third"
VERSION = 3  # 3: recorded with the recorder that writes its loop columns (model_training, ...)


def fingerprint(sc) -> str:
    run = dataclasses.asdict(sc)
    if run["width"] is None:  # a field added after the set was generated: absent at its default, so
        del run["width"]       # the catalog's runs keep their fingerprints and are not retrained
    blob = json.dumps({"v": VERSION, "run": run}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _stale(sc, root: Path) -> bool:
    stamp = root / sc.name / "label.json"
    cached = json.loads(stamp.read_text()) if stamp.exists() else {}
    return cached.get("fingerprint") != fingerprint(sc) or not (root / sc.name / "probe.npz").exists()


def generate_one(sc, root: Path = DATA) -> dict:
    """Train ``sc`` (and its twin) unless cached; the label is recomputed from the saved probes."""
    out = root / sc.name
    stamp = out / "label.json"
    cached = json.loads(stamp.read_text()) if stamp.exists() else {}
    if _stale(sc, root):
        if out.exists():
            shutil.rmtree(out)
        t0 = time.monotonic()
        measured = train(sc, out)
        np.savez_compressed(out / "probe.npz", **measured)
        if sc.bug:
            np.savez_compressed(out / "twin.npz", **train(sc.twin()))
        cached = {"seconds": round(time.monotonic() - t0, 1)}
    m = dict(np.load(out / "probe.npz"))
    t = dict(np.load(out / "twin.npz")) if sc.bug else None
    lab = truth.label(sc.bug, m, t)
    lab.update({"fingerprint": fingerprint(sc), "task": sc.task, "steps": sc.steps,
                "seconds": cached.get("seconds")})
    stamp.write_text(json.dumps(lab, indent=1, default=float) + "\n")
    return lab


def _utc() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def generate(root: Path = DATA, only: set[str] | None = None, seed_shift: int = 0,
             vary: bool = False) -> dict[str, dict]:
    """Train what is missing or changed and label every run; ``draw.json`` says when training last happened.

    A call that trains nothing (every run cached) leaves ``draw.json`` as it was, so its times stay
    those of the training a set's description quotes.
    """
    torch.set_num_threads(1)
    root.mkdir(parents=True, exist_ok=True)
    drawn = draw(seed_shift, vary)
    runs = [sc for sc in drawn if not only or sc.name in only]
    trained = [sc.name for sc in runs if _stale(sc, root)]
    record = {"seed_shift": seed_shift, "vary": vary, "only": sorted(only) if only else None, "trained": trained,
              "started": _utc(), "finished": None, "runs": [dataclasses.asdict(sc) for sc in drawn]}
    if trained:
        (root / "draw.json").write_text(json.dumps(record, indent=1) + "\n")
    labels = {}
    for sc in runs:
        labels[sc.name] = lab = generate_one(sc, root)
        print(f"{sc.name:22s} {'confirmed' if lab['confirmed'] else 'UNCONFIRMED':12s} {lab['seconds']:7.1f} s "
              f"{json.dumps(lab['measured'], default=float)}", flush=True)
    if trained:
        record["finished"] = _utc()
        (root / "draw.json").write_text(json.dumps(record, indent=1) + "\n")
    return labels


def drawn_at(root: Path) -> tuple[str | None, str | None]:
    """When the set in ``root`` was last trained (start, end), from its ``draw.json``; ``None`` if unknown."""
    try:
        record = json.loads((root / "draw.json").read_text())
    except (OSError, ValueError):
        return None, None
    return record.get("started"), record.get("finished")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated run names")
    p.add_argument("--list", action="store_true", help="list the runs and exit")
    p.add_argument("--out", type=Path, default=DATA)
    p.add_argument("--seed-shift", type=int, default=0, metavar="N",
                   help="shift every run's seed by N: new data, initialisations and batches (default 0)")
    p.add_argument("--vary", action="store_true",
                   help="redraw every run at another length, width, learning rate and batch size")
    a = p.parse_args(argv)
    runs = draw(a.seed_shift, a.vary)
    only = set(filter(None, a.only.split(","))) if a.only else None
    if only and only - {sc.name for sc in runs}:
        p.error(f"unknown runs: {', '.join(sorted(only - {sc.name for sc in runs}))}")
    if a.list:
        for sc in runs:
            print(sc.name, sc.bug or "healthy", sc.task, sc.steps, sc.width or "-", sc.lr, sc.batch, sc.seed)
        return 0
    generate(a.out, only, a.seed_shift, a.vary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
