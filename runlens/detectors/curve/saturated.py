"""A classifier whose outputs sit at the clip of a probability: every prediction made with full confidence.

A cross-entropy clips the probability it takes the log of: Keras at its backend epsilon, 1e-7, so a
prediction wrong with full confidence costs -ln(1e-7) = 16.118 and a right one nothing; PyTorch's
``BCELoss`` clamps the log at -100, so a wrong one costs 100. A model whose every output is saturated (0
or 1) therefore scores a training loss of exactly that constant times its error rate, 1 - accuracy,
whatever its data: Keras's familiar ``loss: 7.8306 - acc: 0.5142`` (16.12 x 0.4858). No model that
learns has that relation at every point: a wrong prediction of a model still learning costs a few nats,
not sixteen, and a clipped output has no gradient to leave the clip by. The held-out side is not read:
a model that memorized its training set is confidently wrong on held-out examples too, at a cost of the
same order.
"""

from __future__ import annotations

import math

import numpy as np

from runlens.detectors.curve.features import short_evidence
from runlens.detectors.curve.memorized import Accuracies
from runlens.diagnosis import CurveVerdict

#: What a wrong prediction costs at each clip a framework documents: Keras's epsilon 1e-7, and the -100
#: floor PyTorch's ``BCELoss`` puts on its log.
CLIP_COSTS = {"Keras's epsilon 1e-7": -math.log(1e-7), "PyTorch BCELoss's log floor of -100": 100.0}
#: How close to the clip's cost the loss per error must be at every point: the print's own rounding and a
#: few unsaturated examples move it by a percent or two, a model that learns by a factor.
TOLERANCE = 0.03
#: The least error rate read: below it, the loss per error is a ratio of two small, coarsely printed numbers.
MIN_ERROR = 0.05


def saturated(steps: np.ndarray, x: np.ndarray, acc: Accuracies) -> CurveVerdict | None:
    """Underfitting (``kind: short_saturated``) when at each point (one at least) where the training loss
    and the training accuracy are both printed, with an error rate of ``MIN_ERROR`` or more, the loss is
    within ``TOLERANCE`` of one clip's cost (:data:`CLIP_COSTS`) times the error rate."""
    if acc[0] is None or x.size == 0:
        return None
    ts, ta = acc[0]
    at = {int(s): float(v) for s, v in zip(steps, x, strict=True) if math.isfinite(float(v))}
    pairs = [(int(s), at[int(s)], 1.0 - float(a)) for s, a in zip(ts, ta, strict=True) if int(s) in at]
    pairs = [(s, loss, err) for s, loss, err in pairs if err >= MIN_ERROR]
    if not pairs:
        return None
    per_error = np.array([loss / err for _, loss, err in pairs])
    for clip, cost in CLIP_COSTS.items():
        if bool(np.all(np.abs(per_error / cost - 1) <= TOLERANCE)):
            s0, loss0, err0 = pairs[-1]
            return CurveVerdict(
                "underfitting", f"the training loss is {float(np.median(per_error)):.4g} times the error rate "
                f"(1 - accuracy) at each of its {len(pairs)} points with an accuracy ({loss0:.4g} at an error rate "
                f"of {err0:.3g} at step {s0}): {cost:.4g} is what a prediction wrong with full confidence costs "
                f"at {clip}, so every output is saturated at 0 or 1 and a clipped output has no gradient to learn "
                "from (labels outside [0, 1], a missing or doubled activation, unscaled inputs or too high a "
                "learning rate), in a short log",
                {**short_evidence(x, "short_saturated"),
                 "clip": clip, "clip_cost": cost, "loss_per_error": per_error.tolist(), "tolerance": TOLERANCE,
                 "min_error_rate": MIN_ERROR, "step": pairs[0][0]})
    return None
