"""Synthetic loss curves and runs for the curve and loss detector tests.

Each generator returns a float array of per-step losses; ``make_run`` wraps
scalars (and optional evals/layers) into a ``Run`` in memory through
``runlens.testing.build_run``; ``write_run_dir`` puts one on disk through the
tests' one writer (``tests/runs.py``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from runlens.io.run import Run
from runlens.testing import build_run, format_table, run_meta
from tests import runs


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


def saddle(n: int, seed: int) -> np.ndarray:
    """Falls, sticks on a saddle from 20% to 50% of the run, falls again."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    b = np.where(t < 0.2, 2.3 - 1.3 * t / 0.2, np.where(t < 0.5, 1.0, 0.2 + 0.8 * np.exp(-8 * (t - 0.5) / 0.5)))
    return b * np.exp(0.03 * rng.standard_normal(n))


def make_run(loss: np.ndarray | None, *, steps: np.ndarray | None = None, val_loss: np.ndarray | None = None,
             val_steps: np.ndarray | None = None, lr: np.ndarray | None = None,
             layers: pa.Table | None = None, meta: dict | None = None, scalars: dict | None = None,
             eval_sets: dict | None = None) -> Run:
    """``scalars``: extra scalars columns (``grad_norm``...); ``eval_sets``: extra evals
    columns at ``val_steps`` (``{"val_loss@ood": values}``); ``loss=None``: no loss column.
    Every column but the steps is float64, whatever the format says (an ``epoch`` may be fractional)."""
    extra = {**({} if lr is None else {"lr": lr}), **(scalars or {})}
    evals = {**({} if val_loss is None else {"val_loss": val_loss}), **(eval_sets or {})}
    return build_run(loss=None if loss is None else _float64(loss), steps=steps,
                     scalars={k: _float64(v) for k, v in extra.items()},
                     evals={k: _float64(v) for k, v in evals.items()}, val_steps=val_steps if evals else None,
                     tables={"layers": layers}, meta=meta or {"name": "synthetic"})


def _float64(values) -> pa.Array:
    return pa.array(np.asarray(values, dtype=np.float64))


def ln(k: int) -> float:
    return math.log(k)


def layers_table(n_steps: int, ratio: float, *, n_layers: int = 3, every: int = 10,
                 seed: int = 0) -> tuple[pa.Table, list[dict]]:
    """A layers table whose updates are ``ratio`` of the weights, and run.json ``layers``."""
    rng = np.random.default_rng(seed)
    steps = np.arange(0, n_steps, every, dtype=np.int64)
    names = [f"{i}.weight" for i in range(n_layers)]
    rows = steps.size * n_layers
    w = np.full(rows, 10.0)
    u = w * ratio * np.exp(0.1 * rng.standard_normal(rows))
    g = np.exp(0.1 * rng.standard_normal(rows))
    table = format_table("layers", {"step": np.repeat(steps, n_layers), "layer": names * steps.size,
                                    "grad_norm": g, "weight_norm": w, "update_norm": u})
    meta = [{"name": n, "index": i, "module": str(i), "kind": "Linear", "shape": [16, 16], "numel": 256}
            for i, n in enumerate(names)]
    return table, meta


# -- shapes of the reworked curve classifier (issue 11) ---------------------------------

def to_chance(n: int, seed: int, *, k: int = 2, start: float = 3.0, noise: float = 0.003) -> np.ndarray:
    """A bad initialization falls to ln K within 10% of the run and sits there: the prior (whose loss
    varies by batch only as far as its predictions stray from uniform: ``noise``, relative)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = math.log(k) + (start - math.log(k)) * np.exp(-t / 0.03)
    return base * np.exp(noise * rng.standard_normal(n))


def jump_no_recovery(n: int, seed: int, *, at: float = 0.6, to: float = 1.45, noise: float = 0.03) -> np.ndarray:
    """Falls from 2.3 to 0.5, then at ``at`` jumps to ``to`` and settles there (never recovers).

    1.45 lies between ln 4 and ln 5, so the level itself is not a chance level.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = 0.5 + 1.8 * np.exp(-8 * t)
    base = np.where(t >= at, to + (base - 0.5) * 0.1, base)
    return base * np.exp(noise * rng.standard_normal(n))


def blows_up(n: int, seed: int, *, orders: float = 30.0, at: float = 0.8) -> np.ndarray:
    """Healthy until ``at``, then grows by ``orders`` orders of magnitude, finite to the end."""
    x = healthy(n, seed)
    t = np.arange(n) / n
    grow = np.where(t > at, orders * (t - at) / (1 - at), 0.0)
    return x * 10.0 ** grow


def to_near_zero(n: int, seed: int, *, jitter: float = 0.5) -> np.ndarray:
    """Falls by > 99.9% to ~1e-4 with large *relative* jitter (``jitter`` log-sd) near zero."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = 2.3 * np.exp(-10 * t) + 1e-4
    return base * np.exp(jitter * rng.standard_normal(n) * (base < 0.01))


def noisy_overfit_val(n: int, seed: int, *, evals: int = 40, sd: float = 0.15,
                      rise: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    """Validation falls to a minimum at 30% of the run, then rises steadily, with big eval noise."""
    rng = np.random.default_rng(seed + 10_000)
    vs = np.linspace(n / evals, n - 1, evals).astype(np.int64)
    t = vs / n
    v = 0.5 + 0.8 * np.exp(-10 * t) + rise * np.maximum(t - 0.3, 0)
    return vs, v * np.exp(sd * rng.standard_normal(evals))


def write_run_dir(root, run: Run) -> Path:
    """Write ``run``'s tables as a format-v1 run directory (run.json plus one part per table)."""
    root = Path(root)
    end = "2026-01-01T01:00:00+00:00"
    meta = run_meta(root.name, ended_at=end, heartbeat_at=end, host="elsewhere", config=dict(run.meta.get("config", {})), environment={"python": "3.12"})
    return runs.write_run(root, run, meta=meta)


def analyze_lines(tmp_path: Path, lines: list[str]):
    """``runlens.analyze`` of a console log of ``lines`` written under ``tmp_path`` (a paste, as a user
    saves one)."""
    from runlens import analyze

    path = Path(tmp_path) / "log.txt"
    path.write_text("\n".join(lines) + "\n")
    return analyze(path)
