"""validation_leak: a validation loss far below the training loss from the start, or near-certain
held-out predictions on a K-class task (a leak)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import train_loss_at
from runlens.detectors.curve.features import stated_classes

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run
    from runlens.signals.series import Series


@register
class ValidationLeak(Detector):
    """The validation loss is a small fraction of the training loss, early and throughout: the
    validation set, or the target, leaks into what the model sees.

    What it detects:
        A validation loss that falls to a small fraction of the training loss
        at the same point (or near zero) far faster than the training loss
        falls: the model predicts held-out data better than the data it is
        trained on. It happens when the target (or a copy of it) is among the
        inputs, when validation samples are also training samples (an
        overlap, a split after augmentation), or when the validation labels
        are computed from the inputs.

    Why it matters:
        Every validation number (loss, accuracy, early stopping, model
        selection) is then meaningless: the model looks brilliant and is
        not. A model with dropout or augmentation can have a validation loss
        somewhat below its training loss (0.7x), never a tenth of it.

    How it decides:
        At each evaluation, the ratio of the validation loss to the median
        training loss over the steps since the previous evaluation (at least
        ``min_evals`` evaluations). It fires when the median ratio is below
        ``max_ratio``, the first evaluation below it comes in the first half
        of the run (the validation loss got there early, far faster than the
        training loss), and a one-sided Wilcoxon signed-rank test on
        log(ratio / ``max_ratio``) over every evaluation finds the ratios
        below ``max_ratio`` at ``alpha`` (a leak does not heal), and the
        median validation loss is also below ``max_ratio`` times the training
        loss's start (the median of its first three values): the validation
        loss fell that far, rather than the training loss rising away from
        it (a diverging run, a loss summed over the batch); with the class
        count K stated, also below ``max_ratio`` times ln K, the loss of a
        model that knows nothing, whatever scale the training loss is on.
        ``val_train_ratio`` is the median; ``first_leak_step`` the first
        evaluation below the ratio. Severity error.

        A target copied into the inputs of training and held-out data alike
        leaves no gap between the two losses: both fall to nearly nothing
        together. With K stated and the training loss starting on the scale
        of ln K (at least ``min_start_share`` of it: a K-class cross-entropy),
        a held-out loss whose last third of evaluations (at least 3) has a
        median below ``max_chance_share`` of ln K means the model ended
        near-certain and right on data it never trained on: 1/200 of the
        loss of a guess is a geometric-mean probability on the right class of
        K^(-1/200), 0.99 or more for K up to 10 (an easy image task such as
        MNIST ends near 0.03, a hundredth of ln 10). An easy task can get there
        too, so this is information (evidence ``kind`` "near_certain",
        ``val_over_chance``), not an error.

    What to try:
        Check that no input feature is the target or computed from it (a
        label column left in the features, a future value in a time series,
        an id that encodes the class), and that the validation samples are
        disjoint from the training ones (split before augmentation or
        windowing, deduplicate); evaluate on data the pipeline never touched.

    Parameters:
        max_ratio: validation/training loss ratio below which an evaluation counts as too good (0.2).
        min_evals: least evaluations during training to decide (5).
        alpha: significance level of the Wilcoxon tests (0.01).
        max_chance_share: held-out loss, as a share of ln K, below which predictions are near-certain (0.005).
        min_start_share: least training-loss start, as a share of ln K, for a K-class cross-entropy (0.25).
    """

    code = "validation_leak"
    severity = "error"
    title = "Validation loss far below the training loss (leak)"
    needs = Needs(scalars=("loss",), evals=("val_loss",), requires=("scalars.loss", "evals.val_loss"))
    constraints = {"max_ratio": Interval(float, 0, 1, closed="neither"), "min_evals": Interval(int, 2, None),
                   "alpha": Interval(float, 0, 1, closed="neither"),
                   "max_chance_share": Interval(float, 0, 1, closed="neither"),
                   "min_start_share": Interval(float, 0, None, closed="neither")}

    def __init__(self, *, max_ratio: float = 0.2, min_evals: int = 5, alpha: float = 0.01,
                 max_chance_share: float = 5e-3, min_start_share: float = 0.25) -> None:
        self.max_ratio = max_ratio
        self.min_evals = min_evals
        self.alpha = alpha
        self.max_chance_share = max_chance_share
        self.min_start_share = min_start_share

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        loss, val = sig.loss, sig.validation.get("val_loss")
        if val is None or len(loss) < 10:
            raise Skip("needs a validation loss and at least 10 training losses")
        val = val.finite()
        train = train_loss_at(loss, val.steps)
        ok = np.isfinite(train) & (train > 0)
        if ok.sum() < self.min_evals:
            raise Skip(f"needs at least {self.min_evals} evaluations during training")
        k, _ = stated_classes(run)
        chance = float(np.log(k)) if k is not None and k >= 2 else None
        return (self._below_training(loss, val.steps[ok], val.values[ok], train[ok], k, chance)
                or self._near_certain(loss, val.steps, val.values, k, chance))

    def _below_training(self, loss: Series, steps: np.ndarray, values: np.ndarray, train: np.ndarray,
                        k: int | None, chance: float | None) -> list[Finding]:
        ratio = values / train
        below = ratio < self.max_ratio
        half = loss.steps[0] + (loss.steps[-1] - loss.steps[0]) / 2
        median = float(np.median(ratio))
        if median >= self.max_ratio or not below.any() or steps[np.flatnonzero(below)[0]] > half:
            return []
        # The validation loss itself must have fallen that far: against the training loss's start it is
        # a leak; a training loss that rose away from a steady validation loss (it diverged, or it is a
        # sum over the batch) makes the same ratio without anything too good.
        start = float(np.median(loss.values[:3]))
        val_vs_start = float(np.median(values)) / start if start > 0 else float("nan")
        if not val_vs_start < self.max_ratio:
            return []
        # With K stated, ln K is where a model that knows nothing sits, whatever scale the training
        # loss is on (a sum over the batch starts at batch_size x ln K): a held-out loss that is not
        # far below it predicts nothing, and nothing is too good.
        val_vs_chance = float(np.median(values)) / chance if chance is not None else None
        if val_vs_chance is not None and not val_vs_chance < self.max_ratio:
            return []
        p = _wilcoxon_below(ratio, self.max_ratio)
        if p > self.alpha:
            return []
        first = int(steps[np.flatnonzero(below)[0]])
        ev = {"kind": "below_training", "val_train_ratio": median, "evals": int(len(ratio)),
              "evals_below": int(below.sum()), "wilcoxon_p": p, "first_leak_step": first,
              "max_ratio": self.max_ratio, "val_over_train_start": val_vs_start,
              **({"val_over_chance": val_vs_chance, "chance_classes": k} if val_vs_chance is not None else {})}
        return [self.finding(
            f"the validation loss is {median:.2g}x the training loss (median over {len(ratio)} evaluations; "
            f"below {self.max_ratio:g}x from step {first}, Wilcoxon p={p:.2g}): check for a leak",
            step=first, evidence=ev)]

    def _near_certain(self, loss: Series, steps: np.ndarray, values: np.ndarray, k: int | None,
                      chance: float | None) -> list[Finding]:
        # A target copied into every input makes both losses vanish together, so no ratio shows it;
        # what is left is a held-out loss a guess's loss cannot be compared with. Only a K-class
        # cross-entropy has that yardstick: K stated, and a training loss that started on its scale.
        if chance is None or not np.median(loss.values[:3]) >= self.min_start_share * chance:
            return []
        # Where the held-out loss ended up, not a test of a level: a leaked target's loss keeps falling
        # toward zero to the end, so the last third's median says how close to certain it got.
        late = np.arange(len(values)) >= len(values) - max(3, len(values) // 3)
        share = values[late] / chance
        median = float(np.median(share))
        if not median < self.max_chance_share:
            return []
        first = int(steps[np.flatnonzero(values / chance < self.max_chance_share)[0]])
        ev = {"kind": "near_certain", "val_over_chance": median, "chance_classes": k,
              "evals": int(late.sum()), "evals_below": int(np.sum(values / chance < self.max_chance_share)),
              "first_leak_step": first, "max_chance_share": self.max_chance_share,
              "val_loss": float(np.median(values[late]))}
        return [self.finding(
            f"the held-out loss ended at {median:.2g}x ln {k}, the loss of a guess (median of the last "
            f"{int(late.sum())} evaluations; below {self.max_chance_share:g}x from step {first}): near-certain and "
            f"right on data it never trained on; unless the task is that easy, check for a leak",
            severity="info", step=first, evidence=ev,
            advice="If the task is not known to be this easy: " + self.advice[0].lower() + self.advice[1:])]


def _wilcoxon_below(x: np.ndarray, bound: float) -> float:
    """One-sided Wilcoxon signed-rank p that the values sit below ``bound`` (on the log scale)."""
    with np.errstate(divide="ignore"):
        d = np.log(np.maximum(x, 1e-300)) - np.log(bound)
    return float(stats.wilcoxon(d, alternative="less").pvalue) if np.any(d != 0) else 1.0
