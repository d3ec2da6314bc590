"""Runs with a given global gradient norm on a healthy net, shared by the tests of grad_norm_spike,
exploding_gradients and nonfinite_gradient."""

from __future__ import annotations

import numpy as np
from gradients_synth import falling_loss, healthy_net, make_run


def noisy(level, n, seed, sd=0.15):
    return 10 ** (level + sd * np.random.default_rng(seed).standard_normal(n))


def with_grad_norm(gn, *, seed=0, m=4):
    g, w, u = healthy_net(seed, n=len(gn), m=m)
    return make_run(g, w, u, loss=falling_loss(seed, len(gn)), scalars={"grad_norm": gn})
