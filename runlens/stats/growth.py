"""Growth of a positive series over steps, measured in decades.

Gradient and weight norms span orders of magnitude, so everything here works
on ``log10`` of the series: a slope is decades per step and a change is a
number of decades, which means the same thing for a norm of 1e-6 and 1e6.
Long series are reduced to at most ``max_points`` bucket medians before the
O(n^2) Theil-Sen estimator sees them (a median per bucket also ignores the
odd spike). Pure numpy/scipy; knows nothing about runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from runlens.stats import robust
from runlens.stats.trend import reduce, trend

__all__ = ["Growth", "bucket_medians", "growth", "level_change", "longest_true_run", "rolling_median"]


@dataclass(frozen=True)
class Growth:
    """Trend of a log10 series over steps.

    ``slope`` is the Theil-Sen slope in decades per step with its 95%
    interval (``slope_low``, ``slope_high``); ``tau``/``p`` are Kendall's
    tau and its two-sided p-value on the same points; ``decades`` is the
    change from the early level to the late level (``level_change``);
    ``n`` is the number of points the estimators saw.
    """

    slope: float
    slope_low: float
    slope_high: float
    tau: float
    p: float
    decades: float
    n: int


def bucket_medians(x: np.ndarray, y: np.ndarray, max_points: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Finite (x, y) pairs reduced to at most ``max_points`` bucket medians of each
    (:func:`runlens.stats.trend.reduce`); shorter series come back unchanged (finite pairs only)."""
    return reduce(y, x, max_points)[::-1]


def level_change(y: np.ndarray, frac: float = 0.1, min_points: int = 1) -> float:
    """Late level minus early level: medians of the first and last ``frac``.

    Each window holds at least ``min_points`` points (and at least one); NaN
    when the finite series is too short for two windows.
    """
    y = np.asarray(y, dtype=np.float64)
    y = y[np.isfinite(y)]
    k = max(min_points, 1, int(round(frac * len(y))))
    if len(y) < 2 or 2 * k > len(y) + 1:
        return float("nan")
    return float(np.median(y[-k:]) - np.median(y[:k]))


def growth(x: np.ndarray, logy: np.ndarray, *, max_points: int = 500, frac: float = 0.1) -> Growth | None:
    """Theil-Sen slope and Kendall test of ``logy`` against ``x`` (:func:`runlens.stats.trend.trend`).

    ``None`` with fewer than 3 finite points or a constant series, where
    neither statistic is defined.
    """
    ys, xs = reduce(logy, x, max_points)
    if len(ys) < 3 or np.ptp(ys) == 0 or np.ptp(xs) == 0:
        return None
    t = trend(ys, xs, max_points=max_points)
    return Growth(slope=t.slope, slope_low=t.slope_low, slope_high=t.slope_high,
                  tau=float(np.nan_to_num(t.tau)), p=1.0 if not np.isfinite(t.p) else t.p,
                  decades=level_change(ys, frac), n=t.n)


def rolling_median(y: np.ndarray, window: int) -> np.ndarray:
    """Centred rolling median that ignores NaN and shrinks at the edges
    (:func:`runlens.stats.robust.rolling_median`, ``mode="shrink"``)."""
    return robust.rolling_median(y, window, mode="shrink")


def longest_true_run(mask: np.ndarray) -> tuple[int, int]:
    """``(start, length)`` of the longest run of consecutive True values.

    ``(0, 0)`` when there is none; ties go to the earliest run.
    """
    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return 0, 0
    padded = np.concatenate(([False], mask, [False])).astype(np.int8)
    diff = np.diff(padded)
    starts = np.flatnonzero(diff == 1)
    ends = np.flatnonzero(diff == -1)
    lengths = ends - starts
    i = int(np.argmax(lengths))
    return int(starts[i]), int(lengths[i])


def geometric(x: np.ndarray, logy: np.ndarray) -> dict[str, float] | None:
    """Does ``y`` grow by a steady factor per step? OLS of ``log10 y`` on ``x``: ``slope`` (decades
    per step), its one-sided ``p`` (> 0), ``r2``, the ``decades`` the fitted line climbs, and
    ``r2_linear``, the R^2 of ``y`` itself on ``x``: a sum of terms grows in a straight line (better
    ``r2_linear``), a feedback multiplies at each step (better ``r2``). None with fewer than 5 points."""
    x, logy = np.asarray(x, dtype=np.float64), np.asarray(logy, dtype=np.float64)
    if logy.size < 5 or np.ptp(x) == 0 or np.ptp(logy) == 0:
        return None
    fit = stats.linregress(x, logy)
    lin = stats.linregress(x, 10.0 ** (logy - logy.max()))  # scaled: the R^2 does not change, nothing overflows
    p = fit.pvalue / 2.0 if fit.slope > 0 else 1.0 - fit.pvalue / 2.0
    return {"slope": float(fit.slope), "p": float(p), "r2": float(fit.rvalue ** 2),
            "decades": float(fit.slope * np.ptp(x)), "r2_linear": float(lin.rvalue ** 2), "n": int(logy.size)}
