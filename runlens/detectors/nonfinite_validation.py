"""The ``nonfinite_validation`` detector: a validation loss that is NaN or Inf."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, Skip, register
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run


@register
class NonfiniteValidation(Detector):
    """The validation loss of some eval set is NaN or Inf while the training loss is finite.

    What it detects:
        Evaluations of ``val_loss`` (or of any ``val_loss@<set>``) whose value
        is NaN, +Inf or -Inf, on a run whose training loss was still finite
        then (when the training loss became non-finite first, the
        ``nonfinite_loss`` finding explains the evaluations and this one
        stays silent, and so for an evaluation at the last finite training
        step before it, which saw the weights that step broke). The evidence
        gives, per eval set, the count of
        non-finite evaluations, their share, the first step and whether the
        last evaluation is one of them (``n_points``: evaluations in all).

    Why it matters:
        A validation loss that cannot be computed hides every verdict that
        reads it: the curve cannot tell overfitting, early stopping keeps a
        wrong checkpoint, and a dashboard shows a healthy training curve. The
        usual causes are a division by an empty batch (a validation loader
        with ``drop_last`` or a filter that leaves nothing), fp16 overflow in
        evaluation without the training's loss scaling, a log of zero on a
        class the training set never had, or NaN inputs in the validation
        data only.

    How it decides:
        Reads every eval set's values as logged (nulls are "not evaluated",
        not non-finite). Fires when any is non-finite at a step where the
        training loss had not become non-finite. Severity error when it
        persists: ``min_persistent`` evaluations or more are non-finite, or
        the last one is (the run ends without a usable validation loss);
        warning for a single non-finite evaluation that later ones recover
        from.

    What to try:
        Run the evaluation step on its own with
        ``torch.autograd.set_detect_anomaly(True)`` off and ``torch.isfinite``
        checks on inputs, outputs and per-batch losses; make sure every
        validation batch is non-empty and the reduction divides by a count
        that cannot be zero; evaluate in float32 (or with the same autocast
        and loss scaling as training); check the validation data for NaN
        values and for labels outside the training classes.

    Parameters:
        min_persistent: non-finite evaluations of one set from which the
        finding is an error (2).
    """

    code = "nonfinite_validation"
    severity = "error"
    title = "Validation loss NaN/Inf"
    needs = Needs(scalars=("loss", "step_skipped"), evals=("val_loss", "val_loss@*"), requires=("evals",))
    constraints: ClassVar[dict[str, Interval]] = {"min_persistent": Interval(int, 1, None)}

    def __init__(self, *, min_persistent: int = 2) -> None:
        self.min_persistent = min_persistent

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        if not sig.validation:
            raise Skip("no validation loss logged (evals.val_loss or val_loss@<set>)")
        train_bad = sig.first_nonfinite_step
        if train_bad is not None:
            # An evaluation logged at the last finite step already saw the weights of the step that broke.
            before = sig.loss.steps[sig.loss.steps < train_bad]
            train_bad = int(before[-1]) if before.size else train_bad
        per_set: dict[str, dict[str, Any]] = {}
        for name, series in sig.validation.items():
            bad = ~np.isfinite(series.values)
            if train_bad is not None:
                bad &= series.steps < train_bad  # the training loss's NaN explains the rest
            if not bad.any():
                continue
            per_set[name] = {"nonfinite_evals": int(bad.sum()), "n_points": len(series),
                             "share": float(bad.mean()), "first_step": int(series.steps[bad][0]),
                             "last_is_nonfinite": bool(bad[-1])}
        if not per_set:
            return []
        worst = max(per_set, key=lambda k: (per_set[k]["nonfinite_evals"], k == "val_loss"))
        w = per_set[worst]
        persists = any(v["nonfinite_evals"] >= self.min_persistent or v["last_is_nonfinite"]
                       for v in per_set.values())
        where = "" if worst == "val_loss" else f" on eval set {worst.split('@', 1)[1]!r}"
        title = (f"Validation loss{where} is NaN/Inf on {w['nonfinite_evals']} of {w['n_points']} evaluations "
                 f"({w['share']:.0%}), first at step {w['first_step']:,}"
                 + (", including the last" if w["last_is_nonfinite"] else "") + ", while the training loss is finite")
        return [self.finding(title, severity="error" if persists else "warning", step=w["first_step"],
                             evidence={"eval_set": worst, **w, "sets": per_set, "persists": persists,
                                       "min_persistent": self.min_persistent})]
