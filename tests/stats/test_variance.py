"""Median-centred Levene comparisons."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens.stats.variance import levene_compare


def test_same_spread_is_not_significant_for_any_seed():
    for seed in range(100):
        rng = np.random.default_rng(seed)
        c = levene_compare(rng.standard_normal(500), rng.standard_normal(500))
        assert c.p > 1e-4 and c.p_smaller > 1e-4, seed
        assert 0.55 < c.ratio < 1.8


def test_smaller_late_spread_is_significant_with_its_effect_size():
    for seed in range(20):
        rng = np.random.default_rng(seed)
        c = levene_compare(rng.standard_normal(2000), 0.5 * rng.standard_normal(2000))
        assert c.p_smaller < 1e-10 and c.p < 1e-10
        assert c.ratio == pytest.approx(0.25, rel=0.2)
        assert c.n_a == c.n_b == 2000


def test_larger_spread_has_a_large_one_sided_p_smaller():
    rng = np.random.default_rng(0)
    c = levene_compare(rng.standard_normal(1000), 3 * rng.standard_normal(1000))
    assert c.p_smaller > 0.999 and c.ratio > 5


def test_heavy_tails_do_not_fool_the_median_centred_test():
    rng = np.random.default_rng(3)
    a = rng.standard_t(2, 3000)
    b = rng.standard_t(2, 3000)
    assert levene_compare(a, b).p > 1e-3


def test_degenerate_input():
    c = levene_compare(np.array([1.0, 2.0]), np.arange(10.0))
    assert math.isnan(c.p) and c.n_a == 2
    const = levene_compare(np.ones(10), np.ones(10))
    assert (const.p, const.ratio) == (1.0, 1.0)
    assert set(c.to_dict()) == {"statistic", "p", "p_smaller", "ratio", "n_a", "n_b"}


def test_wander_test_tells_independent_noise_from_a_wandering_level():
    from runlens.stats.variance import wander_test

    for seed in range(50):
        rng = np.random.default_rng(seed)
        iid = np.linspace(2, 1, 2000) + 0.1 * rng.standard_normal(2000)
        w = wander_test(iid)
        assert w["p"] > 1e-4 and w["ratio"] < 2.5, seed
    rng = np.random.default_rng(0)
    level = np.repeat(rng.standard_normal(40), 50)  # the level moves every 50 steps
    w = wander_test(1 + 0.3 * level + 0.1 * rng.standard_normal(2000))
    assert w["p"] < 1e-10 and w["halves_p"] < 1e-3 and w["excess"] > 0.1
    assert math.isnan(wander_test(np.ones(10))["ratio"])


def test_a_level_that_bends_as_it_falls_does_not_wander_around_its_monotone_fit():
    """A plateau that ends in a late drop (a momentum run's phase change) leaves curved residuals
    around a line, which the line's test reads as wandering; around the best monotone fit they are
    noise. A level that goes back up stays wandering around any monotone fit."""
    from runlens.stats.variance import wander_test

    t = np.arange(900)
    for seed in range(30):
        rng = np.random.default_rng(seed)
        bend = 1.38 - 0.55 / (1 + np.exp(-(t - 700) / 40)) + 0.006 * rng.standard_normal(t.size)
        w = wander_test(bend)
        assert w["p"] < 1e-10, seed  # the line's test alone is fooled
        assert w["monotone_p"] > 1e-3, (seed, w)
        level = np.repeat(rng.standard_normal(30), 30)  # the same fall with a level that moves up and down
        w = wander_test(np.linspace(1.4, 0.9, t.size) + 0.1 * level + 0.006 * rng.standard_normal(t.size))
        assert w["monotone_p"] < 1e-3, (seed, w)  # the curve's alpha_strong
