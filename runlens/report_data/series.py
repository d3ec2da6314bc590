"""Chart payload: downsampled series, the onset window, heatmap matrices, weight-norm lines.

A chart is a few hundred pixels wide, so a 1,000,000-step run is drawn from
a few thousand points. Averaging would hide exactly what a post-mortem is
about (one spike, the first NaN), so each bucket of consecutive samples
keeps its minimum and its maximum (the min/max or "M4"-style reduction),
and the first non-finite sample of a bucket is kept too, so a NaN still
breaks the line where it happened. Heatmaps keep each bucket's maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_BUCKETS = 1200
HEAT_ROWS, HEAT_COLS, MAX_WEIGHT_LINES = 160, 480, 8
SPARK_WIDTH = 40
# The failure "starts early" when it is in the first ONSET_SHARE of the steps: then the full
# chart spends most of its width after it, and a zoomed chart of the steps around it is added.
ONSET_SHARE = 0.2
ONSET_CONTEXT = 40  # steps shown after the onset (and up to as many before it)


@dataclass(frozen=True)
class Series:
    """One line to draw: ``steps`` and ``values`` (NaN/Inf kept), already downsampled."""

    label: str
    steps: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.steps)


@dataclass(frozen=True)
class Spark:
    """A series in ``SPARK_WIDTH`` buckets (each its maximum; NaN where a bucket held NaN/Inf),
    with its first, last, smallest and largest finite value (None when never finite)."""

    label: str
    peaks: np.ndarray
    log: bool
    first: float
    last: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class Heatmap:
    """A per-layer quantity as (depth rows x step columns), each cell a group's maximum."""

    key: str
    title: str
    unit: str
    hint: str
    x0: float
    x1: float
    values: np.ndarray  # NaN: not recorded; 0: exactly zero
    bad: np.ndarray  # NaN/Inf recorded
    n_layers: int
    row_starts: np.ndarray  # first depth of each row group
    vmin: float
    vmax: float
    flagged: tuple[tuple[str, tuple[int, ...]], ...]  # (code, rows its finding names)


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
    picks = [(base + lo)[finite.any(axis=1)], (base + hi)[finite.any(axis=1)],
             (base + first_bad)[bad.any(axis=1)], np.array([0, n - 1])]
    return np.unique(np.concatenate(picks))


def downsample(x: np.ndarray, y: np.ndarray, buckets: int = DEFAULT_BUCKETS) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` reduced with :func:`minmax_indices` on ``y``."""
    x = np.asarray(x)
    y = np.asarray(y, dtype=np.float64)
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} != {len(y)})")
    idx = minmax_indices(y, buckets)
    return x[idx], y[idx]


def reduce_rows(values: np.ndarray, max_rows: int,
                bad: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    return reduced, np.logical_or.reduceat(bad, starts, axis=0), starts


def series(label: str, steps: np.ndarray, values: np.ndarray | None,
           buckets: int = DEFAULT_BUCKETS) -> Series | None:
    if values is None or not len(values):
        return None
    x, y = downsample(steps, values, buckets)
    return Series(label, x, y)


def spark(label: str, values: np.ndarray | None, width: int = SPARK_WIDTH) -> Spark | None:
    """The sparkline of ``values``: bucket maxima, log-scaled when positive and over a decade."""
    if values is None or not len(values):
        return None
    v = np.asarray(values, dtype=np.float64)
    edges = np.linspace(0, len(v), min(width, len(v)) + 1).astype(int)
    peaks = np.array([v[a:b].max() if np.isfinite(v[a:b]).all() else np.nan
                      for a, b in zip(edges[:-1], edges[1:], strict=True)])
    finite = v[np.isfinite(v)]
    fp = peaks[np.isfinite(peaks)]
    log = bool(len(fp)) and fp.min() > 0 and fp.max() / fp.min() > 10
    low, high = (float(finite.min()), float(finite.max())) if len(finite) else (None, None)
    return Spark(label, peaks, log, float(v[0]), float(v[-1]), low, high)


def onset_window(steps: np.ndarray, at: int | None) -> tuple[int, int] | None:
    """The steps around ``at`` worth a zoomed chart, when ``at`` lies in the first
    ``ONSET_SHARE`` of the run (else the full chart already shows it well)."""
    if at is None or len(steps) < 10:
        return None
    first, last = int(steps[0]), int(steps[-1])
    if last <= first or (at - first) > ONSET_SHARE * (last - first):
        return None
    lo = max(first, at - ONSET_CONTEXT)
    hi = min(last, at + ONSET_CONTEXT)
    return (lo, hi) if hi > lo else None


def window(s: tuple[np.ndarray, np.ndarray] | None, lo: int, hi: int, label: str) -> Series | None:
    """The raw points of ``s`` within steps ``lo..hi`` (a zoomed chart is never downsampled)."""
    if s is None:
        return None
    steps, values = s
    keep = (steps >= lo) & (steps <= hi)
    if not keep.any():
        return None
    return Series(label, np.asarray(steps[keep]), np.asarray(values[keep], dtype=np.float64))


def heatmap(key: str, title: str, unit: str, hint: str, steps: np.ndarray, values: np.ndarray,
            present: np.ndarray, names: tuple[str, ...],
            named: tuple[tuple[str, tuple[str, ...]], ...]) -> Heatmap | None:
    """The reduced matrix of one per-layer quantity (None when nothing positive was recorded)."""
    if not present.any():
        return None
    bad = present & ~np.isfinite(values)
    zero = present & (values == 0)
    shown = np.where(present & np.isfinite(values) & (values > 0), values, np.nan)
    shown = np.where(zero, 0.0, shown)
    # Reduce steps (rows), then layers (transpose): each keeps its maximum.
    shown, bad, _ = reduce_rows(shown, HEAT_COLS, bad)
    shown_t, bad_t, starts = reduce_rows(shown.T, HEAT_ROWS, bad.T)
    positive = shown_t[np.isfinite(shown_t) & (shown_t > 0)]
    if not len(positive):
        return None
    x0 = float(steps[0])
    x1 = float(steps[-1]) if len(steps) > 1 else x0 + 1
    index = {n: j for j, n in enumerate(names)}
    flagged = []
    for code, layers in named:
        depths = sorted({index[n] for n in layers if n in index})
        rows = sorted({int(np.searchsorted(starts, d, side="right") - 1) for d in depths})
        if rows:
            flagged.append((code, tuple(rows)))
    vmin = float(positive.min())
    return Heatmap(key, title, unit, hint, x0, x1, shown_t, bad_t, values.shape[1], starts, vmin,
                   float(max(positive.max(), vmin * 10)), tuple(flagged))


def pick_layers(layers: tuple[str, ...], flagged: list[str]) -> list[int]:
    """The weight-norm lines worth drawing: every layer when few, else first, last,
    evenly spaced by depth and those a finding names."""
    if len(layers) <= MAX_WEIGHT_LINES:
        return list(range(len(layers)))
    index = {n: j for j, n in enumerate(layers)}
    picks = [index[n] for n in flagged if n in index][: MAX_WEIGHT_LINES // 2]
    spread = np.linspace(0, len(layers) - 1, MAX_WEIGHT_LINES - len(picks)).round().astype(int)
    return sorted(set(picks) | {int(j) for j in spread})
