"""How a per-layer quantity changes with the layer's depth.

The x axis is a layer's position from the input (0) to the loss (n-1); the
y axis is ``log10`` of the quantity, so a slope is decades per layer and the
effect is a number of decades, whatever the model's scale. Theil-Sen and
rank correlations are used because a network's profile has odd members
(an embedding, a small head) that would drag a least-squares fit.
Pure numpy/scipy; knows nothing about runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from scipy import stats

from runlens.stats.trend import reduce, trend

#: a group label: anything a dict can key on
G = TypeVar("G", bound=Hashable)

__all__ = ["DepthTrend", "depth_trend", "edge_gap", "group_norms"]


@dataclass(frozen=True)
class DepthTrend:
    """Trend of a log10 profile over layer position (0 = input side).

    ``slope`` is the Theil-Sen slope in decades per layer (positive: the
    quantity grows toward the loss) with its 95% interval; ``rho``/``rho_p``
    Spearman's correlation with position; ``tau``/``tau_p`` Kendall's, whose
    exact p-value stays honest for a handful of layers; ``gap`` the
    loss-side level minus the input-side level (``edge_gap``) and
    ``fitted`` the slope times the span, both in decades.
    """

    slope: float
    slope_low: float
    slope_high: float
    rho: float
    rho_p: float
    tau: float
    tau_p: float
    gap: float
    fitted: float
    n: int


def edge_gap(profile: np.ndarray, frac: float = 0.25) -> float:
    """Mean of the last ``frac`` of a profile minus the mean of the first.

    Each end holds at least one value; averaging a few layers keeps one odd
    layer at either end from deciding the gap alone.
    """
    y = np.asarray(profile, dtype=np.float64)
    k = max(1, int(len(y) * frac))
    if len(y) < 2:
        return float("nan")
    return float(np.mean(y[-k:]) - np.mean(y[:k]))


def depth_trend(profile: np.ndarray, max_points: int = 500) -> DepthTrend | None:
    """Trend of ``profile`` (log10 values ordered input -> loss) over position.

    Non-finite entries are dropped (positions keep their place); ``None``
    with fewer than 3 finite layers or a constant profile. Profiles longer
    than ``max_points`` are reduced to medians of consecutive layers first,
    since Theil-Sen costs O(n^2) time and memory.
    """
    y, x = reduce(profile, np.arange(len(profile), dtype=np.float64), max_points)
    if len(y) < 3 or np.ptp(y) == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny n: scipy warns about its own approximations
        t = trend(y, x, max_points=max_points)
        rho, rho_p = stats.spearmanr(x, y)
    return DepthTrend(
        slope=t.slope, slope_low=t.slope_low, slope_high=t.slope_high,
        rho=float(np.nan_to_num(rho)), rho_p=_p(rho_p), tau=float(np.nan_to_num(t.tau)), tau_p=_p(t.p),
        gap=edge_gap(y), fitted=float(t.slope * (x[-1] - x[0])), n=len(y),
    )


def group_norms(values: np.ndarray, groups: Sequence[G]) -> tuple[np.ndarray, list[G]]:
    """Combine columns that share a group label into one L2 norm per row.

    ``values`` is (rows x columns) of norms; a group's norm is the root of
    the sum of its members' squares over the members that are finite (NaN
    when none is). Groups come back in order of first appearance.
    """
    values = np.asarray(values, dtype=np.float64)
    order: list[G] = []
    index: dict[G, int] = {}
    for g in groups:
        if g not in index:
            index[g] = len(order)
            order.append(g)
    cols = np.array([index[g] for g in groups], dtype=np.int64)
    if len(order) == len(cols) and np.array_equal(cols, np.arange(len(cols))):
        return np.abs(values), order  # one member per group: nothing to combine
    finite = np.isfinite(values)
    onehot = np.zeros((len(cols), len(order)))
    onehot[np.arange(len(cols)), cols] = 1.0
    out = (np.where(finite, values, 0.0) ** 2) @ onehot
    count = finite.astype(np.float64) @ onehot
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, np.sqrt(out), np.nan), order


def _p(p: float) -> float:
    return float(p) if np.isfinite(p) else 1.0
