"""The ``loss_at_chance`` finding: the loss sits at ln K, a classifier predicting the prior."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from runlens.detectors._base import Context, Detector, Interval, Needs, register
from runlens.detectors.curve.features import chance_classes
from runlens.diagnosis import Finding
from runlens.stats.chance import validation_at_chance

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
        quarter of the gap to ln(K +- 1), or a round K above (a power of two
        from 32 to 2^20 or of ten from 100 to 10^6, a head's usual width)
        within the distance at which a level meets one by coincidence with
        probability 0.01, and barely varies (robust sd of
        the last third within 0.5% of ln K: a model that predicts the
        uniform prior scores ln K on every batch, a language model settling
        near the same number moves by a percent or more between logged
        steps); ``chance_source`` says which.
        A second reading, when the training loss is not at chance: the
        validation loss never left it while the training loss did (labels
        shuffled apart from their inputs, or a validation set labelled
        differently: the model memorizes its training batches and learns
        nothing that carries). K must be stated (config or a label column,
        not guessed from the level); at least ``min_evals`` evaluations; the
        median of the later half of the validation losses between ``1 -
        margin`` of ln K and half-way to ln(K + 1) (far above, the model is
        confidently wrong: overfitting), no evaluation below ``1 - 2 margin``
        of ln K (a validation loss that once learned and rose back is
        overfitting too), and the training loss's median over the same
        steps at most ``1 - margin`` of that validation median.
        Severity warning.

    What to try:
        Check that labels and inputs stay paired through the data pipeline
        (shuffle them together) and that the inputs are not constant; raise
        the learning rate; check the gradients of the first layers
        (vanishing) and that every layer is in the optimizer.

    Parameters:
        margin: relative distance from ln K still read as at chance, and the least relative gap
        between the training and validation losses, validation reading (0.05).
        min_evals: least evaluations for the validation reading (5).
    """

    code = "loss_at_chance"
    severity = "warning"
    title = "Loss at chance level"
    depends: ClassVar[tuple[str, ...]] = ("curve",)
    needs = Needs(scalars=("loss",), evals=("val_loss",))
    constraints: ClassVar[dict[str, Interval]] = {"margin": Interval(float, 0, 0.5, closed="neither"),
                                                  "min_evals": Interval(int, 3, None)}

    def __init__(self, *, margin: float = 0.05, min_evals: int = 5) -> None:
        self.margin = margin
        self.min_evals = min_evals

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        v = ctx.curve
        # The curve's own held-out reading (kind validation_at_chance) is this finding's second reading.
        if v is None or "chance_classes" not in v.evidence or v.evidence.get("kind") == "validation_at_chance":
            return self._validation_at_chance(run, ctx)
        ev = v.evidence
        k = ev["chance_classes"]
        keys = ("chance_classes", "chance_loss", "chance_tolerance", "chance_source", "late_level",
                "late_drift", "start_level", "relative_drop")
        return [self.finding(
            f"the loss sits at ln({k})={ev['chance_loss']:.3f}, chance level for {k} classes "
            f"(late level {ev['late_level']:.4g}; K from {ev['chance_source']})",
            step=ev.get("step"), evidence={key: ev[key] for key in keys if key in ev})]

    def _validation_at_chance(self, run: Run, ctx: Context) -> list[Finding]:
        k, source = chance_classes(run)
        sig = ctx.signals_of(run)
        val = sig.validation.get("val_loss")
        if k is None or k < 2 or val is None:
            return []
        val = val.finite()
        hit = validation_at_chance(sig.loss.steps, sig.loss.values, val.steps, val.values, k,
                                   margin=self.margin, min_evals=self.min_evals)
        if hit is None:
            return []
        ev = {"chance_classes": k, "chance_loss": hit["chance_loss"], "chance_source": source, "reading": "validation",
              **{key: hit[key] for key in ("val_late_level", "val_lowest", "train_late_level", "evals", "margin")}}
        return [self.finding(
            f"the validation loss stays at ln({k})={hit['chance_loss']:.3f}, chance level for {k} classes (median "
            f"{hit['val_late_level']:.4g} over its later {hit['late_evals']} evaluations) while the training loss "
            f"fell to {hit['train_late_level']:.4g}: nothing learned carries to unseen data",
            step=hit["first_late_step"], evidence=ev)]
