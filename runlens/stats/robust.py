"""Robust location, scale and outlier scores for long, noisy series.

Pure numpy/scipy; knows nothing about runs. Everything here is linear (or
``n * window`` with a small constant) in the length of the series, so it can
be fed a million training steps.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import ndimage, stats

#: The normal distribution's 75th percentile: a Gaussian's MAD is this many standard deviations.
_NORMAL_MAD = float(stats.norm.ppf(0.75))
#: MAD times this estimates the standard deviation of Gaussian data. Kept for the spike detector's
#: ``differences`` mode and ``plateau``; new code uses :func:`mad_sd` / ``median_abs_deviation(scale="normal")``.
MAD_TO_SD = 1.0 / _NORMAL_MAD


def finite(x: np.ndarray) -> np.ndarray:
    """``x`` as float64 with NaN/Inf dropped."""
    x = np.asarray(x, dtype=np.float64)
    return x[np.isfinite(x)]


def mad_sd(x: np.ndarray) -> float:
    """Robust standard deviation (normal-scaled MAD) of the finite values; NaN if none."""
    x = finite(x)
    if x.size == 0:
        return float("nan")
    return float(stats.median_abs_deviation(x, scale="normal"))


def bucket_edges(n: int, max_points: int) -> np.ndarray:
    """Boundaries splitting ``range(n)`` into at most ``max_points`` near-equal buckets."""
    k = max(1, min(int(n), int(max_points)))
    return np.linspace(0, n, k + 1).round().astype(np.int64)


def bucket_medians(x: np.ndarray, max_points: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    """Downsample ``x`` to at most ``max_points`` bucket medians (the one implementation).

    Returns ``(position, median)``: each bucket's centre as a (fractional)
    index into ``x``, and its median. Buckets hold equal counts of
    consecutive points (the last may hold fewer). Medians rather than means
    so that a few spikes do not move the downsampled curve. Series no
    longer than ``max_points`` are returned as they are.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n <= max_points:
        return np.arange(n, dtype=np.float64), x.copy()
    size = -(-n // max_points)  # equal buckets except the last: one reshape
    full = (n // size) * size
    med = np.median(x[:full].reshape(-1, size), axis=1)
    pos = np.arange(med.size, dtype=np.float64) * size + (size - 1) / 2.0
    if full < n:
        med = np.append(med, np.median(x[full:]))
        pos = np.append(pos, (full + n - 1) / 2.0)
    return pos, med


def rolling_median(x: np.ndarray, window: int, *, mode: str = "mirror") -> np.ndarray:
    """Centred rolling median, same length as ``x`` (the one implementation).

    Edges are mirrored by default: padding with the nearest value would fill
    half of the first window with copies of ``x[0]`` and pin the median (and
    a MAD computed this way) to it. ``mode="nearest"`` keeps a monotone
    series unchanged, edges included. ``mode="shrink"`` ignores NaN and lets
    the window shrink at the edges (an even ``window`` is kept as given,
    one more point after than before); all-NaN windows give NaN.
    """
    x = np.asarray(x, dtype=np.float64)
    if mode == "shrink":
        return _shrinking_median(x, max(1, int(window)))
    window = max(1, int(window)) | 1  # odd, so the window is centred
    if x.size <= 1:
        return x.copy()
    return ndimage.median_filter(x, size=min(window, 2 * x.size - 1) | 1, mode=mode)


def _shrinking_median(y: np.ndarray, window: int) -> np.ndarray:
    if window == 1 or len(y) == 0:
        return y.copy()
    half = window // 2
    padded = np.pad(y, (half, window - 1 - half), constant_values=np.nan)
    view = np.lib.stride_tricks.sliding_window_view(padded, window)
    if not np.isnan(padded).any():
        return np.median(view, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN windows give NaN, as wanted
        return np.nanmedian(view, axis=1)


def robust_z(x: np.ndarray, window: int, *, scale_window: int | None = None,
             min_scale: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Robust z-scores of ``x`` against its rolling median and rolling MAD.

    Returns ``(z, baseline, scale)``. ``scale`` is the rolling median of the
    absolute residuals over ``scale_window``, normal-scaled like ``mad_sd`` (default 4x
    ``window``: the spread needs more points than the level to be stable),
    floored at ``min_scale`` and at a tiny fraction of the series' overall
    spread so a locally constant stretch does not give infinite scores.
    ``x`` must be finite.

    The scale is also at least the noise that leave-one-out residuals show
    (:func:`loo_residual_sd`): where the series moves further within a
    window than its noise, as a loss printed every 50 steps of a fast early
    fall does, the centred median *is* the middle point, most residuals are
    exactly 0 and their MAD says the series has no noise at all, so that any
    wiggle scores in the thousands.
    """
    x = np.asarray(x, dtype=np.float64)
    base = rolling_median(x, window)
    resid = x - base
    sw = scale_window if scale_window is not None else 4 * int(window)
    scale = np.maximum(rolling_median(np.abs(resid), sw) / _NORMAL_MAD, loo_residual_sd(x, window, sw))
    overall = np.median(np.abs(resid)) / _NORMAL_MAD if x.size else 0.0
    level = float(np.max(np.abs(x))) if x.size else 0.0
    floor = max(float(min_scale), 1e-3 * float(overall), 1e-12 * level, np.finfo(float).tiny)
    scale = np.maximum(scale, floor)
    with np.errstate(over="ignore"):
        return resid / scale, base, scale


def loo_residual_sd(x: np.ndarray, window: int, scale_window: int) -> np.ndarray:
    """Rolling robust sd of the noise of ``x`` from its residuals against the median of the other
    points of its centred ``window`` (leave one out), same length as ``x``.

    In a stretch that moves further within the window than its noise, that median is about the
    mean of the two neighbours, so the residual is the point's noise less theirs: sd ``s *
    sqrt(1.5)`` for noise of sd ``s``, which is divided out. On noise around a level it is a
    little below the usual MAD, so it only binds where that one is degenerate; with heavy-tailed
    noise a residual is contaminated only when its own point is, as with the usual one. The
    median without the middle point comes from the window's three middle order statistics.
    """
    x = np.asarray(x, dtype=np.float64)
    w = max(3, int(window)) | 1
    if x.size < 3:
        return np.zeros_like(x)
    size = min(w, 2 * x.size - 1) | 1
    h = size // 2
    lo, mid, hi = (ndimage.rank_filter(x, h + d, size=size, mode="mirror") for d in (-1, 0, 1))
    # Without x: below the median, the two middle ones left are the median and the next above.
    loo = np.where(x < mid, 0.5 * (mid + hi), np.where(x > mid, 0.5 * (lo + mid), 0.5 * (lo + hi)))
    return rolling_median(np.abs(x - loo), scale_window) / (_NORMAL_MAD * np.sqrt(1.5))


def runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    """``[start, stop)`` index pairs of the runs of True in a boolean array."""
    m = np.asarray(mask, dtype=bool)
    if m.size == 0:
        return []
    d = np.diff(np.concatenate(([0], m.view(np.int8), [0])))
    starts = np.flatnonzero(d == 1)
    stops = np.flatnonzero(d == -1)
    return list(zip(starts.tolist(), stops.tolist(), strict=True))
