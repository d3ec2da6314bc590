"""The curve's unstable label from the training loss: a level shift, noise or wandering.

A stage of :class:`~runlens.detectors.curve.CurveClassifier`, which documents
the rules (the validation-jump form of the label is in :mod:`.validation`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors.curve.features import curve_evidence as _ev
from runlens.detectors.curve.features import memo
from runlens.detectors.curve.params import CurveParams
from runlens.detectors.curve.underfitting import calm, chaotic, epoch_swings, progressed
from runlens.diagnosis import CurveVerdict
from runlens.stats.robust import mad_sd
from runlens.stats.shift import level_shift
from runlens.stats.trend import trend

if TYPE_CHECKING:
    from runlens.signals import Signals


def level_shift_verdict(cfg: CurveParams, steps: np.ndarray, x: np.ndarray,
                        f: dict[str, Any]) -> CurveVerdict | None:
    shift = memo(f, "level_shift", lambda: level_shift(steps, x, f["start_level"], alpha=cfg.alpha_strong))
    if shift is None:
        return None
    return CurveVerdict(
        "unstable", f"the loss jumped up at step {shift['shift_step']} from {shift['level_before']:.4g} "
        f"to {shift['level_after']:.4g} and never recovered (Mann-Whitney p={shift['mannwhitney_p']:.1e})",
        _ev(f, **shift, kind="level_shift", step=shift["shift_step"]))


def unstable(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, f: dict[str, Any],
             sig: Signals | None = None) -> CurveVerdict | None:
    lev = f["late_vs_early"]
    # Settling needs both significance and an effect: with 10^5 steps a
    # 5% smaller late variance is "significant" and means nothing.
    if lev.p_smaller < cfg.alpha and lev.ratio < cfg.settle_ratio:
        return None
    S, E, scale = f["start_level"], f["end_level"], f["scale"]
    D, still_falling = memo(f, "late_noise", lambda: late_noise(cfg, steps, x))
    progress = (S - E) / D if D > 0 else math.inf
    noisy = (progress < cfg.min_progress and D >= cfg.dispersion * scale
             and (progressed(cfg, f) or chaotic(cfg, f, sig)) and not calm(cfg, f, sig))
    w = f["wander"]
    # Wandering must undo a real share of the progress, be visible at the
    # loss's own level, and be present in both halves of the late third
    # (one step of a schedule is a single jump, not wandering).
    # A level that only bends as it falls is not wandering: it must also go back against its trend
    # (monotone_p), as momentum's oscillation and a rate too high do.
    wandering = (w["p"] < cfg.alpha_strong and w["ratio"] >= cfg.wander_ratio
                 and w["halves_p"] < cfg.alpha and w["monotone_p"] < cfg.alpha_strong
                 and w["excess"] >= cfg.dispersion * max(S - E, 0.0)
                 and w["excess"] >= 0.02 * abs(E))
    # One value per epoch is a mean over its batches: a late spread of a third of its level is the
    # training's own, whatever the progress before it (a per-step log swings that much alone); not
    # while the late third still falls, whose spread is the fall (a second drop after a plateau).
    swinging = epoch_swings(cfg, f, sig, D) and not still_falling and not calm(cfg, f, sig)
    if not (noisy or wandering or swinging):
        return None
    what = ("fluctuates by more than it improved" if noisy
            else "keeps wandering far beyond minibatch noise" if wandering
            else f"swings by {D / abs(E):.0%} of its level from epoch to epoch")
    around = " around its still-falling trend" if still_falling else ""
    return CurveVerdict(
        "unstable", f"the loss {what}: late spread{around} {D:.3g} vs drop {S - E:.3g} "
        f"(variance late/early {lev.ratio:.2f}, Levene p={lev.p_smaller:.2g})",
        _ev(f, kind="noisy" if noisy else "wandering" if wandering else "swinging", step=int(steps[-max(3, x.size // 3)]),
            late_noise=D, late_still_falling=still_falling))


def late_noise(cfg: CurveParams, steps: np.ndarray, x: np.ndarray) -> tuple[float, bool]:
    """``(spread, still_falling)``: the late third's robust spread, around its own Theil-Sen line when
    the loss still falls there (one-sided Kendall p < ``alpha``, by at least the spread of its values).

    Progress before noise: a loss that keeps falling through its last third (a schedule's decay, a
    model unfrozen late, a slow start) spreads its late values by the fall itself, which is progress,
    not fluctuation. Around a flat or rising late trend the spread is the values' own, as before.
    """
    third = max(3, x.size // 3)
    late, at = x[-third:], steps[-third:].astype(float)
    raw = mad_sd(late)
    if late.size < 10:
        return raw, False
    line = trend(late, at)
    # Significant, and the size of the spread it is to explain: a settled loss's last thousandth of
    # a fall is significant over many steps, and leaves its spread to the noise.
    fall = -line.slope * float(at[-1] - at[0])
    if not (line.p_decreasing < cfg.alpha and fall >= raw):
        return raw, False
    return min(raw, mad_sd(late - (line.intercept + line.slope * at))), True
