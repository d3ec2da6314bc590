"""Overfitting needs an effect size against the run's own progress: a validation loss that fell
tenfold and then gives back a few percent of that fall still generalizes about as well as it did
(third set: two healthy runs, a long regression and a dropout classifier, were called overfitting
for a significant rise of 3.6% and 8.8% of their fall)."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, make_run

from runlens import analyze

N = 3000


def _val(seed: int, give_back: float, evals: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Falls from 2.0 to 0.2 by 40% of the run, then rises linearly by ``give_back`` of that fall."""
    rng = np.random.default_rng(seed + 7)
    vs = np.linspace(N // evals, N - 1, evals).astype(np.int64)
    t = vs / N
    fall = 0.2 + 1.8 * np.exp(-12 * t)
    rise = give_back * 1.8 * np.clip((t - 0.4) / 0.6, 0, None)
    return vs, (fall + rise) * (1 + 0.003 * rng.standard_normal(evals))


def _analyze(seed: int, give_back: float):
    vs, vl = _val(seed, give_back)
    return analyze(make_run(healthy(N, seed, floor=0.05), val_loss=vl, val_steps=vs))


@pytest.mark.parametrize("seed", range(5))
def test_a_rise_of_a_third_of_the_fall_is_overfitting(seed):
    d = _analyze(seed, 0.3)
    assert d.curve.label == "overfitting", d.curve
    assert "overfitting" in [f.code for f in d.findings]


@pytest.mark.parametrize("seed", range(5))
def test_a_significant_rise_of_a_twentieth_of_a_tenfold_fall_is_not(seed):
    d = _analyze(seed, 0.05)  # 0.09 over a minimum of 0.2: 45% of the minimum, 5% of the fall
    assert d.curve.label == "healthy", d.curve
    assert "overfitting" not in [f.code for f in d.findings], d.findings
