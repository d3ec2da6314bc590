"""Signals the two non-finite detectors share: skipped steps and the global gradient norm."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from runlens.io.run import Run


def skipped_steps(run: Run) -> np.ndarray:
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


def global_grad_norm(run: Run) -> tuple[np.ndarray, np.ndarray, str] | None:
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


def nonfinite_mask(run: Run, table: str, name: str) -> np.ndarray | None:
    """True where a column holds NaN or +/-Inf; a null is a missing value, not a NaN."""
    values = run.column(table, name)
    if values is None:
        return None
    bad = ~np.isfinite(values)
    col = getattr(run, table).column(name)
    if col.null_count:
        bad &= ~col.is_null().to_numpy(zero_copy_only=False)
    return bad


def recent_growth(values: np.ndarray, recent: int, baseline: int) -> dict[str, float | None] | None:
    """How far the last ``recent`` values rose above the ``baseline`` values before them.

    ``growth`` is the largest recent value over the baseline median (scale-free);
    ``robust_z`` is that value's log10 against the baseline's log10 median and
    MAD (None when the baseline does not vary). None without enough points or
    with a baseline median that is not positive.
    """
    if len(values) < recent + 3:
        return None
    base = values[:-recent][-baseline:]
    med, peak = float(np.median(base)), float(values[-recent:].max())
    if not med > 0:
        return None
    logs = np.log10(np.maximum(base, 1e-300))
    mad = float(np.median(np.abs(logs - np.median(logs)))) * 1.4826
    z = (np.log10(max(peak, 1e-300)) - float(np.median(logs))) / mad if mad > 0 else None
    return {"baseline_median": med, "recent_max": peak, "growth": peak / med, "robust_z": z}


def activation_culprit(run: Run, step: int) -> str | None:
    """The module whose output the writer saw go non-finite first (its ``nonfinite_loss`` event)."""
    ev = run.events
    if ev is None or not {"kind", "layer"} <= set(ev.column_names):
        return None
    kinds, layers = ev.column("kind"), ev.column("layer")
    for i in np.flatnonzero(run.steps("events") == step):
        if kinds[int(i)].as_py() == "nonfinite_loss":
            return layers[int(i)].as_py() or None
    return None
