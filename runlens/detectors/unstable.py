"""The ``unstable`` finding: the curve verdict says the loss is unstable."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.curve.finding import ExplainedCurveFinding


@register
class Unstable(ExplainedCurveFinding):
    """The training loss is unstable: it oscillates, wanders or jumped up and stayed there.

    What it detects:
        A run whose curve verdict is ``unstable``: the loss stays finite but
        does not settle. Its fluctuations dwarf its progress, its level
        wanders beyond minibatch noise, it jumped to a higher level at one
        step and never came back (``kind: level_shift``), or the validation
        loss jumps between evaluations while the training loss does not
        settle either. The evidence says which (``kind``), with the test
        statistics and the step.

    Why it matters:
        An unstable run wastes its compute: the weights it ends with depend
        on the step it stopped at, and the same instability usually turns
        into divergence with a longer run or a larger model. The signals at
        the start of the instability tell the usual causes apart: updates
        large relative to the weights (learning rate), a learning rate that
        just rose, gradient norms that grew, a data change at the step of a
        level shift.

    How it decides:
        Fires when the curve classifier's label is ``unstable`` (see the
        ``curve`` entry for its tests). The evidence adds ``signals`` around
        the step where it starts (gradient-norm growth, update/weight ratio,
        learning rate and its change, loss-scaler skips) and
        ``signals_missing``; the findings that explain it (e.g.
        ``learning_rate_too_high``) are named in its ``caused_by``. Severity
        warning.

    What to try:
        Lower the learning rate (3-10x) or raise the batch size, and add a
        decay schedule; clip gradient norms; for a jump that never recovers,
        look at what changed at that step (a data shard, the schedule, a
        resume from a checkpoint).

    Parameters:
        None: the decision is the curve classifier's.
    """

    code = "unstable"
    severity = "warning"
    title = "Loss unstable"
