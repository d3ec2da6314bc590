"""Write small format-v1 run directories with pyarrow, for the audit tests.

Curves are synthetic but shaped like training: an exponential decay to a
floor plus batch noise, three layers with gradient and weight norms, an eval
every 50 steps. ``kind`` bends them into the failure being tested. Runs are
built by ``runlens.testing.build_run`` and written by the tests' one writer
(``tests/runs.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from runlens.testing import build_run, run_meta
from tests import runs

LAYERS = ("embed.weight", "hidden.weight", "head.weight")
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def write_run(path: str | os.PathLike[str], *, kind: str = "healthy", steps: int = 600,
              seed: int = 0, name: str | None = None, status: str | None = None,
              error: dict | None = None, layers: bool = True, evals: bool = True,
              floor: float = 0.3, tau: float | None = None, noise: float = 0.02,
              grad_scale: float = 1.0) -> Path:
    """Write a run; returns its directory. ``kind``: healthy, diverged, crashed, spiky, slow."""
    root = Path(path)
    rng = np.random.default_rng(seed)
    t = np.arange(steps)
    tau = tau or steps / 6
    if kind == "slow":
        tau *= 3
    loss = floor + 2.0 * np.exp(-t / tau) + noise * rng.standard_normal(steps) * (0.3 + np.exp(-t / tau))
    if kind == "regressed":
        loss = loss + 0.4 * floor + 0.0
    if kind == "diverged":
        start = steps // 2
        loss[start:] = loss[start] * np.exp(np.arange(steps - start) * 0.2)
        loss[start + 40:] = np.nan
    if kind == "spiky":
        for s in range(steps // 10, steps, steps // 8):
            loss[s] += 1.5
    if kind == "crashed":
        status = status or "crashed"
        error = error or {"type": "torch.OutOfMemoryError", "step": steps,
                          "message": "CUDA out of memory. Tried to allocate 2.00 GiB", "traceback": ""}
    grad = grad_scale * (0.5 + 0.2 * rng.random(steps))
    meta = run_meta(name or root.name, status=status or "finished", run_id=f"{seed:032x}",
                    ended_at=f"2026-01-01T00:{steps // 60 % 60:02d}:00+00:00",
                    heartbeat_at="2026-01-01T00:10:00+00:00", flush_every=1000, flush_seconds=30,
                    host="test-host", config={"lr": 0.01}, seed=seed, environment={"python": "3.11"},
                    error=error)
    meta["layers"] = [{"name": n, "index": i, "module": n.split(".")[0], "kind": "Linear", "shape": [8, 8],
                       "numel": 64} for i, n in enumerate(LAYERS)]
    es, ls = t[49::50], t[::10]
    val = loss[es] + 0.05 + 0.01 * rng.standard_normal(len(es)) if evals else None
    per_layer = {"grad_norm": grad[ls][:, None] * np.array([0.5, 1.0, 2.0]),
                 "weight_norm": np.repeat((5.0 + 0.001 * ls)[:, None], len(LAYERS), axis=1)}
    grad_norm = np.where(np.isfinite(loss), grad, np.nan)
    run = build_run(loss=loss, steps=t, lr=np.full(steps, 0.01), grad_norm=grad_norm, val_loss=val,
                    val_steps=es if evals else None, layers=per_layer if layers else None, layer_names=LAYERS,
                    layer_steps=ls, t0=T0, step_time=0.5, meta=meta)
    return runs.write_run(root, run)


def build_tree(base: str | os.PathLike[str]) -> Path:
    """The tree of the audit tests: sick and healthy runs, junk, a symlink loop."""
    base = Path(base)
    write_run(base / "sweep" / "lr-0.01", seed=1)
    write_run(base / "sweep" / "lr-10", kind="diverged", seed=2)
    write_run(base / "crashed run", kind="crashed", seed=3, steps=300)
    write_run(base / "ünïcode näme", seed=4)
    unreadable = write_run(base / "part-broken", seed=5)
    (unreadable / "scalars" / "r0-00000001.parquet").write_bytes(b"not parquet at all")
    broken = base / "broken-json"
    broken.mkdir()
    (broken / "run.json").write_text("{ this is not json", encoding="utf-8")
    (base / "empty").mkdir()
    (base / ".hidden").mkdir()
    write_run(base / ".hidden" / "ignored", seed=6)
    (base / "sweep" / "loop").symlink_to(base, target_is_directory=True)
    return base
