"""The thresholds every stage of the curve verdict reads: the classifier's own parameters.

The stages are functions of these values (and the curve), so they need no
classifier and no other stage's attributes; :class:`~runlens.detectors.curve.CurveClassifier`
has them all, documents them and checks them when it is constructed.
"""

from __future__ import annotations

from typing import Protocol


class CurveParams(Protocol):
    """The curve classifier's parameters, as its stages read them (see its docstring)."""

    min_points: int
    alpha: float
    alpha_strong: float
    growth: float
    min_progress: float
    dispersion: float
    wander_ratio: float
    min_drop: float
    min_evals_after: int
    min_val_rise: float
    settle_ratio: float
    val_jumps: float
    alpha_val: float
    step_ratio: float
    stuck_band: float
    swing: float
    val_give_back: float
