"""Robust location, scale, rolling medians and z-scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens.stats.robust import (
    bucket_edges,
    bucket_medians,
    finite,
    mad_sd,
    robust_z,
    rolling_median,
    runs_of,
)


def test_mad_sd_estimates_the_sd_of_gaussian_noise():
    x = np.random.default_rng(0).normal(0, 3, 100_000)
    assert mad_sd(x) == pytest.approx(3, rel=0.02)
    assert math.isnan(mad_sd(np.array([np.nan])))
    assert mad_sd(np.r_[np.zeros(99), 1e9]) == 0.0


def test_finite_drops_nan_and_inf():
    assert finite(np.array([1, np.nan, np.inf, -np.inf, 2])).tolist() == [1.0, 2.0]


def test_bucket_medians_cover_the_series():
    x = np.arange(10_001, dtype=float)
    pos, med = bucket_medians(x, 100)
    assert len(pos) == len(med) <= 101
    assert np.allclose(pos, med)  # the median of a linear series is its centre
    assert pos[0] >= 0 and pos[-1] <= 10_000


def test_bucket_medians_ignore_spikes_and_keep_short_series():
    x = np.ones(1000)
    x[::10] = 1e6
    assert np.all(bucket_medians(x, 50)[1] == 1)
    pos, med = bucket_medians(np.array([3.0, 1.0]), 10)
    assert pos.tolist() == [0, 1] and med.tolist() == [3, 1]


def test_bucket_edges():
    e = bucket_edges(10, 3)
    assert e[0] == 0 and e[-1] == 10 and len(e) == 4
    assert bucket_edges(2, 10).tolist() == [0, 1, 2]


def test_rolling_median_matches_a_naive_one_inside_the_series():
    x = np.random.default_rng(1).standard_normal(200)
    got = rolling_median(x, 11)
    naive = np.array([np.median(x[i - 5:i + 6]) for i in range(5, 195)])
    assert np.allclose(got[5:195], naive)


def test_rolling_median_edges():
    assert rolling_median(np.array([]), 5).size == 0
    assert rolling_median(np.array([4.0]), 5).tolist() == [4.0]
    mono = np.arange(20.0) ** 2
    assert np.array_equal(rolling_median(mono, 5, mode="nearest"), mono)


def test_robust_z_flags_a_spike_and_nothing_else():
    for seed in range(100):
        x = np.random.default_rng(seed).standard_normal(2000)
        x[1000] += 20
        z, base, scale = robust_z(x, 51)
        assert z[1000] > 10
        assert np.max(np.abs(np.delete(z, 1000))) < 6.5, seed
        assert np.allclose(np.median(scale), 1, atol=0.15)


def test_robust_z_on_a_constant_series_is_finite_zero():
    z, base, scale = robust_z(np.full(100, 2.0), 11)
    assert np.all(z == 0) and np.all(scale > 0)


def test_robust_z_scales_to_a_million_points():
    x = np.random.default_rng(0).standard_normal(1_000_000)
    z, _, _ = robust_z(x, 201)
    assert z.shape == x.shape and np.isfinite(z).all()


def test_runs_of():
    assert runs_of(np.array([0, 1, 1, 0, 1], bool)) == [(1, 3), (4, 5)]
    assert runs_of(np.array([], bool)) == []
    assert runs_of(np.ones(3, bool)) == [(0, 3)]


def test_one_rolling_median_one_bucket_median_one_theil_sen():
    """The old entry points are thin views of the one implementation each."""
    from runlens.stats import growth, trend

    rng = np.random.default_rng(0)
    y = rng.standard_normal(3001)
    y[::97] = np.nan
    assert np.allclose(growth.rolling_median(y, 7), rolling_median(y, 7, mode="shrink"), equal_nan=True)
    x = np.arange(y.size, dtype=float)
    bx, by = growth.bucket_medians(x, y, 100)
    ok = np.isfinite(y)
    assert np.array_equal(by, bucket_medians(y[ok], 100)[1]) and np.array_equal(bx, bucket_medians(x[ok], 100)[1])
    g, t = growth.growth(x, y), trend.trend(y, x, max_points=500)
    assert (g.slope, g.tau, g.p, g.n) == (t.slope, t.tau, t.p, t.n)


def test_mad_sd_is_scipys_normal_scaled_mad():
    from scipy.stats import median_abs_deviation

    x = np.random.default_rng(3).standard_t(3, 999)
    assert mad_sd(x) == median_abs_deviation(x, scale="normal")
