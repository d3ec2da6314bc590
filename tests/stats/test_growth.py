"""runlens.stats.growth: bucketed Theil-Sen growth, levels, runs, rolling medians."""

from __future__ import annotations

import numpy as np
import pytest

from runlens.stats.growth import bucket_medians, growth, level_change, longest_true_run, rolling_median


def test_bucket_medians_caps_points_and_drops_nonfinite():
    x = np.arange(10_000, dtype=float)
    y = x.copy()
    y[5] = np.nan
    bx, by = bucket_medians(x, y, 100)
    assert len(bx) == len(by) == 100
    assert np.all(np.diff(bx) > 0)
    sx, sy = bucket_medians(x[:50], y[:50], 100)
    assert len(sx) == 49


@pytest.mark.parametrize("seed", range(20))
def test_growth_recovers_decades_per_step(seed):
    n = 5000
    x = np.arange(n, dtype=float)
    y = 3 * x / n + 0.2 * np.random.default_rng(seed).standard_normal(n)
    g = growth(x, y)
    assert g.n <= 500
    assert g.slope * n == pytest.approx(3, rel=0.05)
    assert g.slope_low > 0 and g.p < 1e-10 and g.tau > 0.5
    assert g.decades == pytest.approx(2.7, abs=0.15)


def test_noise_is_not_growth_for_any_seed():
    x = np.arange(300, dtype=float)
    ps = [growth(x, np.random.default_rng(s).standard_normal(300)).p for s in range(100)]
    assert sum(p < 0.01 for p in ps) <= 4  # a 1% test: about one false alarm in 100


@pytest.mark.parametrize("y", [[1.0, 2.0], [1.0, 1.0, 1.0, 1.0], [np.nan] * 5])
def test_growth_undefined_gives_none(y):
    assert growth(np.arange(len(y), dtype=float), np.array(y)) is None


def test_level_change():
    assert level_change(np.r_[np.zeros(10), np.ones(80), np.full(10, 3.0)], 0.1) == 3.0
    assert np.isnan(level_change(np.array([1.0])))


def test_rolling_median_ignores_a_spike_and_nans():
    y = np.ones(9)
    y[4] = 100
    assert rolling_median(y, 3).tolist() == [1.0] * 9
    z = np.array([np.nan, np.nan, np.nan, 2.0])
    out = rolling_median(z, 3)
    assert np.isnan(out[1]) and out[3] == 2.0


def test_longest_true_run():
    assert longest_true_run(np.array([0, 1, 1, 0, 1, 1, 1, 0], bool)) == (4, 3)
    assert longest_true_run(np.zeros(4, bool)) == (0, 0)
    assert longest_true_run(np.ones(4, bool)) == (0, 4)
