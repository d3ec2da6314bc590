"""Oscillating or diverging loss with updates large relative to the weights."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Context, Detector, Needs, Skip, register
from runlens.detectors._layerstats import column_medians, module_matrix
from runlens.detectors._nonfinite import global_grad_norm
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run

ADVICE = ("Lower the learning rate (3-10x at a time, or run a learning-rate range test); add a "
          "warmup and a decay schedule; clip gradient norms; with Adam, check eps and beta2.")


@register
class LearningRateTooHigh(Detector):
    """The loss oscillates or diverges while each step changes the weights by a large fraction.

    What it detects:
        A run whose loss curve is ``unstable`` (bounces without settling) or
        ``diverged`` (NaN/Inf, or grows without bound) while its optimizer
        steps are large relative to the weights they change.

    Why it matters:
        A healthy step moves a weight matrix by around 1e-3 of its norm (up
        to ~1e-2 early with Adam). Steps of several percent jump across the
        valley instead of descending it: the loss oscillates, and with a
        little more, explodes. Lowering the learning rate is then the fix;
        for a NaN with ordinary step sizes (a log(0), a division by zero) it
        is not, which is why the step size is measured, not assumed.

    How it decides:
        Only when the curve verdict is ``unstable`` or ``diverged``. For each
        weight matrix (ndim >= 2; every parameter when there are fewer than
        3) the median over the run, before any non-finite loss, of
        ``update_norm / weight_norm``; then the median over modules. It
        fires when that exceeds ``min_update_ratio`` (1e-2: ten times the
        1e-3 rule of thumb; healthy runs do reach it early with Adam, which
        is why the curve has to be unstable or diverged too). A NaN reached while the gradient norm was steady
        (the last 5 norms before it below ``healthy_growth`` times the
        median of the 200 before) is a numerical fault and does not count.
        Severity error when diverged (the run is broken), warning when
        unstable.
        Without per-layer update norms an ``unstable`` curve still fires, as
        a warning that says the step size was not measured (an unstable
        finite curve is, in practice, a learning rate too high); a
        ``diverged`` curve fires (error) only if the global gradient norm grew
        ``min_explosion`` times (100x) above its early median before the loss
        diverged: an explosion, which steps too large cause, rather than a
        numerical bug.

    What to try:
        Lower the learning rate (3-10x at a time, or run a learning-rate
        range test); add a warmup and a decay schedule; clip gradient norms;
        with Adam, check eps and beta2.

    Parameters:
        min_update_ratio: median update/weight ratio above which steps count
        as too large (1e-2). healthy_growth: growth of the gradient norm just
        before a NaN below which the NaN is numerical (3.0). min_explosion:
        growth of the gradient norm over its early median that counts as an
        explosion when update norms were not recorded (100.0).
    """

    code = "learning_rate_too_high"
    severity = "warning"
    title = "Learning rate too high"
    needs = Needs(scalars=("loss", "lr", "grad_norm"), layers=("weight_norm", "update_norm", "grad_norm"),
                  requires=("scalars.loss",))

    def __init__(self, *, min_update_ratio: float = 1e-2, healthy_growth: float = 3.0,
                 min_explosion: float = 100.0) -> None:
        self.min_update_ratio = min_update_ratio
        self.healthy_growth = healthy_growth
        self.min_explosion = min_explosion

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        label = ctx.curve.label if ctx.curve is not None else None
        if label not in ("unstable", "diverged"):
            return []
        severity = "error" if label == "diverged" else "warning"
        if label == "diverged" and ctx.first_nonfinite_step is not None and self._numerical(run, ctx):
            return []
        lr = run.column("scalars", "lr")
        lr_med = float(np.nanmedian(lr)) if lr is not None and np.isfinite(lr).any() else None
        upd = module_matrix(run, "update_norm", ctx)
        wts = module_matrix(run, "weight_norm", ctx)
        if upd is None or wts is None or upd.values.shape != wts.values.shape or upd.values.shape[0] == 0:
            if label != "unstable":
                return self._explosion_without_updates(run, ctx, lr_med)
            return [self.finding(
                "the loss is unstable (update sizes not recorded, so the step size is not measured)",
                evidence={"curve": label, "lr_median": lr_med, "median_update_ratio": None},
                advice=ADVICE)]
        with np.errstate(all="ignore"):
            ratio = np.where(wts.values > 0, upd.values / wts.values, np.nan)
        per_module = column_medians(ratio)
        if not np.isfinite(per_module).any():
            return []
        median_ratio = float(np.nanmedian(per_module))
        if not median_ratio > self.min_update_ratio:
            return []
        top = np.argsort(-np.nan_to_num(per_module, nan=-1.0))[:20]
        big = [m for m, r in zip(upd.modules, per_module, strict=True) if r > self.min_update_ratio]
        layers = [n for m, group in zip(upd.modules, upd.members, strict=True) if m in big for n in group]
        return [self.finding(
            f"the loss is {label} and each step changes the weights by {median_ratio:.1%} of their norm "
            f"(median update/weight {median_ratio:.2g} > {self.min_update_ratio:g})",
            severity=severity, layers=layers,
            evidence={"curve": label, "median_update_ratio": median_ratio,
                      "largest_update_ratios": {upd.modules[j]: float(per_module[j]) for j in top},
                      "lr_median": lr_med, "min_update_ratio": self.min_update_ratio},
            advice=ADVICE)]

    def _explosion_without_updates(self, run: Run, ctx: Context, lr_med: float | None) -> list[Finding]:
        """A diverged run without update norms: fire only on a gradient explosion before it.

        A gradient norm that grew ``min_explosion`` times above its early level
        before the loss diverged is what steps too large produce; without that
        (or without a logged gradient norm) a too-high learning rate cannot be
        told from a numerical bug, and the detector says nothing.
        """
        found = global_grad_norm(run)
        if found is None:
            raise Skip("needs per-layer update norms or a gradient norm to tell a too-high learning "
                       "rate from a numerical NaN")
        steps, norms, _ = found
        end = ctx.first_nonfinite_step
        norms = norms[steps < end] if end is not None else norms
        norms = norms[np.isfinite(norms)]
        if norms.size < 10:
            return []
        early = float(np.median(norms[: max(5, norms.size // 10)]))
        peak = float(np.max(norms))
        if not (early > 0 and peak >= self.min_explosion * early):
            return []
        growth = float(np.log10(peak / early))
        return [self.finding(
            f"the loss diverged after the gradient norm grew {growth:.1f} decades (>= "
            f"{np.log10(self.min_explosion):.0f}); update sizes were not recorded, so the step size "
            "is inferred, not measured", severity="error",
            evidence={"curve": "diverged", "grad_norm_early_median": early, "grad_norm_peak": peak,
                      "growth_decades": growth, "lr_median": lr_med, "median_update_ratio": None},
            advice=ADVICE)]

    def _numerical(self, run: Run, ctx: Context) -> bool:
        """Whether the gradient norm was steady right up to the first NaN loss.

        Then the NaN is a numerical fault (log(0), 0/0, fp16 overflow), not
        steps too large: the last 5 finite norms before it stay below
        ``healthy_growth`` times the median of the 200 before those.
        """
        found = global_grad_norm(run)
        if found is None:
            return False
        steps, norms, _ = found
        before = norms[(steps < ctx.first_nonfinite_step)]
        if before.size < 10 or not np.isfinite(before[-5:]).all():
            return False
        base = before[-205:-5]
        base = base[np.isfinite(base)]
        if base.size == 0 or not np.median(base) > 0:
            return False
        return bool(np.max(before[-5:]) < self.healthy_growth * np.median(base))
