"""The spike readings: each finds a planted spike and leaves a spike-free series alone."""

from __future__ import annotations

import numpy as np
import pytest

from runlens.stats.spikes import (
    ROLLING_DEFAULTS,
    difference_spikes,
    log10_spikes,
    rolling_spikes,
    short_spikes,
    tail_bound,
)


def _noisy_fall(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 2.0 * np.exp(-np.arange(n) / (n / 3)) + 0.3 + 0.01 * rng.standard_normal(n)


@pytest.mark.parametrize(("find", "n", "kw"), [
    (rolling_spikes, 600, {}), (difference_spikes, 600, {}), (short_spikes, 12, {"min_ratio": 3.0}),
    (log10_spikes, 200, {"min_ratio": 100.0, "max_width": 3}),
])
def test_each_reading_finds_one_planted_spike(find, n, kw):
    x = _noisy_fall(n)
    at = n // 2
    quiet = find(x, **kw)
    x[at] *= 1000.0 if find is log10_spikes else 5.0
    found = find(x, **kw)
    assert quiet == []
    assert [s["index"] for s in found] == [at]
    assert found[0]["value"] == pytest.approx(x[at])
    assert found[0]["level"] < x[at] and found[0]["z"] > 6


def test_a_spike_that_stays_is_no_spike():
    x = _noisy_fall(600)
    x[300:] += 5.0  # a level shift: nothing comes back
    assert rolling_spikes(x) == []
    assert log10_spikes(np.abs(x), min_ratio=2.0) == []


def test_a_reading_takes_only_its_own_parameters():
    # One function per reading: a parameter of another (a window for the rolling loss) is refused,
    # where one function with four modes accepted and ignored it.
    with pytest.raises(TypeError):
        rolling_spikes(np.ones(10), window=25)
    with pytest.raises(TypeError):
        short_spikes(np.ones(10), recovery=20)
    assert set(ROLLING_DEFAULTS) == {"z_min", "tail_factor", "alpha", "min_rise", "min_progress", "max_width", "recovery"}


def test_the_tail_bound_is_about_6_for_gaussian_noise_and_grows_with_the_tail():
    rng = np.random.default_rng(0)
    gauss = [tail_bound(rng.standard_normal(1000), 0.05) for _ in range(50)]
    assert 4.5 < float(np.median(gauss)) < 7.5
    # An exponential tail of scale 2: its largest of 1,000 is about 2 ln(1000) ~ 14.
    expo = [tail_bound(rng.exponential(2.0, 1000), 0.05) for _ in range(50)]
    assert float(np.median(expo)) > 1.5 * float(np.median(gauss))
    # Its level: the largest exceeds it in about alpha of the series, not most of them.
    over = np.mean([rng.exponential(2.0, 1000).max() > tail_bound(rng.exponential(2.0, 1000), 0.05)
                    for _ in range(400)])
    assert over < 0.15


def test_a_few_real_spikes_do_not_raise_the_bar_that_finds_them():
    rng = np.random.default_rng(1)
    z = rng.standard_normal(1000)
    clean = tail_bound(z, 0.01)
    z[[100, 300, 500, 700, 900]] = 40.0
    assert tail_bound(z, 0.01) < 1.5 * clean < 40.0


def test_a_loss_near_zero_with_routine_single_batch_jumps_is_no_spike():
    # A regression fitted almost exactly: on the log scale its batch-to-batch noise is
    # exponential-tailed, and jumps of 20x a level of 0.01 come every few hundred steps. The
    # largest z of a long run is routine there; a corrupted batch would stand beyond it.
    rng = np.random.default_rng(2)
    n = 4000
    level = 0.01 + 0.5 * np.exp(-np.arange(n) / 300)
    x = level * np.exp(rng.laplace(0.0, 0.35, n))
    assert rolling_spikes(x, tail_factor=0.0) == []  # the length-aware bound alone keeps it silent
    x[3000] = level[3000] * 400  # a real one, far beyond the tail
    assert [s["index"] for s in rolling_spikes(x)] == [3000]
