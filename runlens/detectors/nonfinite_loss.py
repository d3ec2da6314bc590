"""The ``nonfinite_loss`` detector: the training loss became NaN or Inf."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._base import Context, Detector, Needs, register
from runlens.detectors._nonfinite import (
    activation_culprit,
    global_grad_norm,
    nonfinite_mask,
    recent_growth,
    skipped_steps,
)
from runlens.diagnosis import Finding
from runlens.errors import UsageError

if TYPE_CHECKING:
    from runlens.io.run import Run


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
        baseline median (the evidence adds the robust z-score of its log
        against the baseline's median/MAD); the same growth is taken of the
        loss itself. A growth >= ``explosion_ratio`` of either, or a
        non-finite gradient norm before the loss, means explosion; both
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
                  layers=("grad_norm",), events=("kind", "layer"), requires=("scalars.loss",))

    def __init__(self, *, recent: int = 5, baseline: int = 200, explosion_ratio: float = 10.0,
                 healthy_ratio: float = 3.0) -> None:
        self.recent = recent
        self.baseline = baseline
        self.explosion_ratio = explosion_ratio
        self.healthy_ratio = healthy_ratio

    def _validate(self) -> None:
        checks = [("recent", isinstance(self.recent, int) and self.recent >= 1, "an int >= 1"),
                  ("baseline", isinstance(self.baseline, int) and self.baseline >= 3, "an int >= 3"),
                  ("healthy_ratio", _number(self.healthy_ratio) and self.healthy_ratio >= 1, "a number >= 1"),
                  ("explosion_ratio", _number(self.explosion_ratio)
                   and self.explosion_ratio >= self.healthy_ratio, "a number >= healthy_ratio")]
        for name, ok, what in checks:
            if not ok:
                raise UsageError(f"The {name!r} parameter of {type(self).__name__} must be {what}. "
                                 f"Got {getattr(self, name)!r} instead.")

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        self._validate()
        loss = run.column("scalars", "loss")
        steps = run.steps("scalars")
        bad = nonfinite_mask(run, "scalars", "loss")
        if bad is None or not bad.any():
            return []
        i = int(bad.argmax())
        step = int(steps[i])
        finite_before = np.flatnonzero(np.isfinite(loss[:i]))
        evidence: dict[str, Any] = {
            "first_nonfinite_step": step,
            "value": _word(loss[i]),
            "nonfinite_loss_steps": int(bad.sum()),
            "finite_again_after": bool(np.isfinite(loss[i + 1:]).any()),
        }
        if len(finite_before):
            evidence["last_finite_loss"] = float(loss[finite_before[-1]])
            evidence["last_finite_loss_step"] = int(steps[finite_before[-1]])
        lr = run.column("scalars", "lr")
        if lr is not None and np.isfinite(lr[i]):
            evidence["lr"] = float(lr[i])
        culprit = activation_culprit(run, step)
        if culprit:
            evidence["first_nonfinite_activation"] = culprit
        cause = self._precursor(run, step, evidence)
        title = f"Loss became {evidence['value']} at step {step:,} ({_CAUSE_TEXT[cause]})"
        return [self.finding(title, step=step, evidence=evidence, advice=_ADVICE[cause])]

    def _precursor(self, run: Run, step: int, evidence: dict[str, Any]) -> str:
        loss, lsteps = run.column("scalars", "loss"), run.steps("scalars")
        before = (lsteps < step) & np.isfinite(loss)
        loss_growth = self._growth(loss[before], "loss", evidence)
        grad_growth, grad_blew_up = self._grad_growth(run, step, evidence)
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

    def _grad_growth(self, run: Run, step: int, evidence: dict[str, Any]) -> tuple[float | None, bool]:
        """Growth of the gradient norm just before ``step``, and whether it was already non-finite."""
        series = global_grad_norm(run)
        if series is None:
            return None, False
        gsteps, norms, source = series
        keep = (gsteps < step) & ~np.isin(gsteps, skipped_steps(run)) & ~np.isnan(norms)
        gsteps, norms = gsteps[keep], norms[keep]
        evidence["grad_norm_source"] = source
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


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
}
