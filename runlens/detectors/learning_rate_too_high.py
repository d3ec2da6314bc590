"""Oscillating or diverging loss with updates large relative to the weights."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, Skip, register
from runlens.detectors._layerstats import column_medians
from runlens.detectors._updates import step_ratios
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Signals

WINDOWS = 4


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
        Only when the curve verdict is ``unstable`` or ``diverged``, and
        only with evidence of the step size: never from the curve alone.
        For each weight matrix (ndim >= 2; every parameter when there are
        fewer than 3) the update/weight ratio at each recorded step before
        any non-finite loss: ``update_norm / weight_norm`` when logged
        (measured), else ``|change of the weight norm| / (steps x weight
        norm)`` between records, a lower bound of the mean update (triangle
        inequality: it can show that steps were large, never that they were
        small). The evidence's ``update_source`` says which. It fires when
        the median over modules of their median ratio exceeds
        ``min_update_ratio`` (1e-2: ten times the 1e-3 rule of thumb;
        healthy runs do reach it early with Adam, which is why the curve
        has to be unstable or diverged too), or when in one quarter of the
        run it reaches ``min_window_ratio`` (an update a tenth of the
        weights or more, the oscillation's own stretch), or when one module's
        own median ratio does (that layer jumps by a tenth of its weights at
        every step, whatever the others do: weights that grew shrink the
        others' ratios while the rate stays too high). A NaN reached
        while the gradient norm was steady (the last 5 norms before it
        below ``healthy_growth`` times the median of the 200 before) is a
        numerical fault and does not count. It also fires, whatever the
        step sizes, when the logged learning rate was raised by
        ``min_lr_raise`` or more from one record to the next and the loss
        peaked (or became non-finite) at or after that step: the curve went
        wrong once the rate went up (warmups rise by small increments and
        never qualify). It also fires when the curve is unstable because its
        validation loss jumps while the steps of the second half are large
        (``kind: val_jumps`` with the curve's ``late_update_ratio``: the
        curve's own measurement, see its entry). Severity error when diverged
        (the run is broken), warning when unstable. Without update norms
        or weight norms it is skipped: an unstable curve alone does not say
        that the steps were too large.

    What to try:
        Lower the learning rate (3-10x at a time, or run a learning-rate
        range test); add a warmup and a decay schedule; clip gradient norms;
        with Adam, check eps and beta2.

    Parameters:
        min_update_ratio: median update/weight ratio above which steps count
        as too large (1e-2). min_window_ratio: the same within one quarter of
        the run (0.1). healthy_growth: growth of the gradient norm just
        before a NaN below which the NaN is numerical (3.0). min_lr_raise:
        one-record raise of the learning rate that explains a curve going
        wrong after it (5.0: half an order of magnitude at once).
    """

    code = "learning_rate_too_high"
    severity = "warning"
    severities = ("warning", "error")  # an error when the curve diverged
    title = "Learning rate too high"
    needs = Needs(scalars=("loss", "lr", "step_skipped", "grad_norm", "loss_scale"),
                  layers=("weight_norm", "update_norm", "grad_norm"), requires=("scalars.loss",))
    depends = ("curve",)
    constraints = {"min_update_ratio": Interval(float, 0, None, closed="neither"),
                   "min_window_ratio": Interval(float, 0, None, closed="neither"),
                   "healthy_growth": Interval(float, 1, None), "min_lr_raise": Interval(float, 1, None)}

    def __init__(self, *, min_update_ratio: float = 1e-2, min_window_ratio: float = 0.1,
                 healthy_growth: float = 3.0, min_lr_raise: float = 5.0) -> None:
        self.min_lr_raise = min_lr_raise
        self.min_update_ratio = min_update_ratio
        self.min_window_ratio = min_window_ratio
        self.healthy_growth = healthy_growth

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        label = ctx.curve.label if ctx.curve is not None else None
        if label not in ("unstable", "diverged"):
            return []
        sig = ctx.signals_of(run)
        if label == "diverged" and sig.first_nonfinite_step is not None and self._numerical(sig):
            return []
        raised = self._raise(sig)
        try:
            ratio, source, modules = step_ratios(sig)
        except Skip:
            if raised is None:
                raise
            return [self._raise_finding(label, raised)]
        per_module = column_medians(ratio)
        if not np.isfinite(per_module).any():
            raise Skip("no finite update/weight ratio in any module")
        median_ratio = float(np.nanmedian(per_module))
        per_step = np.nanmedian(np.where(np.isfinite(ratio), ratio, np.nan), axis=1)
        quarters = [float(np.nanmedian(q)) if np.isfinite(q).any() else float("nan")
                    for q in np.array_split(per_step, WINDOWS) if len(q)]
        peak = max((q for q in quarters if np.isfinite(q)), default=float("nan"))
        worst = int(np.nanargmax(per_module))
        one_layer = float(per_module[worst]) >= self.min_window_ratio
        # The curve already measured the late steps when they explain its validation jumps: one rule, read.
        ev = ctx.curve.evidence if ctx.curve is not None else {}
        late = ev.get("late_update_ratio") if ev.get("kind") == "val_jumps" else None
        if not (median_ratio > self.min_update_ratio or peak >= self.min_window_ratio or one_layer or late):
            return [] if raised is None else [self._raise_finding(label, raised)]
        top = np.argsort(-np.nan_to_num(per_module, nan=-1.0))[:20]
        big = {m for m, r in zip(modules.modules, per_module, strict=True) if r > self.min_update_ratio}
        layers = [n for m, group in zip(modules.modules, modules.members, strict=True) if m in big for n in group]
        bound = " at least" if source == "weight_norm_change" else ""
        if median_ratio > self.min_update_ratio:
            how = (f"by{bound} {median_ratio:.1%} of their norm (median update/weight {median_ratio:.2g} > "
                   f"{self.min_update_ratio:g})")
        elif peak >= self.min_window_ratio:
            how = (f"by{bound} {peak:.1%} of their norm in one quarter of the run (>= {self.min_window_ratio:g}; "
                   f"median over the run {median_ratio:.2g})")
        elif one_layer:
            how = (f"of module {modules.modules[worst]} by{bound} {per_module[worst]:.1%} of their norm at the median "
                   f"step (>= {self.min_window_ratio:g}; median over modules {median_ratio:.2g})")
        else:
            how = (f"by{bound} {late:.1%} of their norm in the second half of the run, while the validation loss "
                   f"jumps between evaluations (module {ev.get('late_largest_module')}: "
                   f"{ev.get('late_largest_module_ratio', 0.0):.1%}; median over the run {median_ratio:.2g})")
        lr = sig.lr
        return [self.finding(
            f"the loss is {label} and each step changes the weights {how}",
            severity="error" if label == "diverged" else "warning", layers=layers,
            evidence={"curve": label, "median_update_ratio": median_ratio, "quarter_update_ratios": quarters,
                      "largest_update_ratios": {modules.modules[j]: float(per_module[j]) for j in top},
                      "update_source": source, "lr_median": None if lr is None else float(np.median(lr.values)),
                      "min_update_ratio": self.min_update_ratio})]

    def _raise(self, sig: Signals) -> dict[str, Any] | None:
        """The largest one-record raise of the logged learning rate, when it is
        ``min_lr_raise`` or more and the loss peaked (or became non-finite) at
        or after it: the curve went wrong once the rate was raised, whatever
        the step sizes looked like before (a schedule's step, a misplaced
        decimal). Warmups rise by small increments and never qualify."""
        lr = sig.lr
        if lr is None or lr.values.size < 2:
            return None
        prev, cur = lr.values[:-1], lr.values[1:]
        with np.errstate(all="ignore"):
            ratio = np.where((prev > 0) & np.isfinite(prev) & np.isfinite(cur), cur / prev, np.nan)
        if not np.isfinite(ratio).any():
            return None
        i = int(np.nanargmax(ratio))
        at = int(lr.steps[i + 1])
        peak = sig.first_nonfinite_step
        if peak is None and sig.loss.values.size:
            peak = int(sig.loss.steps[int(np.argmax(sig.loss.values))])
        if not ratio[i] >= self.min_lr_raise or peak is None or peak < at:
            return None
        return {"lr_raise": float(ratio[i]), "lr_raise_step": at, "lr_before": float(prev[i]),
                "lr_after": float(cur[i]), "loss_peak_step": int(peak)}

    def _raise_finding(self, label: str, r: dict) -> Finding:
        return self.finding(
            f"the loss is {label} after the learning rate was raised {r['lr_raise']:.3g}x at step "
            f"{r['lr_raise_step']:,} (from {r['lr_before']:.3g} to {r['lr_after']:.3g}); the loss peaked at step "
            f"{r['loss_peak_step']:,}", step=r["lr_raise_step"],
            severity="error" if label == "diverged" else "warning",
            evidence={"curve": label, **r, "min_lr_raise": self.min_lr_raise})

    def _numerical(self, sig: Signals) -> bool:
        """Whether the gradient norm was steady right up to the first NaN loss.

        Then the NaN is a numerical fault (log(0), 0/0, fp16 overflow), not
        steps too large: the last 5 finite norms before it stay below
        ``healthy_growth`` times the median of the 200 before those.
        """
        if sig.grad_norm is None:
            return False
        before = sig.grad_norm.before(sig.first_nonfinite_step).values
        if before.size < 10 or not np.isfinite(before[-5:]).all():
            return False
        base = before[-205:-5]
        base = base[np.isfinite(base)]
        if base.size == 0 or not np.median(base) > 0:
            return False
        return bool(np.max(before[-5:]) < self.healthy_growth * np.median(base))

