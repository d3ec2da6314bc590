"""softmax_before_cross_entropy: probabilities fed to a loss that applies log-softmax itself."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import (
    ACCURACY_COLUMNS,
    VAL_ACCURACY_COLUMNS,
    config_number,
    fractions,
    scalar_column,
    train_loss_at,
)
from runlens.detectors.curve.features import stated_classes

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run
    from runlens.signals import LogitsReadings, Series


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


class _Late(NamedTuple):
    """The last ``late_frac`` of the training loss (5 losses at least): its median ``level``, its
    ``lowest``, its first step ``start``, and whether it went ``below`` the floor by more than the
    tolerance (False without a floor)."""

    level: float
    lowest: float
    start: int
    below: bool


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
        What the recorder read off the loss's input comes first, when it
        wrote it (``logits_in_unit_interval``, ``ce_grad_scale``; see
        ``docs/format.md``), because it sees the structure, not a level the
        loss might still be falling toward:

        - **probabilities**: on most read steps every checked row of the
          model's output lies in [0, 1] and sums to 1 (``logits_sum_to_one``):
          the model hands a softmax's output to a loss that applies
          log-softmax itself. Fires.
        - **squeezed**: the gradient reaching the output (per micro-batch)
          never exceeds ``squeezed`` (1/3) of the loss, although on some read
          step the loss was at least ln 2. A plain cross-entropy whose batch
          mean is ln 2 or more has a row with ``p_y <= 1/2``, whose gradient
          entry is at least 1/2; a softmax between the output and the loss
          multiplies every entry by the softmax's Jacobian, whose entries
          are at most ``p (1 - p) <= 1/4`` (measured in torch: never above
          0.265 for any K). Fires, unless the loss went below the floor.
          A read step's loss is the one logged at that step (the same
          batch's). Where the loop logs its loss less often than the
          recorder reads, a read step without one takes the median of the
          losses logged since the previous read, else the last one before
          it. Another batch's loss is near enough: a plain cross-entropy
          stays under ``squeezed`` (1/3) only when every row has
          ``p_y >= 2/3``, a batch loss of ln 1.5 = 0.41 at most, far below
          ln 2.
        - **in [0, 1] only** (rows that do not sum to 1): a sigmoid at the
          end, or a model that learned nothing and outputs nearly equal
          logits that happen to lie in [0, 1] (labels it cannot learn). The
          structure cannot tell them apart, so the loss level decides.
        - None of these, over at least ``min_reads`` reads: raw logits and a
          plain cross-entropy's gradient were seen, so it is silent whatever
          the loss level.

        Without those readings (an imported log) it reads the loss level.
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
        squeezed: largest per-micro-batch ce_grad_scale read as a softmax's squeezed gradient (1/3).
        min_reads: recorder reads needed before its structure decides (3).
    """

    code = "softmax_before_cross_entropy"
    severity = "error"
    title = "Softmax applied before a cross-entropy loss"
    needs = Needs(scalars=("loss", *ACCURACY_COLUMNS, "num_classes", "n_classes", "label", "labels", "target",
                           "ce_grad_scale", "backward_passes", "logits_in_unit_interval", "logits_sum_to_one",
                           "loss_scale"),
                  evals=(*VAL_ACCURACY_COLUMNS,), requires=("scalars.loss",))
    constraints = {"late_frac": Interval(float, 0, 1, closed="right"), "tolerance": Interval(float, 0, 1),
                   "max_gap": Interval(float, 0, 1, closed="right"), "squeezed": Interval(float, 0, 0.5),
                   "min_reads": Interval(int, 1, None)}

    def __init__(self, *, late_frac: float = 0.2, tolerance: float = 0.002, max_gap: float = 1 / 3,
                 squeezed: float = 1 / 3, min_reads: int = 3) -> None:
        self.late_frac = late_frac
        self.tolerance = tolerance
        self.max_gap = max_gap
        self.squeezed = squeezed
        self.min_reads = min_reads

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        loss = ctx.signals_of(run).loss
        if len(loss) < 20:
            raise Skip("needs at least 20 training losses")
        k, k_source = stated_classes(run)
        floor = softmax_floor(k) if k is not None else None
        late = self._late(loss, floor)
        readings = ctx.signals_of(run).logits
        if readings and len(readings.per_pass) >= self.min_reads:
            decided = self._structure(readings, loss, late, k, k_source)
            if decided is not None:
                return decided
        if k is None or floor is None:
            raise Skip("the number of classes is not stated (config num_classes, num_labels... or a label column)")
        chance = float(np.log(k))
        eps, _ = config_number(run.config, ("label_smoothing", "smoothing"))
        if eps is not None and smoothed_floor(k, eps) >= floor * (1 - self.tolerance):
            return []  # label smoothing alone holds a correct loss at or above the floor: no telling them apart
        level, lowest = late.level, late.lowest
        gap = (level - floor) / (chance - floor)
        acc = scalar_column(run, ACCURACY_COLUMNS) or scalar_column(run, VAL_ACCURACY_COLUMNS, "evals")
        accuracy = None
        if acc is not None:
            late_acc = fractions(acc[1][-max(3, int(len(acc[1]) * self.late_frac)):])  # a percentage as one
            accuracy = None if late_acc is None else float(np.median(late_acc[0]))
        max_gap = self.max_gap if accuracy is not None else self.max_gap / 10
        if late.below or not -self.tolerance <= gap <= max_gap:
            return []
        if accuracy is not None and calibrated_loss(accuracy, k) >= floor:
            return []
        acc_text = f", accuracy {accuracy:.3g}" if accuracy is not None else ", no accuracy logged"
        ev = {"classes": k, "classes_source": k_source, "softmax_floor": floor, "chance_loss": chance,
              "late_level": level, "late_min": lowest, "floor_gap": gap, "accuracy": accuracy,
              "calibrated_loss_at_accuracy": calibrated_loss(accuracy, k) if accuracy is not None else None,
              "accuracy_source": acc[2] if acc is not None else None, "reading": "loss level"}
        return [self.finding(
            f"the loss settles at {level:.4g} and never goes below {lowest:.4g}, the floor ln(1+(K-1)/e)="
            f"{floor:.4g} of softmax outputs fed to cross-entropy (K={k}{acc_text})",
            step=late.start, evidence=ev)]

    def _late(self, loss: Series, floor: float | None) -> _Late:
        """The settled level both readings compare with the floor."""
        late = loss.values[-max(5, int(len(loss) * self.late_frac)):]
        lowest = float(np.min(late))
        return _Late(float(np.median(late)), lowest, int(loss.steps[-len(late)]),
                    floor is not None and lowest < floor * (1 - self.tolerance))

    def _structure(self, readings: LogitsReadings, loss: Series, late: _Late, k: int | None,
                   k_source: str | None) -> list[Finding] | None:
        """The recorder's readings decide (see "How it decides"); None when they cannot: outputs in
        [0, 1] that are not a softmax's, or no read step whose loss was high enough for a plain
        cross-entropy to show itself."""
        floor = softmax_floor(k) if k is not None else None
        if late.below:
            return []  # below the floor: whatever the readings say, no softmax capped this loss
        ev: dict[str, object] = {"classes": k, "classes_source": k_source, "softmax_floor": floor,
                                 "late_level": late.level, "late_min": late.lowest,
                                 "reads": len(readings.per_pass)}
        floor_text = f"; the loss settles at {late.level:.4g}" + (
            f", never below the floor ln(1+(K-1)/e)={floor:.4g} (K={k})" if floor is not None else "")
        simplex, bounded = _majority(readings.simplex), _majority(readings.bounded)
        if simplex is not None:
            share, n, first = simplex
            ev |= {"reading": "recorder: outputs sum to 1", "simplex_share": share}
            return [self.finding(
                f"on {share:.0%} of {n} recorded steps every row the loss received lay in [0, 1] and summed to 1: "
                f"a softmax's probabilities, not logits, fed to a loss that applies log-softmax itself{floor_text}",
                step=first, evidence=ev)]
        loss_at, exact = _loss_at_reads(loss, readings.per_pass.steps)
        high = loss_at >= np.log(2)  # NaN (no loss logged yet at a read) is not high
        top = float(np.max(readings.per_pass.values))
        if top > self.squeezed or not high.any():
            # Not squeezed (or not readable as such): outputs in [0, 1] that are not a softmax's leave
            # it to the loss level; raw logits with a plain cross-entropy's gradient rule it out.
            return None if bounded is not None or top <= self.squeezed else []
        earlier = int((high & ~exact).sum())
        ev |= {"reading": "recorder: squeezed logits gradient", "largest_logits_gradient": top,
               "plain_cross_entropy_at_least": 0.5, "double_softmax_at_most": 0.265,
               "steps_with_loss_at_least_ln2": int(high.sum()), "reads_with_loss_at_step": int(exact.sum()),
               "steps_with_loss_at_least_ln2_from_earlier_losses": earlier}
        earlier_text = (f" ({earlier} judged by the losses logged before the step, none being logged at it)"
                        if earlier else "")
        return [self.finding(
            f"the gradient reaching the model's output never exceeded {top:.3g} of the loss over "
            f"{len(readings.per_pass)} recorded steps, although the loss was above ln 2 on {int(high.sum())} of "
            f"them{earlier_text}: a plain cross-entropy sends at least 0.5 there, one behind another softmax "
            f"at most 0.265{floor_text}", step=int(readings.per_pass.steps[0]), evidence=ev)]


def _loss_at_reads(loss: Series, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The training loss of each read step (NaN before the first logged one), and whether it was
    logged at that very step.

    The loss logged at a read step is of the batch whose gradient was read, the one the squeezed
    bound speaks of, so it wins wherever it exists: a median over the steps before it would be
    other batches', and would change the reading of every run that logs its loss at every step.
    Only the read steps without one take :func:`train_loss_at`, whose windows then run from the
    previous read step: the median of the losses logged since, else the last one before."""
    at = np.minimum(np.searchsorted(loss.steps, steps), len(loss) - 1)
    exact = loss.steps[at] == steps
    if exact.all():
        return loss.values[at], exact
    return np.where(exact, loss.values[at], train_loss_at(loss, steps)), exact


def _majority(flags: Series | None) -> tuple[float, int, int] | None:
    """``(share, reads, first step)`` of a recorder flag set on most of its reads; None otherwise."""
    if flags is None or not len(flags):
        return None
    on = flags.values >= 0.5
    share = float(np.mean(on))
    return (share, len(flags), int(flags.steps[np.argmax(on)])) if share > 0.5 else None
