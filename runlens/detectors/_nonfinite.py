"""Signals the two non-finite detectors share: skipped steps and the global gradient norm."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..run import Run


def skipped_steps(run: "Run") -> np.ndarray:
    """Steps whose optimizer step a loss scaler skipped (sorted, unique).

    ``step_skipped == 1`` when logged. Without that column a drop of
    ``loss_scale`` marks the skip: GradScaler halves the scale on exactly
    the steps it skips, and whether the logged scale is read before or
    after the update varies, so both the step with the lower scale and the
    one before it count.
    """
    steps = run.steps("scalars")
    flag = run.column("scalars", "step_skipped")
    if flag is not None:
        return np.unique(steps[flag == 1])
    scale = run.column("scalars", "loss_scale")
    if scale is None or len(scale) < 2:
        return np.empty(0, dtype=np.int64)
    drop = np.flatnonzero(scale[1:] < scale[:-1])
    return np.unique(np.concatenate([steps[drop], steps[drop + 1]]))


def global_grad_norm(run: "Run") -> tuple[np.ndarray, np.ndarray, str] | None:
    """``(steps, norms, source)``: scalars ``grad_norm``, else the L2 norm over the layers table."""
    gn = run.column("scalars", "grad_norm")
    if gn is not None and np.isfinite(gn).any():
        return run.steps("scalars"), gn, "scalars.grad_norm"
    lm = run.layer_matrix("grad_norm")
    if lm is None or not lm.present.any():
        return None
    with np.errstate(all="ignore"):
        sq = np.where(lm.present, lm.values, 0.0) ** 2
        norms = np.sqrt(sq.sum(axis=1))
    norms[~lm.present.any(axis=1)] = np.nan
    return lm.steps, norms, "layers.grad_norm (L2 over layers)"
