"""Variance comparisons: Levene's test (median-centred, i.e. Brown-Forsythe)
between two stretches of a series, and a variance-ratio test of wandering.

Pure numpy/scipy. The median-centred Levene test is robust to the skewed,
heavy-tailed noise of per-batch losses, where an F-test is not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from runlens.stats.robust import finite
from runlens.stats.trend import trend


@dataclass(frozen=True)
class VarianceComparison:
    """Levene (median-centred) test of ``b`` against ``a``.

    ``ratio`` is the effect size: (robust sd of ``b`` / robust sd of ``a``)
    squared, so 1 means "same variance" and 0.25 "half the spread".
    ``statistic``/``p`` are Levene's W and its p-value (two-sided: different
    variances); ``p_smaller`` is the one-sided p-value for "``b`` varies
    less than ``a``". All NaN when a side has fewer than 3 finite points.
    """

    statistic: float
    p: float
    p_smaller: float
    ratio: float
    n_a: int
    n_b: int

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def _robust_var(x: np.ndarray) -> float:
    return float(stats.median_abs_deviation(x, scale="normal") ** 2)


def levene_compare(a: np.ndarray, b: np.ndarray) -> VarianceComparison:
    """Compare the spread of ``b`` with that of ``a`` (e.g. late vs early)."""
    a, b = finite(a), finite(b)
    if a.size < 3 or b.size < 3:
        return VarianceComparison(math.nan, math.nan, math.nan, math.nan, int(a.size), int(b.size))
    va, vb = _robust_var(a), _robust_var(b)
    if va == 0.0 and vb == 0.0:
        return VarianceComparison(0.0, 1.0, 1.0, 1.0, int(a.size), int(b.size))
    ratio = vb / va if va > 0 else math.inf
    stat, p = stats.levene(a, b, center="median")
    if not math.isfinite(stat):
        stat, p = 0.0, 1.0
    # Levene's W is an F on absolute deviations: the direction comes from
    # which side deviates more, and the one-sided p halves the two-sided one.
    dev_a = np.mean(np.abs(a - np.median(a)))
    dev_b = np.mean(np.abs(b - np.median(b)))
    p_smaller = p / 2.0 if dev_b < dev_a else 1.0 - p / 2.0
    return VarianceComparison(float(stat), float(p), float(p_smaller), float(ratio), int(a.size), int(b.size))


def wander_test(x: np.ndarray, buckets: int = 20) -> dict[str, float]:
    """Does the level of ``x`` wander more than independent noise allows?

    A variance-ratio test: it tells a loss whose level drifts up and down
    (a learning rate too high, momentum oscillation) from one whose steps
    are independent noise around a trend.

    The series is detrended with its Theil-Sen line and cut into ``buckets``
    equal buckets; with independent noise the bucket means vary by
    var/size, so ``ratio = size * var(bucket means) / var(residuals)`` is
    about 1 and ``(buckets - 1) * ratio`` is chi-square distributed.
    ``excess`` is the sd of the bucket means beyond that noise (loss units);
    ``halves_p`` the larger p of the same test on each half of ``x``; ``monotone_p`` the test's p
    around the bucket means' best monotone fit instead of the line.
    """
    whole = _variance_ratio(x, buckets, monotone=True)
    halves = [_variance_ratio(h, buckets) for h in (x[: x.size // 2], x[x.size // 2:])]
    whole["halves_p"] = max(h["p"] for h in halves) if all(h["p"] == h["p"] for h in halves) else math.nan
    return whole


_UNTESTED = {"ratio": math.nan, "p": math.nan, "excess": 0.0, "monotone_p": math.nan}


def _variance_ratio(x: np.ndarray, buckets: int, monotone: bool = False) -> dict[str, float]:
    """The test on ``x``; ``monotone``: also around the bucket means' monotone fit (the halves do not
    need it)."""
    buckets = min(buckets, x.size // 5)  # short series: fewer buckets of 5
    size = x.size // buckets if buckets >= 4 else 0
    if size < 3:
        return dict(_UNTESTED)
    t = trend(x, max_points=200)  # a detrending line needs no more precision than this
    r = x - (t.intercept + t.slope * np.arange(x.size))
    r = r[-size * buckets:].reshape(buckets, size)
    means = r.mean(axis=1)
    within = float(np.var(r - means[:, None], ddof=1))
    if within <= 0:
        return dict(_UNTESTED)
    between = float(np.var(means, ddof=1))
    ratio = size * between / within
    p = float(stats.chi2.sf((buckets - 1) * ratio, buckets - 1))
    level = x[-size * buckets:].reshape(buckets, size).mean(axis=1)
    return {"ratio": ratio, "p": p, "excess": math.sqrt(max(between - within / size, 0.0)),
            "monotone_p": _monotone_p(level, size, within, t.slope) if monotone else math.nan}


def _monotone_p(means: np.ndarray, size: int, within: float, slope: float) -> float:
    """The same test around the best monotone fit of the bucket means (falling when the line falls)
    instead of the line: a loss that bends as it keeps falling (a plateau ending in a late drop, a
    schedule's decay) leaves curved residuals around a line, which are its trend, not wandering;
    a level that goes back up leaves them around any monotone fit. The fit's distinct levels are its
    degrees of freedom (as for isotonic regression's residual sum of squares)."""
    from scipy.optimize import isotonic_regression  # scipy >= 1.12

    fit = isotonic_regression(means, increasing=slope > 0).x
    dof = means.size - np.unique(fit).size
    if dof < 1:
        return 1.0  # the bucket means are monotone themselves: nothing wanders
    stat = size * float(np.sum((means - fit) ** 2)) / within
    return float(stats.chi2.sf(stat, dof))
