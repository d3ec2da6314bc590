"""Helpers of the non-finite detectors (skipped steps, the gradient norm and the first
non-finite loss come from :mod:`runlens.signals`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import median_abs_deviation

if TYPE_CHECKING:
    from runlens.io.run import Run


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
    mad = float(median_abs_deviation(logs, scale="normal"))
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
