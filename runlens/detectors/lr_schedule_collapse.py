"""lr_schedule_collapse: the learning rate falls by orders of magnitude early (a per-batch scheduler)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, register
from runlens.detectors._bugs import steps_per_epoch
from runlens.detectors._require import at_least

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


@register
class LrScheduleCollapse(Detector):
    """The logged learning rate collapses by orders of magnitude early in the run and stays there:
    typically a per-epoch scheduler stepped once per batch.

    What it detects:
        A learning rate that falls to ``max_fraction`` of its peak so far
        (three decades by default) within the first ``max_run_share`` of the
        run and, when the epoch length is known (the ``epoch`` column or the
        config), within the first ``max_epochs`` epochs, and never recovers (a warm restart or a cyclic
        schedule comes back up; a cosine or step decay reaches such a low
        only at the end). ``StepLR``/``ExponentialLR``/``MultiStepLR``
        stepped per batch does this: ``gamma`` applied per step instead of
        per epoch. When the recorder logs ``scheduler_steps`` and
        ``optimizer_steps``, their ratio is in the evidence (about 1: the
        scheduler stepped with every batch).

    Why it matters:
        Every step after the collapse does almost nothing: the run looks
        converged or stuck, and the usual reading ("learning rate too low,
        raise it") does not help, since the schedule drives any starting
        rate to ~0 in the same number of steps.

    How it decides:
        On ``scalars.lr``: ``collapse_step`` is the first step whose rate is
        at most ``max_fraction`` of the largest rate before it (a warmup's
        tiny start does not count: the peak comes first). It fires when that
        step is within the first ``max_run_share`` of the logged steps and the
        first ``max_epochs`` epochs (when the epoch length is known; a decay
        to ~0 at the end of a two-epoch fine-tune is within two epochs, not
        early), and the median rate after it stays
        below ``max_fraction`` of the peak. ``decades`` is log10(peak / the
        last rate). Severity error.

    What to try:
        Call scheduler.step() once per epoch (after the epoch's loop), not
        inside the batch loop, or, if you want a per-step schedule, express
        it in steps (step_size and T_max in optimizer steps, gamma per step
        close to 1); check the logged rate for the first epochs after any
        scheduler change.

    Parameters:
        max_fraction: rate relative to its peak that counts as collapsed (1e-3).
        max_run_share: share of the run within which the collapse counts as early (0.25).
        max_epochs: epochs within which the collapse counts as early, when the epoch length is known (2).
    """

    code = "lr_schedule_collapse"
    severity = "error"
    title = "Learning-rate schedule collapses early"
    needs = Needs(scalars=("lr", "epoch", "scheduler_steps", "optimizer_steps"), requires=("scalars.lr",))
    constraints = {"max_fraction": Interval(float, 0, 1, closed="neither"),
                   "max_run_share": Interval(float, 0, 1, closed="right"), "max_epochs": Interval(int, 1, None)}

    def __init__(self, *, max_fraction: float = 1e-3, max_run_share: float = 0.25, max_epochs: int = 2) -> None:
        self.max_fraction = max_fraction
        self.max_run_share = max_run_share
        self.max_epochs = max_epochs

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        lr = at_least(ctx.signals_of(run).lr, 10, "needs a logged learning rate on at least 10 steps")
        steps, rate = lr.steps, lr.values
        peak = np.maximum.accumulate(rate)
        low = (peak > 0) & (rate <= self.max_fraction * peak)
        if not low.any():
            return []
        i = int(np.flatnonzero(low)[0])
        at, top = int(steps[i]), float(peak[i])
        spe, spe_source = steps_per_epoch(run)
        span = steps[-1] - steps[0]
        # Both: a decay that reaches ~0 at the end of a two-epoch fine-tune is within two epochs but not
        # early in the run; a plateau scheduler's drops within a quarter of a long run are not within two epochs.
        early = at - steps[0] <= self.max_run_share * span and (spe is None or at - steps[0] <= self.max_epochs * spe)
        after = rate[i:]
        stays = float(np.median(after)) <= self.max_fraction * top
        if not early or not stays or i == len(rate) - 1:
            return []
        last = float(rate[-1])
        ev = {"collapse_step": at, "peak_lr": top, "lr_at_collapse": float(rate[i]), "last_lr": last,
              "decades": float(np.log10(top / last)) if last > 0 else None, "run_share": float((at - steps[0]) / span),
              "steps_per_epoch": spe, "steps_per_epoch_source": spe_source, **self._counts(run)}
        when = f"epoch {(at - steps[0]) // spe} (of {spe} steps)" if spe else f"{ev['run_share']:.0%} of the run"
        per = ev.get("scheduler_per_optimizer_step")
        tail = f"; the scheduler stepped {per:.2f}x per optimizer step" if per is not None else ""
        return [self.finding(
            f"the learning rate fell from {top:.3g} to {rate[i]:.3g} by step {at} ({when}) and ends at "
            f"{last:.3g}{tail}", step=at, evidence=ev)]

    @staticmethod
    def _counts(run: Run) -> dict:
        sch, opt = run.column("scalars", "scheduler_steps"), run.column("scalars", "optimizer_steps")
        if sch is None or opt is None:
            return {}
        ok = np.isfinite(sch) & np.isfinite(opt) & (opt > 0)
        if not ok.any():
            return {}
        j = np.flatnonzero(ok)[-1]
        return {"scheduler_steps": int(sch[j]), "optimizer_steps": int(opt[j]),
                "scheduler_per_optimizer_step": float(sch[j] / opt[j])}
