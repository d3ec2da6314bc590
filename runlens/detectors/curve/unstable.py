"""The curve's unstable label from the training loss: a level shift, noise or wandering.

:class:`UnstableChecks` is a stage of :class:`~runlens.detectors.curve.CurveClassifier`
(the validation-jump form of the label is in :mod:`.validation`); the
classifier holds the parameters and documents the rules in its docstring.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.detectors.curve.features import curve_evidence as _ev
from runlens.detectors.curve.underfitting import ProgressChecks
from runlens.diagnosis import CurveVerdict
from runlens.stats.shift import level_shift


class UnstableChecks(ProgressChecks):
    """The verdicts that the training loss is unstable, from the curve features ``f``
    (noise counts only on a curve that progressed, or is chaotic: :class:`ProgressChecks`)."""

    dispersion: float
    min_progress: float
    settle_ratio: float
    wander_ratio: float

    def _level_shift(self, steps: np.ndarray, x: np.ndarray, f: dict[str, Any]) -> CurveVerdict | None:
        shift = level_shift(steps, x, f["start_level"], alpha=self.alpha_strong)
        if shift is None:
            return None
        return CurveVerdict(
            "unstable", f"the loss jumped up at step {shift['shift_step']} from {shift['level_before']:.4g} "
            f"to {shift['level_after']:.4g} and never recovered (Mann-Whitney p={shift['mannwhitney_p']:.1e})",
            _ev(f, **shift, kind="level_shift", step=shift["shift_step"]))

    def _unstable(self, steps: np.ndarray, x: np.ndarray, f: dict[str, Any], sig=None) -> CurveVerdict | None:
        lev = f["late_vs_early"]
        # Settling needs both significance and an effect: with 10^5 steps a
        # 5% smaller late variance is "significant" and means nothing.
        if lev.p_smaller < self.alpha and lev.ratio < self.settle_ratio:
            return None
        S, E, D, scale = f["start_level"], f["end_level"], f["late_spread"], f["scale"]
        progress = (S - E) / D if D > 0 else math.inf
        noisy = (progress < self.min_progress and D >= self.dispersion * scale
                 and (self._progressed(f) or self._chaotic(f, sig)))
        w = f["wander"]
        # Wandering must undo a real share of the progress, be visible at the
        # loss's own level, and be present in both halves of the late third
        # (one step of a schedule is a single jump, not wandering).
        wandering = (w["p"] < self.alpha_strong and w["ratio"] >= self.wander_ratio
                     and w["halves_p"] < self.alpha
                     and w["excess"] >= self.dispersion * max(S - E, 0.0)
                     and w["excess"] >= 0.02 * abs(E))
        if not (noisy or wandering):
            return None
        what = ("fluctuates by more than it improved" if noisy
                else "keeps wandering far beyond minibatch noise")
        return CurveVerdict(
            "unstable", f"the loss {what}: late spread {D:.3g} vs drop {S - E:.3g} "
            f"(variance late/early {lev.ratio:.2f}, Levene p={lev.p_smaller:.2g})",
            _ev(f, kind="noisy" if noisy else "wandering", step=int(steps[-max(3, x.size // 3)])))
