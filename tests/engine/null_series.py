"""Null runs for the false-alarm contract: a healthy falling loss, and gradient / weight /
update norms that follow pure noise, a mild trend, a small step or a random walk.

None of these has any problem a detector names: every firing is a false alarm. The
amplitudes stay well inside every detector's effect size (half a decade of gradient
drift at most), so the rate measured is the rate of the tests' own noise.
"""

from __future__ import annotations

import numpy as np

from runlens.io.run import Run
from runlens.testing import build_run

FAMILIES = ("noise", "trend", "step", "random_walk")
N, MODULES = 240, 4


def drift(family: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """log10 offsets of the gradient norm over the run."""
    t = np.linspace(0, 1, n)
    if family == "noise":
        return np.zeros(n)
    if family == "trend":
        return -0.5 * t
    if family == "step":
        return np.where(t < 0.5, 0.0, -0.4)
    return np.cumsum(rng.normal(0, 0.02, n))


def null_run(family: str, seed: int) -> Run:
    rng = np.random.default_rng(seed)
    n, m = N, MODULES
    steps = np.arange(n, dtype=np.int64)
    t = np.linspace(0, 1, n)
    loss = (0.4 + 2.0 * np.exp(-5 * t)) * np.exp(0.03 * rng.standard_normal(n))
    off = drift(family, rng, n)
    gn = 10 ** (off + 0.15 * rng.standard_normal(n))
    level = rng.normal(0, 0.2, m)
    logg = level[None, :] + off[:, None] + 0.15 * rng.standard_normal((n, m))
    w = 10 ** (rng.uniform(0.5, 1.5, m)[None, :] + 0.02 * t[:, None]) * np.ones((n, m))
    u = w * 10 ** (-3 + 0.2 * rng.standard_normal((n, m)))
    names = [f"l{j}.weight" for j in range(m)]
    layers = {"grad_norm": 10 ** logg, "weight_norm": w, "update_norm": u, "nonfinite": np.zeros((n, m))}
    es = steps[19::20]
    meta = {"name": f"{family}-{seed}", "config": {"lr": 1e-3, "optimizer": "adam"},
            "layers": [{"name": nm, "index": j, "module": nm.rsplit(".", 1)[0], "shape": [64, 64],
                        "numel": 4096} for j, nm in enumerate(names)]}
    return build_run(loss=loss, lr=np.full(n, 1e-3), grad_norm=gn, steps=steps, val_loss=loss[es] * 1.05,
                     val_steps=es, layers=layers, layer_names=names, meta=meta, name=f"{family}-{seed}")
