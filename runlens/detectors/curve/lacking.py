"""The curve verdict of a run that has no training loss to judge: no step logged, a scalars part that
could not be read, or held-out values alone (frozen, or an accuracy that collapsed, say something still)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runlens.detectors._base import Context
from runlens.detectors.curve import features as shape
from runlens.detectors.curve import memorized
from runlens.detectors.curve.memorized import accuracies
from runlens.detectors.curve.short_stuck import evaluations_frozen
from runlens.detectors.unreadable_data import skipped_parts
from runlens.diagnosis import CurveVerdict
from runlens.signals import signals_of

if TYPE_CHECKING:
    from runlens.io.run import Run


def no_training_loss(run: Run, ctx: Context | None) -> CurveVerdict | None:
    """The verdict of a run with no training step or no training loss column; None when it has both."""
    if run.scalars is None or run.scalars.num_rows == 0:
        lost = [p for p in skipped_parts(run.warnings) if p["table"] == "scalars"]
        if lost:
            # Not "nothing was logged": something was, and could not be read.
            return CurveVerdict(
                "insufficient_data", f"the training steps could not be read: {len(lost)} scalars part(s) "
                f"unreadable ({lost[0]['path']}: {lost[0]['why']}); the curve has no readable loss",
                {"finite_points": 0, "training_loss_logged": True, "unreadable_parts": lost})
        return CurveVerdict("insufficient_data", "no training step was logged",
                            {"finite_points": 0, "training_loss_logged": False})
    if run.has("scalars", "loss"):
        return None
    sig = ctx.signals_of(run) if ctx is not None else signals_of(run)
    return evaluations_frozen(shape.validation_sets(sig.validation, None)) or memorized.accuracy_collapsed(
        memorized.held_out_accuracy(run, accuracies(run))) or CurveVerdict(
        "insufficient_data", "the log has no training loss: the curve has no shape to judge (the other "
        "signals are still analysed)", {"finite_points": 0, "training_loss_logged": False})
