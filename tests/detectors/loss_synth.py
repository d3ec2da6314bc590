"""Synthetic loss curves and runs for the curve and loss detector tests.

Each generator returns a float array of per-step losses; ``make_run`` wraps
scalars (and optional evals/layers) into a ``Run`` without touching disk.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

from runlens.io.run import Run


def healthy(n: int, seed: int, *, scale: float = 1.0, noise: float = 0.08, floor: float = 0.1,
            rate: float = 6.0, schedule: str = "none", warmup: bool = False) -> np.ndarray:
    """Exponential decay to ``floor`` with multiplicative minibatch noise.

    ``schedule``: "none", "step" (drops at 50% and 75%: the floor falls) or
    "cosine". ``warmup`` adds a bump in the first 3% of steps.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    fl = np.full(n, floor)
    if schedule == "step":
        fl = np.where(t >= 0.5, floor * 0.5, fl)
        fl = np.where(t >= 0.75, floor * 0.3, fl)
    elif schedule == "cosine":
        fl = floor * (0.4 + 0.6 * 0.5 * (1 + np.cos(np.pi * t)))
    base = fl + (1.0 - floor) * np.exp(-rate * t)
    if warmup:
        base = base * (1 + 0.3 * np.exp(-((t - 0.01) / 0.01) ** 2))
    x = base * np.exp(noise * rng.standard_normal(n))
    return scale * x


def noise(n: int, seed: int, *, level: float = 1.0, sd: float = 0.02) -> np.ndarray:
    return level + sd * level * np.random.default_rng(seed).standard_normal(n)


def random_walk(n: int, seed: int, *, level: float = 1.0, sd: float = 0.01) -> np.ndarray:
    return level * np.exp(np.cumsum(sd * np.random.default_rng(seed).standard_normal(n)))


def oscillating(n: int, seed: int, *, level: float = 2.0) -> np.ndarray:
    """High learning rate: the loss bounces around without making progress."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    slow = 0.6 * np.sin(2 * np.pi * t / max(10, n / 12)) + 0.4 * np.sin(2 * np.pi * t / max(7, n / 31))
    x = level * np.exp(slow + 0.25 * rng.standard_normal(n))
    return x


def chaotic(n: int, seed: int, *, level: float = 2.3) -> np.ndarray:
    """Independent big jumps: each step's loss is far off the last."""
    rng = np.random.default_rng(seed)
    return level * rng.lognormal(0.0, 0.6, n) * (1 - 0.2 * np.arange(n) / n)


def diverging(n: int, seed: int, *, start: float = 2.3, to: float = 1e3) -> np.ndarray:
    """Falls a little, then grows exponentially to ``to`` without a NaN."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = start * np.exp(-2 * t) + np.where(t > 0.3, np.exp(np.log(to) * (t - 0.3) / 0.7) - 1, 0)
    return base * np.exp(0.05 * rng.standard_normal(n))


def make_run(loss: np.ndarray, *, steps: np.ndarray | None = None, val_loss: np.ndarray | None = None,
             val_steps: np.ndarray | None = None, lr: np.ndarray | None = None,
             layers: pa.Table | None = None, meta: dict | None = None) -> Run:
    loss = np.asarray(loss, dtype=np.float64)
    steps = np.arange(loss.size, dtype=np.int64) if steps is None else np.asarray(steps, np.int64)
    cols = {"step": pa.array(steps), "time": pa.array(steps.astype(float)), "loss": pa.array(loss)}
    if lr is not None:
        cols["lr"] = pa.array(np.asarray(lr, dtype=np.float64))
    evals = None
    if val_loss is not None:
        vs = np.asarray(val_steps, dtype=np.int64)
        evals = pa.table({"step": pa.array(vs), "time": pa.array(vs.astype(float)),
                          "val_loss": pa.array(np.asarray(val_loss, dtype=np.float64))})
    return Run(path="synthetic", meta=meta or {"name": "synthetic"}, status="finished",
               scalars=pa.table(cols), evals=evals, layers=layers)


def ln(k: int) -> float:
    return math.log(k)


def layers_table(n_steps: int, ratio: float, *, n_layers: int = 3, every: int = 10,
                 seed: int = 0) -> tuple[pa.Table, list[dict]]:
    """A layers table whose updates are ``ratio`` of the weights, and run.json ``layers``."""
    rng = np.random.default_rng(seed)
    steps = np.arange(0, n_steps, every, dtype=np.int64)
    names = [f"{i}.weight" for i in range(n_layers)]
    rows_step = np.repeat(steps, n_layers)
    rows_layer = np.tile(names, steps.size)
    w = np.full(rows_step.size, 10.0)
    u = w * ratio * np.exp(0.1 * rng.standard_normal(rows_step.size))
    g = np.exp(0.1 * rng.standard_normal(rows_step.size))
    table = pa.table({
        "step": pa.array(rows_step),
        "layer": pa.array(rows_layer).dictionary_encode(),
        "grad_norm": pa.array(g, pa.float32()),
        "weight_norm": pa.array(w, pa.float32()),
        "update_norm": pa.array(u, pa.float32()),
    })
    meta = [{"name": n, "index": i, "module": str(i), "kind": "Linear", "shape": [16, 16], "numel": 256}
            for i, n in enumerate(names)]
    return table, meta
