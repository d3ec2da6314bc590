"""The ``loss_at_chance`` finding: the loss sits at ln K, a classifier predicting the prior."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from runlens.detectors._base import Context, Detector, Needs, register
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run


@register
class LossAtChance(Detector):
    """The loss sits at ln K: the classifier predicts the uniform prior over its K classes.

    What it detects:
        A training loss whose late level is ln K (0.693 for 2 classes, 2.303
        for 10) and stays there: the cross-entropy of a model that gives
        every class the same probability. It may have fallen there from a
        worse initialization (a 20% drop that looks like progress): the
        model only learned the prior.

    Why it matters:
        A loss that falls and settles looks healthy, but at ln K the model
        knows nothing about its inputs. The causes are specific: labels
        shuffled apart from the inputs, inputs that do not reach the model
        (all zeros, wrong column), a learning rate far too low, gradients
        that vanish, or a dead output layer.

    How it decides:
        From the curve classifier's chance-level test: the median of the
        last third of the training loss within 2% of ln K (with K stated,
        from 2% below ln K up to half the gap to ln(K + 1): a loss above
        the prior's is no better than chance) and its Theil-Sen line not
        drifting by more than 2% of ln K over it (a loss passing through
        ln K on its way down is not at chance). K comes from the config (``num_classes``,
        ``n_classes``, ``num_labels``, ``id2label``, one level deep), a
        ``num_classes`` or label column of the log, or, if the log states
        none, the loss level itself when it matches one K in 2..16 within a
        quarter of the gap to ln(K +- 1) and barely varies (robust sd of
        the last third within 2% of ln K: a model that predicts the prior
        has almost no minibatch noise, a language model settling near the
        same number has); ``chance_source`` says which.
        Severity warning.

    What to try:
        Check that labels and inputs stay paired through the data pipeline
        (shuffle them together) and that the inputs are not constant; raise
        the learning rate; check the gradients of the first layers
        (vanishing) and that every layer is in the optimizer.

    Parameters:
        None: the test is the curve classifier's.
    """

    code = "loss_at_chance"
    severity = "warning"
    title = "Loss at chance level"
    depends: ClassVar[tuple[str, ...]] = ("curve",)
    needs = Needs()

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        v = ctx.curve
        if v is None or "chance_classes" not in v.evidence:
            return []
        ev = v.evidence
        k = ev["chance_classes"]
        keys = ("chance_classes", "chance_loss", "chance_tolerance", "chance_source", "late_level",
                "late_drift", "start_level", "relative_drop")
        return [self.finding(
            f"the loss sits at ln({k})={ev['chance_loss']:.3f}, chance level for {k} classes "
            f"(late level {ev['late_level']:.4g}; K from {ev['chance_source']})",
            step=ev.get("step"), evidence={key: ev[key] for key in keys if key in ev})]
