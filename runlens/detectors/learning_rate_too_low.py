"""learning_rate_too_low: tiny updates, healthy gradients, a loss that barely moves."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._layerstats import MAX_ROWS, MIN_MODULES, column_medians
from runlens.detectors._updates import UpdateRatios, lower_ratios, upper_ratios
from runlens.stats.depth import depth_trend
from runlens.stats.growth import Growth, growth

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run
    from runlens.signals import ModuleMatrix


@register
class LearningRateTooLow(Detector):
    """The loss barely moves while gradients are healthy in every layer and
    the updates are tiny relative to the weights.

    What it detects:
        A run whose optimizer steps change each weight matrix by a tiny
        fraction of its norm, although every layer gets a usable gradient,
        and whose loss consequently hardly falls.

    Why it matters:
        The usual healthy size of one update is around 1e-3 of the weight
        (from ~1e-2 early with Adam to ~1e-4 late in a decayed schedule). Far
        below that, the run spends its whole budget barely leaving the
        initialization: it looks converged, but nothing was learned.

    How it decides:
        For each weight matrix (ndim >= 2; every parameter when there are
        fewer than 3 matrices) the median over the run of
        ``update_norm / weight_norm`` is taken, then the median over layers.
        It fires when that ratio is below ``max_update_ratio``, no layer's
        reaches ``largest_layer_ratio`` (a module that steps by a hundredth
        of its weights is not starved by the rate), and: the loss
        barely moved (the curve was labelled ``underfitting``; or the median
        of its last 10% is less than ``max_loss_drop`` of the first 10%'s
        magnitude below it; or Kendall's test finds no falling trend at
        ``alpha``, i.e. what moved is batch noise); the curve is not
        ``diverged`` (an ``unstable`` label is not trusted over the ratio:
        with updates this small the loss's wobble is batch noise); every
        layer has a finite non-zero gradient; and the gradient profile over
        depth does not rise toward the loss by ``vanishing_decades`` or more
        (that is ``vanishing_gradients``, where the fix is different).
        Comparing updates with the weights makes the test independent of the
        model's scale and of the optimizer: SGD and Adam get one yardstick.
        Without ``update_norm`` (optional in the format) the ratio is an
        upper estimate from the learning rate (``scalars.lr``, else a
        constant ``lr`` from the config) and the gradient norms, and the
        evidence says which (``update_source``, ``update_assumption``):
        ``lr x ||g|| / ||w||``, exact for plain SGD, divided by
        ``1 - momentum`` for SGD with momentum, or ``lr x sqrt(numel) /
        ||w||`` for Adam-family optimizers (each element moves by about lr
        at most). The optimizer comes from the config when it names one;
        otherwise plain SGD is assumed only if the weight norms never
        changed faster than ``lr x ||g||`` allows (a 2x margin, float32
        rounding excepted, in 99% of the recorded intervals and 90% within
        each module), and the larger of the SGD-momentum-0.9 and Adam bounds
        is used when they did. Without a learning rate it is skipped: a
        weight norm that barely changes is only a lower bound of the update
        (an update orthogonal to the weights leaves the norm alone), no
        proof that the updates were tiny.

    What to try:
        Raise the learning rate (10x at a time, or run a learning-rate range
        test); check that the scheduler is not stuck in warm-up or decayed
        to ~0, and that the learning rate is not divided by something large
        (batch size, world size) by mistake.

    Parameters:
        max_update_ratio: largest median update/weight ratio that counts as tiny (1e-4).
        max_loss_drop: largest relative fall of the loss that counts as barely moving (0.1).
        vanishing_decades: depth rise, in decades, that points to vanishing gradients instead (2.0).
        alpha: significance level of the Kendall test for a falling loss (0.01).
        largest_layer_ratio: a module whose median update/weight reaches this is not starved, and the
            run is not called too slow (1e-2: ten times the healthy 1e-3).
    """

    code = "learning_rate_too_low"
    severity = "warning"
    title = "Learning rate too low"
    needs = Needs(scalars=("loss", "lr", "step_skipped"), layers=("grad_norm", "weight_norm", "update_norm"),
                  requires=("layers.grad_norm", "layers.weight_norm", "scalars.loss"))
    depends = ("curve",)
    constraints = {"max_update_ratio": Interval(float, 0, None, closed="neither"),
                   "max_loss_drop": Interval(float, 0, 1), "vanishing_decades": Interval(float, 0, None),
                   "alpha": Interval(float, 0, 1, closed="neither"),
                   "largest_layer_ratio": Interval(float, 0, None, closed="neither")}

    def __init__(self, *, max_update_ratio: float = 1e-4, max_loss_drop: float = 0.1,
                 vanishing_decades: float = 2.0, alpha: float = 0.01, largest_layer_ratio: float = 1e-2) -> None:
        self.max_update_ratio = max_update_ratio
        self.largest_layer_ratio = largest_layer_ratio
        self.max_loss_drop = max_loss_drop
        self.vanishing_decades = vanishing_decades
        self.alpha = alpha

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        label = ctx.curve.label if ctx.curve is not None else None
        if label == "insufficient_data":
            raise Skip("the loss curve is too short to say whether it barely moved")
        if label == "diverged":
            return []
        lay = ctx.signals_of(run).layers
        wts = lay.modules("weight_norm", max_rows=MAX_ROWS, with_next=True) if lay else None
        grads = lay.modules("grad_norm", max_rows=MAX_ROWS, with_next=True) if lay else None
        if wts is None or grads is None or grads.values.shape != wts.values.shape:
            raise Skip("needs per-layer gradient and weight norms")
        ratios = self._ratios(run, ctx, wts, grads)
        ratio = ratios.values
        per_layer = column_medians(ratio)
        if not np.isfinite(per_layer).any():
            raise Skip("no finite update/weight ratio in any layer")
        median_ratio = float(np.nanmedian(per_layer))
        if median_ratio >= self.max_update_ratio or float(np.nanmax(per_layer)) >= self.largest_layer_ratio:
            # One module stepping by a hundredth of its weights is not starved: a higher rate would
            # make its steps larger still (summed losses whose head moves 64% a step).
            return []
        with np.errstate(all="ignore"):
            grad_level = np.log10(column_medians(grads.values))
        if not np.isfinite(grad_level).all():
            return []  # a layer whose typical gradient is zero or missing: dead, not a learning rate
        drop, loss_trend = _loss_drop(run, ctx)
        falling = loss_trend is not None and loss_trend.p <= self.alpha and loss_trend.slope < 0
        if not (label == "underfitting" or (drop is not None and drop < self.max_loss_drop) or not falling):
            return []
        trend = depth_trend(grad_level) if len(grad_level) >= MIN_MODULES else None
        if trend is not None and min(trend.gap, trend.fitted) >= self.vanishing_decades and trend.rho > 0:
            return []
        lr = ctx.signals_of(run).lr
        lr_med = None if lr is None else float(np.median(lr.values))
        if drop is None:
            moved = "moved by an unknown amount"
        else:
            moved = f"fell {drop:.1%}" if drop >= 0 else f"rose {-drop:.1%}"
        if not falling:
            moved += " (no significant downward trend)"
        return [self.finding(
            f"updates are tiny relative to the weights (median update/weight {median_ratio:.1e} < "
            f"{self.max_update_ratio:.0e}{_HOW.get(ratios.source, '')}) while the loss {moved}",
            evidence={
                "median_update_ratio": median_ratio,
                "update_ratio_range": [float(np.nanmin(per_layer)), float(np.nanmax(per_layer))],
                "loss_relative_drop": drop, "curve": label, "lr_median": lr_med,
                "loss_kendall_tau": None if loss_trend is None else loss_trend.tau,
                "loss_kendall_p": None if loss_trend is None else loss_trend.p,
                "grad_norm_log10_range": [float(grad_level.min()), float(grad_level.max())],
                "depth_gap_decades": None if trend is None else trend.gap,
                "modules": len(wts.modules), **ratios.evidence(),
                "step_range": [int(wts.steps[0]), int(wts.steps[-1])] if len(wts.steps) else None,
            },
        )]

    @staticmethod
    def _ratios(run: Run, ctx: Context, wts: ModuleMatrix, grads: ModuleMatrix) -> UpdateRatios:
        """Measured update/weight ratios, else an upper estimate from lr and the gradients (or Skip)."""
        upd = ctx.signals_of(run).layers.modules("update_norm", max_rows=MAX_ROWS, with_next=True)
        if upd is not None and upd.values.shape == wts.values.shape:
            with np.errstate(all="ignore"):
                values = np.where(wts.values > 0, upd.values / wts.values, np.nan)
            return UpdateRatios(wts.steps, values, "update_norm", "measured")
        estimate, why = upper_ratios(run, wts, grads)
        if estimate is None:
            raise Skip(why + ": tiny updates cannot be told (a weight norm that barely changes is no proof)")
        lower = lower_ratios(wts)
        if lower is not None and np.isfinite(lower.values).any() and \
                np.nanmedian(column_medians(lower.values)) > np.nanmedian(column_medians(estimate.values)):
            raise Skip("the weight norms changed faster than the estimated updates allow: the optimizer "
                       "assumption does not hold")
        return estimate


_HOW = {"lr_x_grad_norm": ", estimated as lr x gradient norm",
        "lr_x_sqrt_numel": ", bounded by lr x sqrt(numel)"}


def _loss_drop(run: Run, ctx: Context) -> tuple[float | None, Growth | None]:
    """Fall of the loss from its first 10% to its last 10% relative to the
    start, and its Kendall/Theil-Sen trend over steps."""
    series = ctx.signals_of(run).loss
    loss, steps = series.values, series.steps
    if len(loss) < 10:
        return None, None
    k = max(1, len(loss) // 10)
    early, late = float(np.median(loss[:k])), float(np.median(loss[-k:]))
    return (None if early == 0 else (early - late) / abs(early)), growth(steps, loss)
