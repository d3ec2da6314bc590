"""Mann-Kendall / Theil-Sen on downsampled series."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens.stats.trend import MAX_THEIL_POINTS, trend


def test_noise_has_no_significant_trend_for_any_seed():
    for seed in range(100):
        t = trend(np.random.default_rng(seed).standard_normal(500))
        assert t.p > 1e-4, seed
        assert t.slope_low <= 0 <= t.slope_high or t.p < 0.05


def test_noise_p_values_are_roughly_uniform():
    ps = [trend(np.random.default_rng(s).standard_normal(300)).p for s in range(100)]
    assert 1 <= sum(p < 0.05 for p in ps) <= 12


@pytest.mark.parametrize("n", [50, 2000, 200_000])
def test_linear_trend_with_noise_is_found_with_its_slope(n):
    for seed in range(10):
        x = np.arange(n, dtype=float)
        y = 3.0 - 2e-3 * x * (1000 / n) + 0.1 * np.random.default_rng(seed).standard_normal(n)
        t = trend(y, x)
        assert t.tau < -0.3 and t.p < 1e-6 and t.p_decreasing < 1e-6 and t.p_increasing > 0.99
        assert t.slope == pytest.approx(-2e-3 * 1000 / n, rel=0.1)
        assert t.slope_low <= t.slope <= t.slope_high
        assert t.n == min(n, MAX_THEIL_POINTS)


def test_slope_is_in_units_of_x():
    y = np.linspace(0, 1, 400)
    assert trend(y, np.arange(400) * 10.0).slope == pytest.approx(1 / 3990, rel=1e-6)


def test_spikes_do_not_move_the_theil_sen_slope():
    y = np.linspace(1, 0, 1000)
    y[::50] += 100
    assert trend(y).slope == pytest.approx(-1 / 999, rel=0.05)


def test_step_change_is_a_monotone_trend():
    y = np.r_[np.ones(500), np.zeros(500)] + 0.01 * np.random.default_rng(0).standard_normal(1000)
    assert trend(y).p_decreasing < 1e-10


def test_degenerate_series():
    assert math.isnan(trend(np.array([1.0, 2.0])).p)
    assert math.isnan(trend(np.array([np.nan] * 10)).tau)
    flat = trend(np.ones(100))
    assert (flat.tau, flat.p, flat.slope) == (0.0, 1.0, 0.0)
    with_nan = trend(np.r_[np.arange(10.0), [np.nan, np.inf]])
    assert with_nan.n == 10 and with_nan.slope == pytest.approx(1.0)


def test_a_million_points_are_downsampled():
    y = np.linspace(5, 1, 1_000_000) + np.random.default_rng(0).standard_normal(1_000_000)
    t = trend(y)
    assert t.n == MAX_THEIL_POINTS and t.slope == pytest.approx(-4 / 999_999, rel=0.05)
    assert set(t.to_dict()) == {"tau", "p", "slope", "intercept", "slope_low", "slope_high", "n"}
