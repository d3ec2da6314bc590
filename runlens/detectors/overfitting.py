"""The ``overfitting`` finding: the curve verdict says the run overfits."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.curve.finding import CurveFinding


@register
class Overfitting(CurveFinding):
    """The validation loss rises after its minimum while the training loss keeps falling.

    What it detects:
        A run whose curve verdict is ``overfitting``: on some eval set
        (named in ``eval_set``: ``val_loss`` or ``val_loss@<set>``) the
        validation loss passed a minimum and then rose along a significant
        trend, while the training loss went on falling. ``step`` is the
        validation minimum: the best checkpoint.

    Why it matters:
        Past the minimum the model memorizes its training data: every
        further step makes it worse on data it has not seen. The checkpoint
        at the minimum is the one to keep, and the gap says how much
        regularisation or data the model lacks.

    How it decides:
        Fires when the curve classifier's label is ``overfitting``: a
        Mann-Kendall trend on the evaluations from the minimum on (one-sided
        p < ``alpha``) and a Theil-Sen rise of at least ``min_val_rise`` of
        the minimum and 2 evaluation-noise sd, decided from the trend, not
        from jumps between evaluations (see the ``curve`` entry); or, from 8
        evaluations, a rise that passes those tests but not the effect
        sizes and ends above the first evaluation while the training loss
        fell on (every gain given back: ``kind: val_gave_back_all``). The
        evidence gives the minimum, its step, the rise, the trend's tau and
        p, the evaluation noise and the eval set. In a short log (fewer than
        ``min_points`` losses) also when the gap widens (``kind:
        gap_widens``): a validation loss with no progress over 5 evaluations
        or more, at twice the training loss or more (or down by under a
        quarter of the training loss's relative fall, with no downward
        trend), while the training
        loss fell by ``min_drop`` along a significant trend; or, over 2 to
        4 evaluations, one that rose at each, at twice the training loss or
        more, while the training loss fell by ``min_drop``. Severity
        warning.

    What to try:
        Stop early at the validation minimum (keep that checkpoint); add
        regularisation (weight decay, dropout, data augmentation) or more
        data; use a smaller model or fewer epochs.

    Parameters:
        None: the decision is the curve classifier's.
    """

    code = "overfitting"
    severity = "warning"
    title = "Overfitting"
