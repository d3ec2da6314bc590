"""softmax_before_cross_entropy: probabilities fed to a loss that applies log-softmax itself."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import ACCURACY_COLUMNS, VAL_ACCURACY_COLUMNS, config_number, scalar_column
from runlens.detectors.curve.features import stated_classes

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


def softmax_floor(k: int) -> float:
    """The least cross-entropy a softmax output can reach: one-hot probabilities p give
    ``-1 + ln(e + K - 1) = ln(1 + (K - 1) / e)``."""
    return float(np.log1p((k - 1) / math.e))


def smoothed_floor(k: int, eps: float) -> float:
    """The least cross-entropy against targets smoothed by ``eps``: the targets' own entropy."""
    hi, lo = 1 - eps + eps / k, eps / k
    return float(-hi * np.log(hi) - (k - 1) * lo * np.log(lo)) if 0 < eps < 1 else 0.0


def calibrated_loss(accuracy: float, k: int) -> float:
    """The cross-entropy of a calibrated K-class classifier right on ``accuracy`` of its inputs that
    spreads the rest evenly: the entropy ``-(a ln a + (1 - a) ln((1 - a) / (K - 1)))``."""
    a = min(max(accuracy, 1e-12), 1 - 1e-12)
    return float(-(a * np.log(a) + (1 - a) * np.log((1 - a) / (k - 1))))


@register
class SoftmaxBeforeCrossEntropy(Detector):
    """The loss cannot fall below ln(1 + (K-1)/e) although the model is accurate: softmax outputs fed to a
    loss that applies log-softmax itself.

    What it detects:
        A classifier whose model ends in ``softmax`` (or ``sigmoid``) while
        its loss is ``CrossEntropyLoss`` (or ``F.cross_entropy``), which
        applies ``log_softmax`` again. The logits it sees are then
        probabilities in [0, 1], and the loss is bounded below by
        ``ln(1 + (K-1)/e)`` (1.46 for 10 classes, 0.31 for 2): the value at a
        perfect one-hot prediction.

    Why it matters:
        The run looks like a classifier that stopped learning at a loss far
        above 0, although its accuracy is high; the gradients through the
        double softmax are squeezed (at most 1/4 of the logits' gradient) and
        vanish as the prediction saturates, so it learns slowly and its
        probabilities are meaningless for calibration or distillation.

    How it decides:
        K comes from the config (``num_classes``, ``n_classes``,
        ``num_labels``, ``id2label``...) or a label column, as for
        ``loss_at_chance``; without K it is skipped. The floor is
        ``ln(1 + (K-1)/e)``. It fires when the last ``late_frac`` of the
        training loss never goes below the floor (by more than
        ``tolerance`` of it, float rounding), its median sits in the lowest
        ``max_gap`` of the band between the floor and ln K
        (``floor_gap`` = (late median - floor) / (ln K - floor)), and the
        model is accurate enough that a correct one would be below the floor:
        a calibrated classifier with the late median accuracy of a logged
        column (``accuracy``, ``acc``, ``train_acc``, else ``val_accuracy``)
        has the cross-entropy ``-(a ln a + (1-a) ln((1-a)/(K-1)))``, and that
        must be under the floor (``a`` above 0.91 for K=2, 0.79 for K=4, 0.72
        for K=6, 0.63 for K=10, 0.35 for K=100). A fixed accuracy bar would
        ask too much of a many-class model and too little of a binary one. Without an accuracy column it fires only when
        the loss hugs the floor (``floor_gap`` under a tenth of
        ``max_gap``): a real classifier settling exactly there is a
        coincidence. A healthy classifier that accurate is far below the
        floor on most batches. With ``label_smoothing`` in the config whose
        own minimum (the smoothed targets' entropy) reaches the floor, it
        does not fire: the two cannot be told apart. Severity error.

    What to try:
        Remove the softmax (or sigmoid) at the end of the model and feed the
        raw logits to CrossEntropyLoss (apply softmax only when you need
        probabilities, at inference); or, if you need log-probabilities in
        the model, end it in log_softmax and use NLLLoss.

    Parameters:
        late_frac: share of the end of the run read as the settled level (0.2).
        tolerance: relative margin below the floor still counted as at the floor (0.002).
        max_gap: largest floor_gap (share of the floor-to-ln K band) read as at the floor (1/3).
    """

    code = "softmax_before_cross_entropy"
    severity = "error"
    title = "Softmax applied before a cross-entropy loss"
    needs = Needs(scalars=("loss", *ACCURACY_COLUMNS, "num_classes", "n_classes", "label", "labels", "target"),
                  evals=(*VAL_ACCURACY_COLUMNS,), requires=("scalars.loss",))
    constraints = {"late_frac": Interval(float, 0, 1, closed="right"), "tolerance": Interval(float, 0, 1),
                   "max_gap": Interval(float, 0, 1, closed="right")}

    def __init__(self, *, late_frac: float = 0.2, tolerance: float = 0.002, max_gap: float = 1 / 3) -> None:
        self.late_frac = late_frac
        self.tolerance = tolerance
        self.max_gap = max_gap

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        loss = ctx.signals_of(run).loss
        if len(loss) < 20:
            raise Skip("needs at least 20 training losses")
        k, k_source = stated_classes(run)
        if k is None:
            raise Skip("the number of classes is not stated (config num_classes, num_labels... or a label column)")
        floor, chance = softmax_floor(k), float(np.log(k))
        eps, _ = config_number(run.config, ("label_smoothing", "smoothing"))
        if eps is not None and smoothed_floor(k, eps) >= floor * (1 - self.tolerance):
            return []  # label smoothing alone holds a correct loss at or above the floor: no telling them apart
        late = loss.values[-max(5, int(len(loss) * self.late_frac)):]
        level, lowest = float(np.median(late)), float(np.min(late))
        gap = (level - floor) / (chance - floor)
        acc = scalar_column(run, ACCURACY_COLUMNS) or scalar_column(run, VAL_ACCURACY_COLUMNS, "evals")
        accuracy = None
        if acc is not None:
            a = acc[1][-max(3, int(len(acc[1]) * self.late_frac)):]
            accuracy = float(np.median(a / 100 if np.nanmax(a) > 1 else a))  # a percentage, said so
        max_gap = self.max_gap if accuracy is not None else self.max_gap / 10
        if lowest < floor * (1 - self.tolerance) or not -self.tolerance <= gap <= max_gap:
            return []
        if accuracy is not None and calibrated_loss(accuracy, k) >= floor:
            return []
        acc_text = f", accuracy {accuracy:.3g}" if accuracy is not None else ", no accuracy logged"
        ev = {"classes": k, "classes_source": k_source, "softmax_floor": floor, "chance_loss": chance,
              "late_level": level, "late_min": lowest, "floor_gap": gap, "accuracy": accuracy,
              "calibrated_loss_at_accuracy": calibrated_loss(accuracy, k) if accuracy is not None else None,
              "accuracy_source": acc[2] if acc is not None else None}
        return [self.finding(
            f"the loss settles at {level:.4g} and never goes below {lowest:.4g}, the floor ln(1+(K-1)/e)="
            f"{floor:.4g} of softmax outputs fed to cross-entropy (K={k}{acc_text})",
            step=int(loss.steps[-len(late)]), evidence=ev)]
