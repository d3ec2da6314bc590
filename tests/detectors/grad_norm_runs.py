"""Gradient norms shared by the gradient detectors' tests: runs with a given global gradient norm on a
healthy net (grad_norm_spike, exploding_gradients, nonfinite_gradient), and per-layer gradient norms
for the logs that carry only the required columns (``grads``)."""

from __future__ import annotations

import numpy as np
from gradients_synth import falling_loss, healthy_net, make_run


def noisy(level, n, seed, sd=0.15):
    return 10 ** (level + sd * np.random.default_rng(seed).standard_normal(n))


def with_grad_norm(gn, *, seed=0, m=4):
    g, w, u = healthy_net(seed, n=len(gn), m=m)
    return make_run(g, w, u, loss=falling_loss(seed, len(gn)), scalars={"grad_norm": gn})


def grads(seed: int, n: int = 120, m: int = 5, level: float = -0.5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 10 ** (level + rng.normal(0, 0.2, m) + 0.1 * rng.standard_normal((n, m)))
