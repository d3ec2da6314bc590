"""The ``nonfinite_loss`` detector: the training loss became NaN or Inf."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, register
from runlens.detectors._nonfinite import activation_culprit, recent_growth
from runlens.detectors.curve.diverged import masked_nan
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Signals


@register
class NonfiniteLoss(Detector):
    """The training loss became NaN or Inf; says whether gradients exploded first.

    What it detects:
        The first step whose training loss is NaN, +Inf or -Inf, and which
        kind of failure led there: an *explosion* (the gradient norm grew
        by orders of magnitude, or was already non-finite, in the steps
        just before) or a *numerical* fault (gradient norms were healthy
        right up to it: a log of zero, a division by zero, an overflow in
        half precision, a bad sample). Also a loss that collapses to exactly
        0 at the step where the gradient norm becomes non-finite: a NaN
        masked as 0 (``cause: masked``). Runs on logs of any length: a
        dozen lines pasted into an issue are judged too (the evidence gives
        ``points_before`` when fewer than 20 finite losses came first).

    Why it matters:
        Once the loss is NaN every weight it touches becomes NaN and
        nothing after that step means anything. The two causes have
        different fixes, so telling them apart saves the usual guessing.

    How it decides:
        ``step`` is the first non-finite loss. The gradient norm (scalars
        ``grad_norm``, else the L2 norm over the layers table, leaving out
        steps a loss scaler skipped) is split into the last ``recent``
        recorded values before that step and up to ``baseline`` values
        before those. ``growth`` is the largest recent value over the
        baseline median (the evidence adds the robust z-score of its log
        against the baseline's median/MAD); the same growth is taken of the
        loss itself. A growth >= ``explosion_ratio`` of either, or a
        non-finite gradient norm before the loss, means explosion; both
        below ``healthy_ratio`` means a numerical fault (said so in the
        evidence); in between, or without gradient norms, the cause is left
        ``unclear``. The first non-finite step is the signals' one
        definition (a step a loss scaler skipped does not count). Without a
        non-finite loss: the first exactly-zero loss after positive ones
        fires when the global gradient norm at that step (or the next
        recorded one) is NaN/Inf. Else an events row of kind
        ``nonfinite_loss`` (the writer's, or a log reader's from a warning
        line while the printed loss stays finite) fires at its first step
        (``cause: event``).

    What to try:
        Explosion: lower the learning rate or add warmup, clip gradients
        (``clip_grad_norm_``), check the loss scale under mixed precision.
        Numerical: wrap the failing step in ``torch.autograd.detect_anomaly()``
        to find the operation; guard ``log``/``sqrt``/division with an
        epsilon, use ``F.cross_entropy`` on logits rather than
        ``log(softmax)``, keep the loss in float32 under autocast, and check
        the batch at that step for NaN inputs or labels. When the recorder
        watched activations, the evidence names the module whose output
        went non-finite first (``first_nonfinite_activation``): start there.

    Parameters:
        recent (int, default 5): recorded gradient norms just before the
            non-finite loss that are checked for growth.
        baseline (int, default 200): earlier gradient norms the recent ones
            are compared with.
        explosion_ratio (float, default 10.0): growth (an order of
            magnitude) that calls it an explosion.
        healthy_ratio (float, default 3.0): growth below which the gradient
            counts as healthy and the fault as numerical.
    """

    code = "nonfinite_loss"
    severity = "error"
    title = "Loss became NaN/Inf"
    needs = Needs(scalars=("loss", "grad_norm", "lr", "step_skipped", "loss_scale"),
                  layers=("grad_norm",), events=("kind", "layer", "message"), requires=("scalars.loss",))

    constraints: ClassVar[dict[str, Interval]] = {
        "recent": Interval(int, 1, None), "baseline": Interval(int, 3, None),
        "healthy_ratio": Interval(float, 1, None), "explosion_ratio": Interval(float, "healthy_ratio", None),
    }

    def __init__(self, *, recent: int = 5, baseline: int = 200, explosion_ratio: float = 10.0,
                 healthy_ratio: float = 3.0) -> None:
        self.recent = recent
        self.baseline = baseline
        self.explosion_ratio = explosion_ratio
        self.healthy_ratio = healthy_ratio

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        step, value = sig.first_nonfinite_step, sig.first_nonfinite_value
        if step is None or value is None:  # set together: both or neither
            return self._masked(sig) or self._event(run, sig)
        logged, finite = sig.loss_logged, sig.loss
        evidence: dict[str, Any] = {
            "first_nonfinite_step": step,
            "value": _word(value),
            "nonfinite_loss_steps": sig.nonfinite_loss_count,
            "finite_again_after": bool(np.isfinite(logged.values[logged.steps > step]).any()),
        }
        if len(finite):
            evidence["last_finite_loss"] = float(finite.values[-1])
            evidence["last_finite_loss_step"] = int(finite.steps[-1])
        if sig.lr is not None and np.any(sig.lr.steps == step):
            evidence["lr"] = float(sig.lr.values[sig.lr.steps == step][0])
        culprit = activation_culprit(run, step)
        if culprit:
            evidence["first_nonfinite_activation"] = culprit
        if len(finite) < 20:
            evidence["points_before"] = len(finite)  # a short log: said, and judged all the same
        cause = self._precursor(sig, step, evidence)
        title = f"Loss became {evidence['value']} at step {step:,} ({_CAUSE_TEXT[cause]})"
        return [self.finding(title, step=step, evidence=evidence, advice=_ADVICE[cause])]

    def _masked(self, sig: Signals) -> list[Finding]:
        """A loss that drops to exactly 0 where the gradients become non-finite: a NaN masked as 0."""
        hit = masked_nan(sig.grad_norm, sig.loss.steps, sig.loss.values)
        if hit is None or hit["nonfinite_grad_step"] is None:  # a loss and gradient both 0: nothing non-finite
            return []
        step = hit["zero_loss_step"]
        evidence = {**hit, "cause": "masked", "points": len(sig.loss)}
        return [self.finding(f"Loss collapsed to exactly 0 at step {step:,} while the gradient norm became "
                             f"non-finite (step {hit['nonfinite_grad_step']:,}): a NaN masked as 0",
                             step=step, evidence=evidence, advice=_ADVICE["masked"])]

    def _event(self, run: Run, sig: Signals) -> list[Finding]:
        """The writer (or a log reader, from a warning line) reported a non-finite loss that the
        logged loss does not show: the printed loss stays finite (averaged, or logged before the
        NaN), but a step's loss was NaN/Inf all the same."""
        steps, _ = sig.events("nonfinite_loss")
        if steps.size == 0:
            return []
        step = int(steps.min())
        ev = run.events
        if ev is None:  # the events table is where those steps came from
            return []
        rows = [i for i, k in enumerate(ev.column("kind").to_pylist()) if k == "nonfinite_loss"]
        msg = ev.column("message").to_pylist()[rows[0]] if "message" in ev.column_names else None
        evidence = {"first_nonfinite_step": step, "cause": "event", "nonfinite_events": int(steps.size),
                    "message": msg, "n_points": len(sig.loss)}
        said = f" ({msg})" if msg else ""
        return [self.finding(f"The log reports a non-finite loss at step {step:,}{said} while the logged loss stays "
                             f"finite", step=step, evidence=evidence, advice=_ADVICE["unclear"])]

    def _precursor(self, sig: Signals, step: int, evidence: dict[str, Any]) -> str:
        loss_growth = self._growth(sig.loss.values, "loss", evidence)
        grad_growth, grad_blew_up = self._grad_growth(sig, step, evidence)
        if grad_blew_up or max(grad_growth or 0.0, loss_growth or 0.0) >= self.explosion_ratio:
            cause = "explosion"
        elif grad_growth is not None and grad_growth < self.healthy_ratio and \
                (loss_growth is None or loss_growth < self.healthy_ratio):
            cause = "numerical"
            evidence["why"] = "gradient norms were healthy just before the loss became non-finite"
        else:
            cause = "unclear"
            evidence.setdefault("why", "gradients grew, but by less than an order of magnitude"
                                if grad_growth is not None else "no gradient norms before it")
        evidence["cause"] = cause
        return cause

    def _grad_growth(self, sig: Signals, step: int, evidence: dict[str, Any]) -> tuple[float | None, bool]:
        """Growth of the gradient norm just before ``step``, and whether it was already non-finite."""
        g = sig.grad_norm
        if g is None:
            return None, False
        keep = (g.steps < step) & ~np.isnan(g.values)
        gsteps, norms = g.steps[keep], g.values[keep]
        evidence["grad_norm_source"] = g.source
        inf_before = np.flatnonzero(~np.isfinite(norms))
        if len(inf_before):
            evidence["first_nonfinite_grad_norm_step"] = int(gsteps[inf_before[0]])
            return None, True
        return self._growth(norms, "grad_norm", evidence), False

    def _growth(self, values: np.ndarray, name: str, evidence: dict[str, Any]) -> float | None:
        g = recent_growth(values, self.recent, self.baseline)
        if g is None:
            return None
        evidence.update({f"{name}_{k}": v for k, v in g.items()})
        return g["growth"]


def _word(value: float) -> str:
    return "NaN" if np.isnan(value) else ("+Inf" if value > 0 else "-Inf")


_CAUSE_TEXT = {
    "explosion": "an explosion: gradients or loss grew by orders of magnitude first",
    "numerical": "gradients were healthy just before: a numerical fault",
    "unclear": "cause unclear",
}
_ADVICE = {
    "explosion": "Lower the learning rate or add warmup, and clip gradients "
                 "(torch.nn.utils.clip_grad_norm_); under mixed precision check the loss scale.",
    "numerical": "Find the operation with torch.autograd.detect_anomaly(); guard log/sqrt/division "
                 "with an epsilon, use F.cross_entropy on logits, keep the loss in float32, and "
                 "check that step's batch for NaN inputs or labels.",
    "unclear": "Check the learning rate and clip gradients; run the failing step under "
               "torch.autograd.detect_anomaly() to find the first NaN.",
    "masked": "A NaN was replaced by 0 in the loss (nan_to_num, a masked mean over an empty batch, "
              "torch.where): find where with torch.autograd.detect_anomaly() and fix the NaN, not the mask.",
}
