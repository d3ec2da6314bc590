"""Did a series make progress, does it grow in proportion to time, did it go back to where it began?

Pure numpy/scipy, nothing about runs. Three tests the curve and its
findings combine:

- :func:`progress_test`: a downward Mann-Kendall trend of the series against
  its own noise, with an effect size (the drop over the robust spread of
  the step-to-step noise);
- :func:`linear_growth`: ordinary least squares of a series on the time
  since its last reset, with R^2, the slope's p-value and the growth
  factor over the stretch;
- :func:`level_return`: whether a stretch starts again at the level of a
  series' first points rather than at the level it had reached (two
  Mann-Whitney rank tests and the share of the progress given back).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from runlens.stats.robust import mad_sd
from runlens.stats.trend import trend


@dataclass(frozen=True)
class Progress:
    """``p_decreasing``: one-sided Mann-Kendall p of a fall (on at most 200 bucket
    medians); ``drop``: first-fifth median minus last-fifth median (series units);
    ``noise_sd``: robust sd of the step-to-step noise (MAD of the differences over
    sqrt 2); ``effect``: ``drop / noise_sd``; ``relative_drop``: ``drop`` over the
    first fifth's level."""

    p_decreasing: float
    drop: float
    noise_sd: float
    effect: float
    relative_drop: float
    n: int

    def made_progress(self, alpha: float, min_effect: float, min_drop: float) -> bool:
        """A significant fall that stands out of the noise by ``min_effect`` sd and is
        at least ``min_drop`` of the starting level."""
        return (self.p_decreasing < alpha and self.effect >= min_effect
                and self.relative_drop >= min_drop)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def progress_test(x: np.ndarray) -> Progress:
    """How far ``x`` fell, judged against its own noise (``x`` finite, in order)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n < 5:
        return Progress(math.nan, 0.0, math.nan, 0.0, 0.0, int(n))
    k = max(2, n // 5)
    first, last = float(np.median(x[:k])), float(np.median(x[-k:]))
    drop = first - last
    # The noise of one step, not the spread of the whole curve: the trend
    # itself must not count as noise.
    noise = float(mad_sd(np.diff(x))) / math.sqrt(2.0)
    t = trend(x, max_points=200)
    effect = drop / noise if noise > 0 else (math.inf if drop > 0 else 0.0)
    rel = drop / abs(first) if first != 0 else 0.0
    return Progress(float(t.p_decreasing) if t.n else math.nan, drop, noise, effect, rel, int(n))


@dataclass(frozen=True)
class LinearGrowth:
    """OLS of ``y`` on the time since the last reset: ``slope``, ``r2``, the slope's
    one-sided p (> 0), ``growth`` (fitted end over fitted start, inf when the line
    starts at or below zero), the share of the final value the line has at the
    reset (``intercept_share``), ``power``/``power_r2``: slope and R^2 of log y on
    log t (1 for a sum of agreeing terms, 1/2 for independent ones, ~0 for a
    level that does not grow with t), ``observed_growth``: median of the last
    fifth over the median of the first 3 values, ``resets`` and ``n``;
    ``exp_r2``: R^2 of log y on t (a steady factor per step, which a sum's
    straight line does not follow)."""

    slope: float
    intercept: float
    r2: float
    p_positive: float
    growth: float
    intercept_share: float
    power: float
    power_r2: float
    observed_growth: float
    resets: int
    n: int
    exp_r2: float = math.nan

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def since_resets(steps: np.ndarray, y: np.ndarray, drop: float) -> tuple[np.ndarray, int]:
    """Steps since the last reset at each point, and the count of resets.

    A reset is a fall of ``y`` to ``1 / drop`` of the value before it or less
    (an accumulator cleared, e.g. once per epoch); the count starts at the
    first point.
    """
    prev, cur = y[:-1], y[1:]
    with np.errstate(all="ignore"):
        reset = np.concatenate(([True], cur * drop <= prev))
    anchor = np.maximum.accumulate(np.where(reset, np.arange(y.size), 0))
    # Time counts from one step before the reset's record: the first record
    # already holds one step's gradient.
    gap = np.diff(steps).min() if steps.size > 1 else 1
    return (steps - steps[anchor] + max(int(gap), 1)).astype(np.float64), int(reset.sum() - 1)


def linear_growth(steps: np.ndarray, y: np.ndarray, *, reset_drop: float = 3.0) -> LinearGrowth | None:
    """Does ``y`` grow in proportion to the steps since its last reset? None with fewer than 5 points."""
    steps, y = np.asarray(steps), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(y)
    steps, y = steps[ok], y[ok]
    if y.size < 5:
        return None
    t, resets = since_resets(steps, y, reset_drop)
    if np.ptp(t) == 0:
        return None
    fit = stats.linregress(t, y)
    lo, hi = fit.intercept + fit.slope * t.min(), fit.intercept + fit.slope * t.max()
    p = fit.pvalue / 2.0 if fit.slope > 0 else 1.0 - fit.pvalue / 2.0
    pos = y > 0
    power, power_r2, exp_r2 = math.nan, math.nan, math.nan
    if pos.sum() >= 3 and np.ptp(t[pos]) > 0:
        logfit = stats.linregress(np.log(t[pos]), np.log(y[pos]))
        power, power_r2 = float(logfit.slope), float(logfit.rvalue ** 2)
        if np.ptp(y[pos]) > 0:
            exp_r2 = float(stats.linregress(t[pos], np.log(y[pos])).rvalue ** 2)
    return LinearGrowth(float(fit.slope), float(fit.intercept), float(fit.rvalue ** 2), float(p),
                        float(hi / lo) if lo > 0 else math.inf,
                        float(fit.intercept / hi) if hi > 0 else math.nan, power, power_r2,
                        float(np.median(y[-max(3, y.size // 5):]) / np.median(y[:3])) if np.median(y[:3]) > 0
                        else math.inf, resets, int(y.size), exp_r2)


def level_return(first: np.ndarray, before: np.ndarray, after: np.ndarray) -> dict[str, float] | None:
    """Did ``after`` start again at the level of ``first`` instead of the level ``before`` reached?

    ``given_back``: (median of ``after`` minus median of ``before``) over
    (median of ``first`` minus median of ``before``), 1 when all the progress
    is lost; ``p_above_before``: Mann-Whitney one-sided p that ``after`` lies
    above ``before``; ``p_below_first``: the same for ``after`` below
    ``first`` (large when it is back at the first level). None when a side
    has fewer than 3 points or ``before`` did not get below ``first``.
    """
    if min(first.size, before.size, after.size) < 3:
        return None
    f, b, a = float(np.median(first)), float(np.median(before)), float(np.median(after))
    if not f > b:
        return None
    return {"first_level": f, "level_before": b, "level_after": a, "given_back": (a - b) / (f - b),
            "p_above_before": float(stats.mannwhitneyu(after, before, alternative="greater").pvalue),
            "p_below_first": float(stats.mannwhitneyu(after, first, alternative="less").pvalue),
            "p_progress": float(stats.mannwhitneyu(before, first, alternative="less").pvalue)}
