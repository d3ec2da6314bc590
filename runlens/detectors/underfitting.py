"""The ``underfitting`` finding: the curve verdict says the loss barely moved."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.curve.finding import CurveFinding


@register
class Underfitting(CurveFinding):
    """The training loss barely moved from where it started, or sits at chance level.

    What it detects:
        A run whose curve verdict is ``underfitting``: the loss fell by less
        than ``min_drop`` of its start, or it sits at ln K, the loss of a
        classifier predicting the uniform prior over K classes (then the
        ``loss_at_chance`` finding says so as well, with where K came from).

    Why it matters:
        The model learned nothing (or almost nothing) from its data: the
        compute was spent for a model no better than a constant. The usual
        causes are cheap to check: a learning rate far too low, labels that
        do not reach the loss (or are shuffled independently of the
        inputs), gradients that vanish before the first layers, a layer
        left out of the optimizer, a model too small for the task.

    How it decides:
        Fires when the curve classifier's label is ``underfitting`` (see the
        ``curve`` entry): relative drop ``(S - E) / |S|`` below ``min_drop``
        (also after a fall the loss came back from: ``kind: progress_lost``),
        or the chance-level test. The evidence gives the start and end
        levels, the drop and, at chance, K and its source. The findings
        that explain it (``learning_rate_too_low``, ``vanishing_gradients``,
        ``dead_layers``, and the loop's bugs: gradients that accumulate
        undo a fall, raw inputs slow one) are named in its ``caused_by``, unless the weights
        collapsed: when the median module's weight norm ended at a tenth of
        its first or less (``weight_norm_ratio``), the pull toward zero
        (weight decay) starves the gradients and holds the loss at chance,
        so this finding leads and those name it as their cause. Severity
        warning.

    What to try:
        If the weights collapsed (``weight_norm_ratio`` <= 0.1), lower the
        weight decay (decoupled AdamW values are around 0.01-0.1). Raise the
        learning rate (a range test finds it); check that labels
        and inputs reach the model and match (shuffle them together); check
        that every layer is in the optimizer and gets gradients; use a
        standard initialization and normalization; grow the model. When
        the curve says the logged learning rate vanished (``kind:
        short_lr_vanished``), the advice is the schedule's instead: give it
        a floor, or stop instead of training on at a rate of ~0.

    Parameters:
        None: the decision is the curve classifier's.
    """

    kind_advice = {"short_lr_vanished": (
        "Check the learning-rate schedule: one that divides the rate every epoch (a StepLR or an "
        "'lradj' halving with no floor) leaves nothing to train with after a few dozen epochs; give it a "
        "floor (eta_min, min_lr), decay per epoch count rather than forever, or stop with early stopping "
        "instead of training on at a vanished rate.")}

    code = "underfitting"
    severity = "warning"
    title = "Underfitting"
