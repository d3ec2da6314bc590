"""vanishing_gradients: gradients shrink toward the input."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import untrained
from runlens.detectors._layerstats import (
    MAX_NAMED,
    MAX_ROWS,
    MIN_MODULES,
    ModuleMatrix,
    column_medians,
    fmt_p,
    log10_positive,
)
from runlens.stats.depth import depth_trend

WINDOWS = 4

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run
    from runlens.stats.depth import DepthTrend


@register
class VanishingGradients(Detector):
    """Gradient norms shrink with distance from the loss, so the layers near
    the input barely learn.

    What it detects:
        A per-layer gradient profile that falls steadily, by orders of
        magnitude, from the layers next to the loss to the layers next to the
        input, and stays that way for most of the run.

    Why it matters:
        Backpropagation multiplies one Jacobian per layer; with saturating
        activations (sigmoid, tanh) or too-small weights each factor is below
        one and the product decays exponentially with depth. The first layers
        then receive almost no signal and stay near their initialization,
        so the network behaves like a much shallower one.

    How it decides:
        Each module's weight matrices are combined into one gradient norm
        (biases and norm gains have much smaller norms and would zig-zag the
        profile), and the modules are ordered by depth (run.json ``index``).
        The median log10 gradient norm per module is the profile, taken over
        the whole run and then over each quarter of it (an adaptive optimizer
        may repair the profile late, after the early layers were starved;
        evidence from a quarter alone must be twice as strong,
        ``min_window_decades``). It fires when, in one of these windows, all
        of these hold: the profile rises toward the loss by at least
        ``min_decades`` decades, both as the Theil-Sen
        slope times the depth span and as the gap between the loss-side and
        input-side quarters of the modules; Spearman's rho with depth is at
        least ``min_rho`` and the Theil-Sen 95% interval excludes zero;
        Kendall's tau is significant at ``alpha`` (with so few modules that
        no ranking can reach ``alpha``, the smallest exact p being 2/n!,
        e.g. 5 modules and ``alpha`` 0.01, a strictly monotone profile is
        required instead); the same gap of ``min_decades`` shows at a
        fraction ``min_consistency`` of the window's recorded steps; and the gradient
        relative to the weight norm (||g||/||w||) falls toward the input by
        at least half as many decades, so that widths alone cannot explain it.
        A gradient that is small in every layer has no depth trend and does
        not fire (that is a learning rate or loss-scale question).
        Modules the optimizer does not train are left out of the profile: a
        parameter in run.json ``params_outside_optimizer`` or
        ``params_without_grad``, or marked ``trainable`` false (an untrained
        head passes back a gradient scaled by its random weights, not by the
        chain of Jacobians this test is about).
        Needs at least 3 trained modules; steps after a non-finite loss are ignored.

    What to try:
        Replace saturating activations (sigmoid, tanh) with ReLU/GELU; use the
        initialization made for the activation (He for ReLU, Xavier for
        tanh); add normalization (BatchNorm, LayerNorm) or residual
        connections; make the network shallower. Adam-style optimizers hide
        part of the effect but do not remove it.

    Parameters:
        min_decades: smallest rise, in decades, from input to loss over the whole run (2.0).
        min_window_decades: the same when only a quarter of the run shows it (4.0).
        min_rho: smallest Spearman correlation of log gradient with depth (0.8).
        alpha: significance level of Kendall's test over the modules (0.01).
        min_consistency: fraction of a window's recorded steps that must show the gap (0.5).
    """

    code = "vanishing_gradients"
    severity = "warning"
    title = "Vanishing gradients"
    needs = Needs(layers=("grad_norm", "weight_norm", "update_norm"), requires=("layers.grad_norm",))
    constraints = {"min_decades": Interval(float, 0, None, closed="neither"),
                   "min_window_decades": Interval(float, "min_decades", None),
                   "min_rho": Interval(float, 0, 1, closed="right"),
                   "alpha": Interval(float, 0, 1, closed="neither"),
                   "min_consistency": Interval(float, 0, 1)}

    def __init__(self, *, min_decades: float = 2.0, min_window_decades: float = 4.0, min_rho: float = 0.8,
                 alpha: float = 0.01, min_consistency: float = 0.5) -> None:
        self.min_decades = min_decades
        self.min_window_decades = min_window_decades
        self.min_rho = min_rho
        self.alpha = alpha
        self.min_consistency = min_consistency

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        lay = ctx.signals_of(run).layers
        grads = lay.modules("grad_norm", max_rows=MAX_ROWS) if lay else None
        if grads is None or len(grads.modules) < MIN_MODULES:
            raise Skip(f"needs per-layer gradients of at least {MIN_MODULES} modules")
        keep = _trained_modules(run, grads)
        if keep.sum() < MIN_MODULES:
            raise Skip(f"needs per-layer gradients of at least {MIN_MODULES} modules the optimizer trains")
        every = grads.modules
        grads = _columns(grads, keep)
        logg = log10_positive(grads.values)
        rows = np.isfinite(logg).sum(axis=1) >= MIN_MODULES
        if not rows.any():
            raise Skip("no recorded step has finite gradients in 3 modules")
        weights = lay.modules("weight_norm", max_rows=MAX_ROWS)
        weights = None if weights is None or weights.modules != every else _columns(weights, keep)
        with np.errstate(all="ignore"):
            logr = None if weights is None or weights.values.shape != grads.values.shape else \
                log10_positive(grads.values / weights.values)
        idx = np.flatnonzero(rows)
        updates = lay.modules("update_norm", max_rows=MAX_ROWS)
        updates = None if updates is None or updates.modules != every else _columns(updates, keep)
        with np.errstate(all="ignore"):
            upd = None if updates is None or weights is None or updates.values.shape != weights.values.shape \
                else updates.values / weights.values
        # The whole run first, then each quarter: an adaptive optimizer can
        # repair the profile late in the run, and the early stretch still
        # starved the first layers.
        windows = [(idx, self.min_decades), *((w, self.min_window_decades) for w in np.array_split(idx, WINDOWS))]
        for window, decades in windows:
            found = self._window(grads, logg, logr, window, decades, upd)
            if found is not None:
                return [found]
        return []

    def _window(self, grads: ModuleMatrix, logg: np.ndarray, logr: np.ndarray | None, window: np.ndarray,
                decades: float, upd: np.ndarray | None) -> Finding | None:
        if len(window) == 0 or logr is None:
            return None
        profile = column_medians(logg[window])
        trend = depth_trend(profile)
        if trend is None or not self._profile_vanishes(trend, decades):
            return None
        k = max(1, len(grads.modules) // 4)
        gaps = _nanmean(logg[window][:, -k:]) - _nanmean(logg[window][:, :k])
        consistency = float(np.mean(gaps >= decades))
        rel = depth_trend(column_medians(logr[window]))
        if consistency < self.min_consistency or rel is None or rel.gap < decades / 2:
            return None
        drop = min(trend.gap, trend.fitted)
        starved = [m for j, m in enumerate(grads.members) if profile[j] <= profile[-k:].mean() - self.min_decades]
        steps = grads.steps[window]
        span = "" if decades == self.min_decades else f" in steps {int(steps[0])}-{int(steps[-1])}"
        return self.finding(
            f"gradient norm falls {drop:.1f} decades from the loss to the input{span} (>= {decades:g}; "
            f"{trend.slope:.2f} decades/layer, Spearman rho={trend.rho:.2f}, Kendall p={fmt_p(trend.tau_p)})",
            step=int(steps[np.flatnonzero(gaps >= decades)[0]]),
            layers=[name for group in starved for name in group][:MAX_NAMED],
            evidence={
                "decades": drop, "edge_gap_decades": trend.gap, "fitted_decades": trend.fitted,
                "slope_decades_per_layer": trend.slope, "slope_ci95": [trend.slope_low, trend.slope_high],
                "spearman_rho": trend.rho, "spearman_p": trend.rho_p, "kendall_tau": trend.tau,
                "kendall_p": trend.tau_p, "modules": len(grads.modules),
                "steps_showing_gap": consistency, "relative_gap_decades": rel.gap,
                "starved_modules": len(starved), **self._update_ratios(upd, window, k),
                "step_range": [int(steps[0]), int(steps[-1])],
                "profile_log10": {m: float(v) for m, v in zip(grads.modules[:50], profile[:50], strict=True)},
            },
        )

    @staticmethod
    def _update_ratios(upd: np.ndarray | None, window: np.ndarray, k: int) -> dict:
        """Median update/weight of the input-side and loss-side quarters: with
        SGD the starved layers barely move; Adam rescales their steps."""
        if upd is None:
            return {}
        level = column_medians(upd[window])
        return {"update_ratio_input_side": float(np.nanmedian(level[:k])) if np.isfinite(level[:k]).any() else None,
                "update_ratio_loss_side": float(np.nanmedian(level[-k:])) if np.isfinite(level[-k:]).any() else None}

    def _profile_vanishes(self, trend: DepthTrend, decades: float) -> bool:
        if min(trend.gap, trend.fitted) < decades or trend.rho < self.min_rho or trend.slope_low <= 0:
            return False
        if 2 / math.factorial(trend.n) > self.alpha:  # no ranking of so few modules reaches alpha
            return trend.tau >= 1 - 1e-9  # strictly monotone (kendalltau rounds 1 to 0.999...)
        return trend.tau_p <= self.alpha and trend.tau > 0


def _trained_modules(run: Run, grads: ModuleMatrix) -> np.ndarray:
    """Per module: whether the optimizer trains it. A module with a parameter
    outside every param group (run.json ``params_outside_optimizer``), one
    without a gradient (``params_without_grad``) or one marked frozen keeps
    its initialization, so its gradient says nothing of how depth attenuates
    the signal: a random head scales the gradient it passes on by its own
    initial weights, not by the Jacobian chain the test is about."""
    left_out = untrained(run).names()
    return np.array([not any(n in left_out for n in members) for members in grads.members], dtype=bool)


def _columns(m: ModuleMatrix, keep: np.ndarray) -> ModuleMatrix:
    """``m`` with only the modules ``keep`` marks (the matrices share one module order)."""
    if keep.all():
        return m
    idx = np.flatnonzero(keep)
    return ModuleMatrix(steps=m.steps, modules=tuple(m.modules[j] for j in idx),
                        members=tuple(m.members[j] for j in idx), values=m.values[:, idx])


def _nanmean(a: np.ndarray) -> np.ndarray:
    n = np.isfinite(a).sum(axis=1)
    s = np.where(np.isfinite(a), a, 0).sum(axis=1)
    return np.where(n > 0, s / np.maximum(n, 1), np.nan)
