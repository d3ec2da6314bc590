"""A held-out loss that gave back every gain it made while the training loss kept falling.

The long curve's overfitting test asks a rise of ``min_val_rise`` of the held-out minimum, or a third
of a fall of ``min_drop``, so that a converged run's held-out loss creeping up by a percent is not
called overfitting. A run whose held-out loss barely fell before it turned (its training on shuffled
labels, a model that memorizes from its first epoch) passes neither, however clear its rise: 2% down,
then up along its trend for the rest of the run. What says it instead is where the held-out loss
ends: above its first evaluation, every gain given back, while the training loss went on falling
past the held-out minimum. No healthy run ends worse on unseen data than where it was first
evaluated while it keeps fitting its training data; the rise must still be significant by the same
rank and permutation tests and exceed twice the evaluation noise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runlens.detectors.curve import features as shape
from runlens.detectors.curve.params import CurveParams
from runlens.detectors.curve.validation import eval_set_said, overfit_result, perm_p, train_near
from runlens.diagnosis import CurveVerdict
from runlens.stats.chance import validation_at_chance
from runlens.stats.trend import trend

#: The fewest evaluations read: the permutation test must be able to reach ``alpha_val`` on the
#: stretch after the minimum, and the first evaluation must be more than one point before it.
UNDONE_EVALS = 8
#: How many of the last evaluations give the held-out loss's end level (a median: one evaluation
#: above the first is noise).
END_EVALS = 3


def gave_back_all(cfg: CurveParams, steps: np.ndarray, x: np.ndarray,
                  sets: dict[str, tuple[np.ndarray, np.ndarray]], f: dict[str, Any],
                  classes: int | None = None) -> CurveVerdict | None:
    """Overfitting (``kind: val_gave_back_all``) when a held-out loss (``UNDONE_EVALS`` evaluations or
    more) rose after its minimum along a Mann-Kendall trend (p < ``alpha``) that a permutation test
    over evaluation orders confirms (p < ``alpha_val``), by twice its evaluation noise or more, and
    ended (the median of its last ``END_EVALS``) above its first evaluation, while the training loss
    after the held-out minimum fell along a downward Mann-Kendall trend (p < ``alpha_strong``) to an
    end level below its level at that minimum by more than its late spread. A held-out loss still at
    ln K (``classes`` known) is not read here: it learnt nothing that carries, the underfitting reading's
    ``validation_at_chance``, not a model confidently wrong on unseen data."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: (kv[0] != "val_loss", kv[0])):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if vl.size < UNDONE_EVALS:
            continue
        o = overfit_result(cfg, name, vs, vl, f)  # the one the overfitting reading computed
        if o is None or o.get("few_evals") or not (
                o["val_perm_p"] < cfg.alpha_val and o["val_trend_p"] < cfg.alpha
                and o["val_rise"] >= 2 * o["val_noise_sd"] and o["val_rise"] > 0):
            continue
        first, end = float(vl[0]), float(np.median(vl[-END_EVALS:]))
        if not end > first or (classes is not None and classes >= 2
                               and validation_at_chance(steps, x, vs, vl, classes) is not None):
            continue
        after = steps >= o["val_min_step"]
        if int(after.sum()) < UNDONE_EVALS:
            continue
        at_min = train_near(steps, x, o["val_min_step"])
        t = trend(x[after], steps[after].astype(float))
        if not (t.p_decreasing < cfg.alpha_strong and f["end_level"] < at_min - f["late_spread"]):
            continue
        where = eval_set_said(name)
        return CurveVerdict(
            "overfitting", f"validation loss{where} rose from {o['val_min']:.4g} at step {o['val_min_step']} "
            f"({perm_p(o)}) and ended at {end:.4g}, above its first evaluation ({first:.4g}): every gain on "
            f"unseen data given back while the training loss kept falling ({at_min:.4g} -> {f['end_level']:.4g}, "
            f"Kendall p={t.p_decreasing:.1e})",
            shape.curve_evidence(f, **o, kind="val_gave_back_all", eval_set=name, val_first=first, val_end=end,
                                 end_evaluations=END_EVALS, train_at_val_min=at_min,
                                 train_trend_after_min=t.to_dict(), step=o["val_min_step"]))
    return None
