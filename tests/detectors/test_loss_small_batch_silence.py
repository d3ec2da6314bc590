"""False alarms: healthy runs with small batches stay silent (issue 20, item 6).

A batch of 4 draws its loss from a skewed per-sample distribution (most
samples easy, a few hard): the batch loss jumps by its own level from step
to step while the mean falls and settles. ``late_loss_variance``,
``loss_spikes`` and ``unstable`` judge the noise against the run's own
(scale-free), so they must say nothing.
"""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import make_run

from runlens.analysis import analyze

QUIET = {"late_loss_variance", "loss_spikes", "unstable", "underfitting", "gradients_accumulate"}


def small_batch(n: int, seed: int, *, batch: int, shape: float) -> np.ndarray:
    """Mean over ``batch`` per-sample losses, Gamma(``shape``) around a decaying mean (CV 1/sqrt(shape))."""
    rng = np.random.default_rng(seed)
    mean = 0.15 + 2.1 * np.exp(-5 * np.arange(n) / n)
    return (rng.gamma(shape, 1.0, size=(n, batch)) * (mean[:, None] / shape)).mean(axis=1)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", [0.1, 0.5])
def test_a_healthy_run_at_batch_size_4_has_no_loss_alarm(seed, shape):
    d = analyze(make_run(small_batch(3000, seed, batch=4, shape=shape)))
    assert d.curve.label == "healthy", d.curve.reason
    assert not {f.code for f in d.findings if f.severity != "info"} & QUIET


@pytest.mark.parametrize("seed", range(3))
def test_firing_twin_the_same_noise_without_any_fall_is_underfitting(seed):
    rng = np.random.default_rng(seed)
    x = (rng.gamma(0.5, 1.0, size=(3000, 4)) * (1.6 / 0.5)).mean(axis=1)
    d = analyze(make_run(x))
    assert d.curve.label == "underfitting" and "unstable" not in {f.code for f in d.findings}
