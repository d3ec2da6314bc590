"""Upward spikes of a series (loss, gradient norm, comparison, short logs): four readings of one idea.

A spike is a point (or a few in a row) far above the series' running level
by its own noise, and back at the level after. The series differ in what
their level and noise are, so each has its function, with only its own
parameters: :func:`rolling_spikes` (a training loss: natural-log residuals
from a rolling median, the series' own tail and a recovery),
:func:`log10_spikes` (a gradient norm: a ratio to the running median in
decades, isolated), :func:`short_spikes` (a dozen points: neighbour medians
instead of rolling windows), :func:`difference_spikes` (the noise scale from
first differences, which a steep early descent does not shrink). Each
returns dicts with ``index`` (the peak), ``z``, ``value`` and ``level``
(``log10_spikes`` and ``difference_spikes`` add ``start``); pure
numpy/scipy, knows nothing about runs.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
from scipy import stats

from runlens.stats.robust import MAD_TO_SD, mad_sd, robust_z, rolling_median, runs_of

_MAX_WINDOW = 101  # a level 50 points either side is robust; a wider median only costs time


def rolling_spikes(x: np.ndarray, *, z_min: float = 6.0, tail_factor: float = 3.6, alpha: float = 0.01,
                   min_rise: float = 0.25,
                   min_progress: float = 0.05, max_width: int = 10, recovery: int = 20) -> list[dict[str, float]]:
    """Isolated upward spikes of a finite series that recover, as dicts
    ``index`` (of the peak), ``z``, ``value``, ``level`` (the running level), ``width`` (points).

    Robust z-scores (on the log scale for a positive series) against a
    centred rolling median/MAD; a spike reaches ``z_min``, ``tail_factor``
    times the series' own 95th percentile of z and the largest z its upper
    tail predicts at level ``alpha`` (:func:`tail_bound`), rises by at
    least ``min_rise`` of the running level and ``min_progress`` of the fall
    from the start, lasts at most ``max_width`` points, and within
    ``recovery`` points the median is back below half of the jump.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    window = int(np.clip(n // 200, 5, 100)) * 2 + 1
    # Minibatch noise of a loss is multiplicative and right-skewed; on the
    # log scale it is close to symmetric, so a z-score there means the same
    # rarity at every loss level and noise shape.
    logs = bool(np.all(x > 0))
    z, base, _ = robust_z(np.log(x) if logs else x, window)
    if logs:
        base = np.exp(base)
    start = float(np.median(x[: int(np.clip(n // 20, 5, 50))]))
    need = np.maximum(min_rise * np.abs(base), min_progress * np.maximum(start - base, 0.0))
    # The first half-window has no past to compare with: a mirrored median
    # there sits below a falling curve and would call the start a spike.
    settled = z[window // 2:]
    # A spike must also stand out from the run's own upper tail, in two ways.
    # By the noise's scale: where it is heavy-tailed or a mixture (a few hard
    # examples in a small batch), big z-scores are routine and only a jump
    # well beyond them counts. By the run's length: the longer the run, the
    # larger its largest routine z, and the exponential tail's bound grows
    # with it where a fixed multiple of a percentile does not.
    z_cut = max(z_min, tail_factor * float(np.quantile(settled, 0.95)), tail_bound(settled, alpha)) \
        if settled.size else np.inf
    hot = (z >= z_cut) & (x - base >= need)
    hot[: window // 2] = False
    out = []
    for a, b in _merge(runs_of(hot), gap=2):
        if b - a > max_width or b >= n:
            continue
        level = float(base[a])
        peak = a + int(np.argmax(x[a:b]))
        after = x[b:b + recovery]
        if after.size < min(3, recovery):
            continue
        if np.median(after) > level + 0.5 * (x[peak] - level):
            continue
        out.append({"index": peak, "z": float(z[peak]), "value": float(x[peak]), "level": level, "width": b - a})
    return out


def tail_bound(z: np.ndarray, alpha: float) -> float:
    """The z-score that the largest of ``z`` exceeds with probability ``alpha``
    if its upper tail is exponential (peaks over threshold, a generalized
    Pareto tail of shape 0).

    The tail is the top 5% (at least 20 points) above the next value ``u``;
    its scale is estimated from the median excess (``median / ln 2``), not
    the mean, so that a few real spikes among those points do not raise the
    bar that is to find them. With ``k`` excesses of scale ``beta``,
    ``P(max excess > t) ~ k exp(-t / beta)``, so the bound is
    ``u + beta ln(k / alpha)``. For Gaussian noise over 1,000 steps it is
    about 6 at ``alpha = 0.05``.
    """
    z = np.sort(np.asarray(z, dtype=np.float64)[np.isfinite(z)])
    k = max(20, int(np.ceil(0.05 * z.size)))
    if z.size <= k:
        return float("inf")
    u = float(z[-k - 1])
    beta = float(np.median(z[-k:] - u)) / np.log(2.0)
    return u + beta * float(np.log(k / alpha))


def log10_spikes(x: np.ndarray, *, min_ratio: float = 3.0, z_min: float = 6.0,
                 max_width: int = 10, at_end: bool = False) -> list[dict[str, float]]:
    """Spikes of a positive series by their ratio to the running level, in decades.

    The level is a centred rolling median (2% of the points, 5 to 101, odd); the
    scale one normal-scaled MAD of all the log10 residuals. A spike is at least
    ``log10(min_ratio)`` decades and ``z_min`` scales above the level, has two
    points before it and one after, lasts at most ``max_width`` points, and
    the points either side of it are within one decade of the level. With
    ``at_end``, the last point alone may be one too (``"at_end": True``): the
    series ends on it, so whether it came back is unknown.
    """
    x = np.asarray(x, dtype=np.float64)
    logn = np.log10(x)
    n = len(logn)
    window = int(np.clip(n // 50, 5, _MAX_WINDOW)) | 1
    level = rolling_median(logn, window)
    resid = logn - level
    # Floor the scale at float32 resolution: a constant norm has no noise to measure against.
    scale = max(float(stats.median_abs_deviation(resid, scale="normal")), 1e-6)
    hot = (resid >= np.log10(min_ratio)) & (resid >= z_min * scale)
    out = []
    for a, b in runs_of(hot):
        last = at_end and b == n and a == n - 1
        if a < 2 or (b >= n and not last) or b - a > max_width:
            continue
        # Isolated: the points either side sit within a decade of the level (a steep early
        # fall, or a rise that stays, has neighbours far from it too).
        if (not last and logn[b] - level[b] >= 1.0) or logn[a - 1] - level[a - 1] >= 1.0:
            continue
        i = a + int(np.argmax(logn[a:b]))
        out.append({"index": i, "start": a, "stop": b, "z": float((logn[i] - level[i]) / scale),
                    "value": float(10 ** logn[i]), "level": float(10 ** level[i]),
                    "ratio": float(10 ** (logn[i] - level[i])),
                    "excess": float(logn[a:b].max() - level[a:b].max()), "at_end": last})
    return out


def short_spikes(x: np.ndarray, *, z_min: float = 6.0, min_ratio: float = 3.0) -> list[dict[str, float]]:
    """Spikes of a series too short for rolling windows: a dozen lines pasted into an issue.

    Each point against the median of its neighbours (up to 2 each side, the
    point left out), on the log scale for a positive loss; the scale is the
    robust sd of all those residuals, floored at 1% of a decade so a
    constant stretch does not give infinite scores. A spike reaches
    ``z_min``, is ``min_ratio`` times its neighbours, and rises and recovers:
    a point before it (one of the two) and a later one are below the
    geometric middle of the jump. A first point has nothing to rise from: a
    loss that starts high and falls fast is learning, not spiking.
    """
    x = np.asarray(x, dtype=np.float64)
    pos = bool(np.all(x > 0))
    if x.size == 3:
        return _middle_spike(x, min_ratio) if pos else []
    y = np.log(x) if pos else x
    n = y.size
    ref = _neighbour_medians(y, np.zeros(n, bool))
    # With a handful of points a spike is one of its neighbours' few neighbours: its own
    # height would inflate their references and the scale. Points already ``min_ratio`` above
    # theirs are left out of every other point's reference and of the scale.
    cand = (x / np.exp(ref) >= min_ratio) if pos else np.zeros(n, bool)
    if cand.any() and not cand.all():
        ref = _neighbour_medians(y, cand)
    resid = y - ref
    rest = resid[~cand] if (~cand).sum() >= 2 else resid
    scale = max(mad_sd(rest), 0.01 * np.log(10) if pos else 1e-12 + 1e-3 * float(np.ptp(y)))
    out = []
    for i in np.flatnonzero(resid / scale >= z_min):
        level = float(np.exp(ref[i])) if pos else float(ref[i])
        # A loss that reaches exactly 0 is read on its own scale, but a spike is still a
        # ratio to its neighbours wherever they are positive.
        ratio = x[i] / level if level > 0 else np.inf
        middle = ref[i] + 0.5 * resid[i]
        before, later = y[max(0, i - 2):i], y[i + 1:]
        if (ratio >= min_ratio and before.size and float(np.min(before)) <= middle
                and later.size and float(np.min(later[:3])) <= middle):
            out.append({"index": int(i), "z": float(resid[i] / scale), "value": float(x[i]), "level": level})
    return out


#: How far above both neighbours the middle of three points must be: with two neighbours there is no
#: noise scale to test against, so the effect alone decides, an order of magnitude.
THREE_POINT_RATIO = 10.0


def _middle_spike(x: np.ndarray, min_ratio: float) -> list[dict[str, float]]:
    """The middle of three positive points ``THREE_POINT_RATIO`` (or ``min_ratio``, if larger) times both
    neighbours, which agree within ``min_ratio`` of each other: a level, a spike, the level again
    (mmdetection's 0.26, 3e14, 0.25 at the start of an epoch)."""
    a, b, c = (float(v) for v in x)
    lo, hi = min(a, c), max(a, c)
    level = math.sqrt(a * c)
    if not (b >= max(THREE_POINT_RATIO, min_ratio) * hi and hi <= min_ratio * lo):
        return []
    # The z is against the floor of the longer test's scale (1% of a decade): the only scale there is.
    return [{"index": 1, "z": math.log(b / level) / (0.01 * math.log(10)), "value": b, "level": level,
             "three_points": True}]


def _neighbour_medians(y: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Median of up to 2 neighbours each side of every point, the point itself and ``skip`` left out."""
    out = np.empty(y.size)
    for i in range(y.size):
        idx = [j for j in range(max(0, i - 2), min(y.size, i + 3)) if j != i and not skip[j]]
        if not idx:  # every neighbour skipped: fall back to all of them
            idx = [j for j in range(max(0, i - 2), min(y.size, i + 3)) if j != i]
        out[i] = np.median(y[idx])
    return out


def difference_spikes(loss: np.ndarray, *, z_min: float = 6.0, window: int = 25) -> list[dict[str, float]]:
    """Each run of consecutive upward outliers of the finite series (``start`` its first index).

    The level is a rolling median; the noise scale comes from the rolling
    MAD of first differences (divided by sqrt 2), which a steep early
    descent does not shrink the way residuals from the median do. The first
    ``window`` steps are left out: a median has no past to compare them to.
    """
    loss = np.asarray(loss, dtype=np.float64)
    ok = np.isfinite(loss)
    if not ok.all():  # after the first NaN the curve says nothing about spikes
        loss = loss[:int(np.argmin(ok))]
    if len(loss) < 3 * window:
        return []
    resid = loss - rolling_median(loss, window)
    diffs = np.diff(loss, prepend=loss[0])
    spread = np.abs(diffs - rolling_median(diffs, window))
    scale = MAD_TO_SD * rolling_median(spread, 4 * window) / np.sqrt(2.0)
    scale = np.maximum(scale, 1e-12 + 1e-6 * np.abs(np.median(loss)))
    z = resid / scale
    z[:window] = 0.0
    return [{"index": a + int(np.argmax(loss[a:b])), "start": a, "z": float(z[a:b].max()),
             "value": float(loss[a:b].max()), "level": float(loss[a] - resid[a])} for a, b in runs_of(z > z_min)]


def _merge(runs: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for a, b in runs:
        if merged and a - merged[-1][1] <= gap:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


#: rolling_spikes' keyword defaults (the signals' memo of its results keys on every parameter).
ROLLING_DEFAULTS = {k: v.default for k, v in inspect.signature(rolling_spikes).parameters.items()
                    if v.kind is inspect.Parameter.KEYWORD_ONLY}
