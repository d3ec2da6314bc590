"""The ``nonfinite_loss`` detector: the training loss became NaN or Inf."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from ..findings import Finding
from ._base import Context, Detector, Needs, register
from ._nonfinite import global_grad_norm, skipped_steps

if TYPE_CHECKING:
    from ..run import Run


@register
class NonfiniteLoss(Detector):
    """The training loss became NaN or Inf; says whether gradients exploded first.

    What it detects:
        The first step whose training loss is NaN, +Inf or -Inf, and which
        kind of failure led there: an *explosion* (the gradient norm grew
        by orders of magnitude, or was already non-finite, in the steps
        just before) or a *numerical* fault (gradient norms were healthy
        right up to it: a log of zero, a division by zero, an overflow in
        half precision, a bad sample).

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
        baseline median; with the robust z-score of its log against the
        baseline's median/MAD. growth >= ``explosion_ratio`` or a
        non-finite gradient norm before the loss means explosion; growth
        below ``healthy_ratio`` means a numerical fault (said so in the
        evidence); in between, or without gradient norms, the cause is left
        ``unclear``.

    What to try:
        Explosion: lower the learning rate or add warmup, clip gradients
        (``clip_grad_norm_``), check the loss scale under mixed precision.
        Numerical: wrap the failing step in ``torch.autograd.detect_anomaly()``
        to find the operation; guard ``log``/``sqrt``/division with an
        epsilon, use ``F.cross_entropy`` on logits rather than
        ``log(softmax)``, keep the loss in float32 under autocast, and check
        the batch at that step for NaN inputs or labels.

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
                  layers=("grad_norm",), requires=("scalars.loss",))

    def __init__(self, *, recent: int = 5, baseline: int = 200, explosion_ratio: float = 10.0,
                 healthy_ratio: float = 3.0) -> None:
        self.recent = recent
        self.baseline = baseline
        self.explosion_ratio = explosion_ratio
        self.healthy_ratio = healthy_ratio

    def check(self, run: "Run", ctx: Context) -> Iterable[Finding]:
        loss = run.column("scalars", "loss")
        steps = run.steps("scalars")
        bad = ~np.isfinite(loss)
        if not bad.any():
            return []
        i = int(bad.argmax())
        step = int(steps[i])
        finite_before = np.flatnonzero(~bad[:i])
        evidence: dict[str, Any] = {
            "first_nonfinite_step": step,
            "value": _word(loss[i]),
            "nonfinite_loss_steps": int(bad.sum()),
            "finite_again_after": bool((~bad[i + 1:]).any()),
        }
        if len(finite_before):
            evidence["last_finite_loss"] = float(loss[finite_before[-1]])
            evidence["last_finite_loss_step"] = int(steps[finite_before[-1]])
        lr = run.column("scalars", "lr")
        if lr is not None and np.isfinite(lr[i]):
            evidence["lr"] = float(lr[i])
        cause = self._precursor(run, step, evidence)
        title = f"Loss became {evidence['value']} at step {step:,} ({_CAUSE_TEXT[cause]})"
        return [self.finding(title, step=step, evidence=evidence, advice=_ADVICE[cause])]

    def _precursor(self, run: "Run", step: int, evidence: dict[str, Any]) -> str:
        series = global_grad_norm(run)
        if series is None:
            evidence["cause"] = "unclear"
            evidence["why"] = "no gradient norms recorded"
            return "unclear"
        gsteps, norms, source = series
        keep = (gsteps < step) & ~np.isin(gsteps, skipped_steps(run)) & ~np.isnan(norms)
        gsteps, norms = gsteps[keep], norms[keep]
        evidence["grad_norm_source"] = source
        inf_before = np.flatnonzero(~np.isfinite(norms))
        if len(inf_before):
            evidence["first_nonfinite_grad_norm_step"] = int(gsteps[inf_before[0]])
            evidence["cause"] = "explosion"
            return "explosion"
        cause = self._growth(norms, evidence)
        evidence["cause"] = cause
        return cause

    def _growth(self, norms: np.ndarray, evidence: dict[str, Any]) -> str:
        if len(norms) < self.recent + 3:
            evidence["why"] = f"only {len(norms)} gradient norms before it"
            return "unclear"
        recent, base = norms[-self.recent:], norms[:-self.recent][-self.baseline:]
        med = float(np.median(base))
        peak = float(recent.max())
        evidence["grad_norm_baseline_median"] = med
        evidence["grad_norm_recent_max"] = peak
        if med <= 0:
            return "explosion" if peak > 0 else "numerical"
        growth = peak / med
        logs = np.log10(np.maximum(base, 1e-300))
        mad = float(np.median(np.abs(logs - np.median(logs)))) * 1.4826
        evidence["grad_norm_growth"] = growth
        evidence["robust_z"] = (np.log10(max(peak, 1e-300)) - float(np.median(logs))) / mad if mad > 0 else None
        if growth >= self.explosion_ratio:
            return "explosion"
        if growth < self.healthy_ratio:
            evidence["why"] = "gradient norms were healthy just before the loss became non-finite"
            return "numerical"
        return "unclear"


def _word(value: float) -> str:
    return "NaN" if np.isnan(value) else ("+Inf" if value > 0 else "-Inf")


_CAUSE_TEXT = {
    "explosion": "gradients exploded first",
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
}
