"""Blow-up tests of the loss curve: a NaN masked as 0, and a log that ends as it explodes.

Pure functions of arrays and signal series, read by the curve classifier
(through :mod:`runlens.detectors._curveshape`) and by ``nonfinite_loss``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from runlens.signals import Series


def masked_nan(grad_norm: Series | None, steps: np.ndarray, x: np.ndarray) -> dict[str, Any] | None:
    """The loss collapsing to exactly 0 at the step where the gradients become non-finite.

    A NaN replaced by 0 (``nan_to_num``, a masked mean over nothing, a
    ``where`` on the loss) leaves a perfect loss with broken gradients: the
    zero is a non-finite loss in disguise. Needs the loss to have been
    positive before, and a non-finite global gradient norm at that step or
    the next recorded one.
    """
    zero = np.flatnonzero((x == 0.0) & (np.arange(x.size) > 0))
    if grad_norm is None or zero.size == 0 or not np.any(x[:zero[0]] > 0):
        return None
    step = int(steps[zero[0]])
    gsteps, norms = grad_norm.steps, grad_norm.values
    later = np.flatnonzero(gsteps >= step)
    if later.size == 0:
        return None
    g = int(later[0])
    gap = int(np.median(np.diff(gsteps))) if gsteps.size > 1 else 1
    if np.isfinite(norms[g]) or int(gsteps[g]) > step + max(1, gap):
        return None
    before = x[:zero[0]]
    return {"zero_loss_step": step, "nonfinite_grad_step": int(gsteps[g]), "grad_norm_source": grad_norm.source,
            "zero_loss_steps": int(np.count_nonzero(x[zero[0]:] == 0.0)),
            "last_positive_loss": float(before[before > 0][-1])}


def ended_exploding(grad: Any, steps: np.ndarray, x: np.ndarray, start: float,
                    minimum: float) -> dict[str, Any] | None:
    """The log ends on fewer than 3 losses >= 10 ``max(start, minimum)`` (too few for
    the magnitude rule: alone they could be a spike) while the gradient norm at
    those steps is >= 10 times its median before them too: both signals left
    their scale together and the run stopped there, an explosion."""
    if not (minimum > 0 and start > 0) or grad is None or grad.values.size < 10:
        return None
    big = x >= 10 * max(start, minimum)
    n_tail = big.size if big.all() else int(np.argmin(big[::-1]))
    if not 1 <= n_tail < 3:
        return None
    at = steps[-n_tail:]
    g_before = grad.values[(grad.steps < at[0]) & np.isfinite(grad.values)]
    g_at = np.nan_to_num(grad.values[np.isin(grad.steps, at)], nan=np.inf)
    if g_before.size < 10 or g_at.size == 0 or not np.median(g_before) > 0:
        return None
    ratio = float(np.min(g_at)) / float(np.median(g_before))
    if not ratio >= 10:
        return None
    return {"orders_of_magnitude": math.log10(float(np.min(x[-n_tail:])) / minimum), "grad_norm_ratio": ratio,
            "exploding_points": n_tail, "step": int(at[0])}
