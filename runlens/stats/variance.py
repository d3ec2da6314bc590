"""Variance comparisons: Levene's test (median-centred, i.e. Brown-Forsythe)
between two stretches of a series, or across consecutive windows.

Pure numpy/scipy. The median-centred Levene test is robust to the skewed,
heavy-tailed noise of per-batch losses, where an F-test is not.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from .robust import MAD_TO_SD, bucket_edges, finite


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
    return float((MAD_TO_SD * np.median(np.abs(x - np.median(x)))) ** 2)


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


def early_late(x: np.ndarray, *, fraction: float = 0.25, skip: float = 0.0) -> VarianceComparison:
    """Levene test of the last ``fraction`` of ``x`` against its first ``fraction``
    (after skipping the first ``skip`` fraction, e.g. a warmup)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    start = int(round(skip * n))
    width = max(1, int(round(fraction * n)))
    return levene_compare(x[start:start + width], x[n - width:])


def windows_levene(x: np.ndarray, n_windows: int) -> tuple[float, float]:
    """Levene (median-centred) across ``n_windows`` consecutive equal windows.

    Returns ``(statistic, p)``: p small means the spread changes along the
    series. NaN when fewer than 2 windows of at least 3 finite points.
    """
    x = np.asarray(x, dtype=np.float64)
    edges = bucket_edges(x.size, n_windows)
    groups = [finite(x[a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    groups = [g for g in groups if g.size >= 3]
    if len(groups) < 2 or all(np.ptp(g) == 0 for g in groups):
        return math.nan, math.nan
    stat, p = stats.levene(*groups, center="median")
    return float(stat), float(p)
