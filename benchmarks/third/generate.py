"""Generate the third set: ``python -m benchmarks.third [--only NAME,...] [--list]``.

Each run trains into ``benchmarks/_data/third/<name>/`` with the project's
recorder; its fixed twin (buggy runs only) trains beside it without a
recorder. ``probe.npz`` and ``twin.npz`` hold what was measured in torch;
``label.json`` holds the bug, the criteria's numbers, the codes and
``confirmed``, recomputed from the probes on every call. A run whose
definition is unchanged is not retrained.
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
from benchmarks.third.catalog import RUNS  # noqa: E402
from benchmarks.third.train import train  # noqa: E402

DATA = ROOT / "benchmarks" / "_data" / "third"
VERSION = 3  # 3: recorded with the recorder that writes its loop columns (model_training, ...)


def fingerprint(sc) -> str:
    blob = json.dumps({"v": VERSION, "run": dataclasses.asdict(sc)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def generate_one(sc, root: Path = DATA) -> dict:
    """Train ``sc`` (and its twin) unless cached; the label is recomputed from the saved probes."""
    out = root / sc.name
    stamp = out / "label.json"
    cached = json.loads(stamp.read_text()) if stamp.exists() else {}
    if cached.get("fingerprint") != fingerprint(sc) or not (out / "probe.npz").exists():
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


def generate(root: Path = DATA, only: set[str] | None = None) -> dict[str, dict]:
    torch.set_num_threads(1)
    root.mkdir(parents=True, exist_ok=True)
    labels = {}
    for sc in RUNS:
        if only and sc.name not in only:
            continue
        labels[sc.name] = lab = generate_one(sc, root)
        print(f"{sc.name:22s} {'confirmed' if lab['confirmed'] else 'UNCONFIRMED':12s} {lab['seconds']:7.1f} s "
              f"{json.dumps(lab['measured'], default=float)}", flush=True)
    return labels


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated run names")
    p.add_argument("--list", action="store_true", help="list the runs and exit")
    p.add_argument("--out", type=Path, default=DATA)
    a = p.parse_args(argv)
    if a.list:
        for sc in RUNS:
            print(sc.name, sc.bug or "healthy", sc.task, sc.steps)
        return 0
    generate(a.out, set(a.only.split(",")) if a.only else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
