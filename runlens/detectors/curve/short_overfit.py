"""A short log's held-out rise: the long curve's validation test, or a rise told by its size alone.

Both are overfitting readings of :mod:`.short` (its docstring gives their order among the others);
the training loss at the log's end must be no higher than at the held-out minimum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runlens.detectors.curve.params import CurveParams
from runlens.detectors.curve.validation import perm_p, rose_manyfold, val_rises
from runlens.diagnosis import CurveVerdict


def overfit_few(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: dict[str, tuple[np.ndarray, np.ndarray]],
                base: dict[str, Any]) -> CurveVerdict | None:
    """The long curve's validation test (:func:`.validation.val_rises`); a few evaluations give no noise
    estimate (``kind: short_overfitting``)."""
    for name, o, where in val_rises(cfg, sets, noise=False):
        at_min = _train_at(steps, x, o["val_min_step"])
        if not x[-1] <= at_min:
            continue
        return CurveVerdict(
            "overfitting", f"validation loss{where} rose from {o['val_min']:.4g} at step {o['val_min_step']} "
            f"by {o['val_rise']:.3g} over {o['evals_after_min']} evaluations ({perm_p(o)}) "
            f"while the training loss kept falling, in a short log of {x.size} points",
            {**base, **o, "eval_set": name, "train_at_val_min": at_min, "kind": "short_overfitting",
             "step": o["val_min_step"]})
    return None


def manyfold(steps: np.ndarray, x: np.ndarray, sets: dict[str, tuple[np.ndarray, np.ndarray]],
             base: dict[str, Any]) -> CurveVerdict | None:
    """A held-out rise by its size alone (:func:`.validation.rose_manyfold`; ``kind:
    short_overfitting_manyfold``), tried after the rank test and the memorization reading, which say
    more where they hold."""
    for name, o, where in rose_manyfold(sets):
        at_min = _train_at(steps, x, o["val_min_step"])
        if x[-1] <= at_min:
            return CurveVerdict(
                "overfitting", f"validation loss{where} stood at {o['least_ratio_after_min']:.3g}x its minimum "
                f"({o['val_min']:.4g} at step {o['val_min_step']}) or more at each of the {o['evals_after_min']} "
                f"evaluations after it while the training loss kept falling: a rise by effect size "
                f"({o['manyfold']:g}x), too few evaluations for a rank test, in a short log of {x.size} points",
                {**base, **o, "eval_set": name, "train_at_val_min": at_min, "kind": "short_overfitting_manyfold",
                 "step": o["val_min_step"]})
    return None


def _train_at(steps: np.ndarray, x: np.ndarray, step: int) -> float:
    """The training loss logged nearest ``step`` (the held-out minimum's)."""
    return float(x[int(np.argmin(np.abs(steps - step)))])
