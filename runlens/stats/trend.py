"""Monotonic trend tests: Mann-Kendall (Kendall's tau against time) and the
Theil-Sen slope, on bucket-median downsampled series.

Pure numpy/scipy. ``theilslopes`` needs O(n^2) memory and time, so the series
is first reduced to at most ``max_points`` bucket medians; ``kendalltau`` is
cheap but a trend on millions of raw steps is "significant" for any slope,
so it runs on the same reduced series, where p-values keep their meaning for
the *shape* of the curve rather than for the per-step noise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from runlens.stats.robust import bucket_medians

#: Largest series ``theilslopes`` is fed (about 10 ms at 1,000 points).
MAX_THEIL_POINTS = 1000


@dataclass(frozen=True)
class Trend:
    """Outcome of a trend test on one series.

    ``tau``/``p``: Kendall's tau of the values against their positions and
    its two-sided p-value; ``slope``/``intercept``: Theil-Sen line in units
    of the caller's ``x`` (per step when ``x`` is steps); ``slope_low``,
    ``slope_high``: its confidence interval; ``n``: points tested after
    downsampling. All NaN when fewer than 3 finite points.
    """

    tau: float
    p: float
    slope: float
    intercept: float
    slope_low: float
    slope_high: float
    n: int

    @property
    def p_increasing(self) -> float:
        """One-sided p-value for an upward trend."""
        return _one_sided(self.p, self.tau, +1)

    @property
    def p_decreasing(self) -> float:
        """One-sided p-value for a downward trend."""
        return _one_sided(self.p, self.tau, -1)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


_NAN_TREND = Trend(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0)


def _one_sided(p: float, tau: float, sign: int) -> float:
    if math.isnan(p) or math.isnan(tau):
        return math.nan
    return p / 2.0 if tau * sign > 0 else 1.0 - p / 2.0


def reduce(y: np.ndarray, x: np.ndarray | None = None,
           max_points: int = MAX_THEIL_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """``(y, x)``: the finite pairs, reduced to at most ``max_points`` bucket medians of each."""
    y = np.asarray(y, dtype=np.float64)
    xs = np.arange(y.size, dtype=np.float64) if x is None else np.asarray(x, dtype=np.float64)
    ok = np.isfinite(y) & np.isfinite(xs)
    y, xs = y[ok], xs[ok]
    if y.size > max_points:
        _, y = bucket_medians(y, max_points)
        _, xs = bucket_medians(xs, max_points)
    return y, xs


def trend(y: np.ndarray, x: np.ndarray | None = None, *, max_points: int = MAX_THEIL_POINTS,
          confidence: float = 0.95) -> Trend:
    """Mann-Kendall test and Theil-Sen slope of ``y`` (against ``x``, default 0..n-1): the one
    Theil-Sen of the package.

    Non-finite values are dropped. Longer series are reduced to at most
    ``max_points`` bucket medians of ``y`` (and of ``x``) before testing.
    """
    y, xs = reduce(y, x, max(3, min(int(max_points), MAX_THEIL_POINTS)))
    if y.size < 3:
        return _NAN_TREND
    if np.ptp(y) == 0.0:
        # kendalltau is undefined on a constant series; a flat line has no trend.
        return Trend(0.0, 1.0, 0.0, float(y[0]), 0.0, 0.0, int(y.size))
    tau, p = stats.kendalltau(xs, y)
    ts = stats.theilslopes(y, xs, alpha=confidence)
    return Trend(float(tau), float(p), float(ts.slope), float(ts.intercept),
                 float(ts.low_slope), float(ts.high_slope), int(y.size))
