"""runlens.stats.depth: depth trends, module norms and per-row slopes."""

from __future__ import annotations

import numpy as np
import pytest

from runlens.stats.depth import depth_trend, edge_gap, group_norms


@pytest.mark.parametrize("seed", range(20))
def test_recovers_a_linear_profile(seed):
    rng = np.random.default_rng(seed)
    y = 0.4 * np.arange(12) + 0.1 * rng.standard_normal(12)
    t = depth_trend(y)
    assert t.slope == pytest.approx(0.4, abs=0.06)
    assert t.slope_low > 0 and t.rho > 0.95 and t.tau_p < 1e-4
    assert t.fitted == pytest.approx(4.4, abs=0.7)
    assert t.gap == pytest.approx(np.mean(y[-3:]) - np.mean(y[:3]))


def test_noise_has_no_large_trend_for_any_seed():
    for seed in range(100):
        t = depth_trend(np.random.default_rng(seed).normal(0, 0.3, 10))
        assert abs(t.fitted) < 2.0 and abs(t.gap) < 2.0


def test_one_outlier_barely_moves_theil_sen():
    y = 0.2 * np.arange(10)
    y[0] = -10
    assert depth_trend(y).slope == pytest.approx(0.2, abs=0.01)


@pytest.mark.parametrize("y", [[1.0, 2.0], [np.nan, 1.0, np.nan, 2.0], [3.0, 3.0, 3.0, 3.0], []])
def test_too_little_or_constant_gives_none(y):
    assert depth_trend(np.array(y, dtype=float)) is None


def test_nonfinite_layers_keep_their_positions():
    y = np.array([0.0, np.nan, 2.0, 3.0, np.inf])
    t = depth_trend(y)
    assert t.n == 3 and t.slope == pytest.approx(1.0)


def test_edge_gap_uses_at_least_one_layer_per_end():
    assert edge_gap(np.array([0.0, 5.0, 1.0])) == 1.0
    assert np.isnan(edge_gap(np.array([1.0])))


def test_group_norms_root_sum_of_squares():
    vals = np.array([[3.0, 4.0, 1.0], [np.nan, 4.0, np.nan]])
    out, order = group_norms(vals, ["a", "a", "b"])
    assert order == ["a", "b"]
    assert out[0].tolist() == [5.0, 1.0]
    assert out[1, 0] == 4.0 and np.isnan(out[1, 1])
