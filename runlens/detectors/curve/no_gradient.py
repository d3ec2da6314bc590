"""A short log whose gradient norm is exactly 0 at its end: no signal reaches the weights.

A global gradient norm is a sum of squares over every parameter: it is exactly 0 only when every
gradient is, which no loss that still depends on the weights gives (a float32 gradient underflows to
0 only where every path to the loss is cut: dead ReLUs throughout, a detached output, a saturated
head). Three such values in a row, with the loss beside them non-zero, say the weights no longer
move, whatever the loss's noise (a batch's loss changes with the batch, not with the model).

Some trainers print 0 for a norm they do not compute (DeepSpeed's ZeRO stages under the Hugging Face
``Trainer``, Megatron-DeepSpeed's ``grad norm: 0.000``), and a fixed-point print rounds a small norm to
0. So the norm must have been measured: positive at some value before its zeros, falling to them (a
column of zeros from its first value is a norm the trainer did not compute). And frozen weights give a
loss that is a function of the batch alone, in no order: a loss that trends over the same steps
(Kendall, at ``alpha``) is one whose weights moved, and its zeros measured nothing.
"""

from __future__ import annotations

import numpy as np

from runlens.detectors.curve.features import short_evidence
from runlens.diagnosis import CurveVerdict
from runlens.stats.trend import trend

#: The fewest last gradient norms exactly 0 that say no gradient flows: one is a step whose loss was
#: masked out, three in a row are a model that no longer learns.
ZERO_GRADS = 3


def no_gradient(steps: np.ndarray, x: np.ndarray, grads: tuple[np.ndarray, np.ndarray] | None,
                alpha: float = 0.05) -> CurveVerdict | None:
    """Underfitting (``kind: short_no_gradient``) when the logged gradient norm, positive before, is
    exactly 0 at each of its last ``ZERO_GRADS`` values or more while the training loss over those steps
    is non-zero and has no Kendall trend at ``alpha`` either way."""
    if grads is None or x.size == 0:
        return None
    gs, gv = grads
    nonzero = np.flatnonzero(gv != 0)
    tail = gv.size - (int(nonzero[-1]) + 1 if nonzero.size else 0)
    if tail < ZERO_GRADS or not nonzero.size or not bool(np.any(gv[nonzero] > 0)):
        return None
    since = int(gs[gv.size - tail])
    at = steps >= since
    late = x[at]
    if late.size == 0 or bool(np.any(late == 0)):
        return None
    moved = trend(late, steps[at].astype(float)) if late.size >= 3 else None
    if moved is not None and moved.p < alpha:
        return None
    return CurveVerdict(
        "underfitting", f"the gradient norm is exactly 0 at each of its last {tail} values (from step {since} "
        f"on) while the training loss beside it is not ({float(np.min(late)):.4g} to {float(np.max(late)):.4g}): "
        "no gradient reaches the weights, so nothing learns (dead units throughout, a detached output, a "
        "saturated head), in a short log",
        {**short_evidence(x, "short_no_gradient"),
         "zero_grad_values": tail, "min_zero_grads": ZERO_GRADS, "first_zero_step": since,
         "loss_trend_p": None if moved is None else float(moved.p), "alpha": alpha,
         "loss_min": float(np.min(late)), "loss_max": float(np.max(late)), "step": since})
