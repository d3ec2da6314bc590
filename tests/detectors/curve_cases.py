"""Curve runs and label checks shared by the tests of the curve labels (tests/detectors/curve/) and
of loss_at_chance."""

from __future__ import annotations

import numpy as np
from loss_synth import (
    healthy,
    make_run,
    noisy_overfit_val,
)

from runlens.detectors.curve import classify


def label(x, **kw) -> str:
    return classify(make_run(x, **kw)).label


def overfit_run(seed: int, n: int = 2000, every: int = 50, rise: float = 0.5):
    rng = np.random.default_rng(seed)
    x = healthy(n, seed, floor=0.01)
    vs = np.arange(every, n + 1, every) - 1
    t = vs / n
    v = 0.4 + 0.6 * np.exp(-10 * t) + rise * np.maximum(t - 0.3, 0) ** 1.2
    v = v * np.exp(0.01 * rng.standard_normal(vs.size))
    return make_run(x, val_loss=v, val_steps=vs)


def overfit(seed: int = 0):
    vs, v = noisy_overfit_val(2000, seed)
    return make_run(healthy(2000, seed, floor=0.05), val_loss=v, val_steps=vs)


SEEDS = 40


def labels(make, seeds=SEEDS) -> list[str]:
    return [classify(make(seed)).label for seed in range(seeds)]


SHORT_SEEDS = 50


def short(n: int, seed: int) -> np.ndarray:
    """The first ``n`` losses of a healthy run: falling, with minibatch noise."""
    return healthy(10 * n, seed, noise=0.05)[::10]
