"""The curve verdict's progress checks: did the loss make progress, and the underfitting label.

Progress is decided before noise (issue 20): a loss that never moved and
jitters is underfitting, not unstable. Functions of the classifier's parameters (:class:`~runlens.detectors.curve.params.CurveParams`),
which :class:`~runlens.detectors.curve.CurveClassifier` documents in its docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._updates import late_step_ratio, weight_collapse
from runlens.detectors.curve import features as shape
from runlens.detectors.curve.params import CurveParams
from runlens.diagnosis import CurveVerdict
from runlens.stats.chance import chance_test

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Signals

_ev = shape.curve_evidence


def progressed(cfg: CurveParams, f: dict[str, Any]) -> bool:
    """Whether the loss made progress: a fall of ``min_drop`` of its start (or from its first
    fifth to its last), along a significant downward Mann-Kendall trend (``alpha``) of the whole
    curve; or a best level
    ``min_drop`` below the start reached along a downward trend at ``alpha_strong`` (a loss
    that fell and then jumped back or became noisy did progress first)."""
    prog = f["progress"]
    # The drop from the first steps, or (a noisy start level) from the first fifth's median.
    if max(f["relative_drop"], prog.relative_drop) >= cfg.min_drop and prog.p_decreasing < cfg.alpha:
        return True
    if (f["start_level"] - f["min_level"]) / f["scale"] < cfg.min_drop:
        return False
    return bool(f["fall_to_min_p"] < cfg.alpha_strong)


def chaotic(cfg: CurveParams, sig: Signals | None) -> bool:
    """Whether a loss that made no progress jitters from steps too large rather than from
    minibatch noise around a loss that never moved (that is underfitting): the late update/weight
    ratio above ``step_ratio``. The loss alone cannot tell the two apart (a batch of 4 jumps by
    its own level), so without step sizes it is underfitting."""
    ratio = late_step_ratio(sig) if sig is not None else None
    return ratio is not None and ratio[0] > cfg.step_ratio


def underfitting(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, f: dict[str, Any], run: Run,
                  sig: Signals) -> CurveVerdict | None:
    classes, source = shape.stated_classes(run)
    chance = chance_test(steps, x, classes, source)
    if chance is not None:
        k = chance["chance_classes"]
        reason = (f"the loss sits at ln({k})={chance['chance_loss']:.3f}, chance level for {k} classes (K from "
                  f"{chance['chance_source']}): the model predicts the prior")
        ev = _ev(f, **chance, step=int(steps[-max(5, x.size // 3)]))
    elif not progressed(cfg, f):
        p = f["progress"].p_decreasing
        drop = f["relative_drop"]
        reason = (f"the loss rose {-drop:.1%} above its start {f['start_level']:.4g}" if drop < 0 else
                  f"the loss barely moved: {drop:.1%} below its start {f['start_level']:.4g}"
                  if drop < cfg.min_drop else
                  f"the loss made no significant progress: its {f['relative_drop']:.1%} fall is within its "
                  f"noise (Kendall p={p:.2g})")
        ev = _ev(f, kind="no_progress", step=int(steps[0]))
    else:
        return None
    ratio, note = weight_collapse(sig, run.config)
    if ratio is not None:
        ev["weight_norm_ratio"] = ratio
    return CurveVerdict("underfitting", reason + note, ev)
