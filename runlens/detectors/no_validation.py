"""The ``no_validation`` detector: no validation loss was logged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from runlens.detectors._base import Context, Detector, Needs, register
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run


@register
class NoValidation(Detector):
    """No validation loss was logged, so overfitting cannot be judged.

    What it detects:
        A run whose ``evals`` table is missing, empty, or holds no
        validation loss at all (only nulls): neither ``val_loss`` nor any
        named eval set ``val_loss@<set>``.

    Why it matters:
        A falling training loss says the model fits its training data, not
        that it generalizes. Without a held-out loss the curve cannot be
        called ``overfitting`` and the best checkpoint cannot be chosen.
        This is information, not a problem with the training itself.

    How it decides:
        Counts the non-null values of ``val_loss`` and of every
        ``val_loss@<set>`` column (the signals' validation series); fires
        when there are none. A NaN validation loss counts as logged (it is
        a value, and a problem the curve classifier reports). Silent when
        the training loss became non-finite: a diverged run has no
        generalization to judge, and often ended before its first
        evaluation was due.

    What to try:
        1. Evaluate on a held-out split every few hundred steps and log it
           as ``val_loss`` (``Recorder.log_eval`` or the framework callback).
        2. Keep the split fixed across runs so curves stay comparable.

    Parameters:
        None.
    """

    code = "no_validation"
    severity = "info"
    title = "No validation loss logged"
    needs = Needs(evals=("val_loss", "val_loss@*"))

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        if any(len(s) for s in sig.validation.values()):
            return []
        if sig.first_nonfinite_step is not None:
            return []  # the loss went NaN/Inf: no held-out loss would judge anything; the NaN comes first
        rows = 0 if run.evals is None else run.evals.num_rows
        return [self.finding("No validation loss was logged; overfitting cannot be judged",
                             evidence={"eval_rows": rows, "val_loss_values": 0},
                             advice="Log a held-out loss as val_loss every few hundred steps.")]
