"""Downsampling for drawing: few points, same picture.

A chart is a few hundred pixels wide, so a 1,000,000-step run is drawn from
a few thousand points. Averaging would hide exactly what a post-mortem is
about (one spike, the first NaN), so each bucket of consecutive samples
keeps its minimum and its maximum (the min/max or "M4"-style reduction),
and the first non-finite sample of a bucket is kept too, so a NaN still
breaks the line where it happened.
"""

from __future__ import annotations

import numpy as np

DEFAULT_BUCKETS = 1200


def minmax_indices(y: np.ndarray, buckets: int = DEFAULT_BUCKETS) -> np.ndarray:
    """Sorted indices into ``y`` that keep every bucket's extremes and NaNs.

    At most ``3 * buckets + 2`` indices: per bucket the smallest and largest
    finite value and the first non-finite one; the first and last sample
    always. Short series come back whole.
    """
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if buckets < 1:
        raise ValueError(f"buckets must be >= 1, got {buckets}")
    if n <= 3 * buckets:
        return np.arange(n)
    size = -(-n // buckets)
    nb = -(-n // size)
    padded = np.full(nb * size, np.nan)
    padded[:n] = y
    grid = padded.reshape(nb, size)
    real = (np.arange(nb * size) < n).reshape(nb, size)
    finite = np.isfinite(grid)
    base = np.arange(nb) * size
    lo = np.argmin(np.where(finite, grid, np.inf), axis=1)
    hi = np.argmax(np.where(finite, grid, -np.inf), axis=1)
    bad = ~finite & real
    first_bad = np.argmax(bad, axis=1)
    has_finite = finite.any(axis=1)
    has_bad = bad.any(axis=1)
    picks = [
        (base + lo)[has_finite],
        (base + hi)[has_finite],
        (base + first_bad)[has_bad],
        np.array([0, n - 1]),
    ]
    return np.unique(np.concatenate(picks))


def downsample(x: np.ndarray, y: np.ndarray, buckets: int = DEFAULT_BUCKETS) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` reduced with :func:`minmax_indices` on ``y``."""
    x = np.asarray(x)
    y = np.asarray(y, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} != {len(y)})")
    idx = minmax_indices(y, buckets)
    return x[idx], y[idx]


def reduce_rows(values: np.ndarray, max_rows: int, bad: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shrink a (rows x cols) matrix to at most ``max_rows`` rows.

    Consecutive rows are grouped; a group keeps each column's largest finite
    value (a spike survives) and is flagged in the returned ``bad`` mask when
    any of its cells was flagged (a NaN gradient survives). Returns
    ``(values, bad, starts)`` where ``starts[i]`` is the first original row of
    group ``i``.
    """
    values = np.asarray(values, dtype=np.float64)
    rows = values.shape[0]
    bad = np.zeros(values.shape, dtype=bool) if bad is None else np.asarray(bad, dtype=bool)
    if rows <= max_rows:
        return values, bad, np.arange(rows)
    size = -(-rows // max_rows)
    starts = np.arange(0, rows, size)
    finite = np.where(np.isfinite(values), values, -np.inf)
    reduced = np.maximum.reduceat(finite, starts, axis=0)
    reduced[np.isneginf(reduced)] = np.nan
    reduced_bad = np.logical_or.reduceat(bad, starts, axis=0)
    return reduced, reduced_bad, starts
