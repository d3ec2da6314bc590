"""Is a loss at chance level: ln K, the loss of a classifier that predicts the uniform prior.

Pure numpy; knows nothing about runs (the class count, when the run states
one, is the caller's to find).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.stats.robust import mad_sd
from runlens.stats.trend import trend

#: Number of classes searched when only the loss level can tell K.
MAX_LEVEL_CLASSES = 16


def chance_level(value: float, *, classes: int | None = None,
                 rel_tol: float = 0.02) -> dict[str, Any] | None:
    """The K whose ln K is ``value`` (within ``rel_tol``), if it is unambiguous.

    With ``classes`` known only that K is tried, and a level above ln K
    counts up to half the gap to ln(K + 1): no prediction independent of the
    input does better than the prior, so a flat loss above it is no better
    than chance either (a prior learned imperfectly, an output still a
    little confident). Otherwise K = 2..16, and ``value`` must also be
    within a quarter of the gap to ln(K +- 1): the larger K are too close
    together to tell from a level alone.
    """
    if not math.isfinite(value) or value <= 0:
        return None
    if classes is not None:
        best, tol = classes, rel_tol * math.log(classes)
        above = max(tol, 0.5 * (math.log(classes + 1) - math.log(classes)))
        if -tol <= value - math.log(best) <= above:
            return {"chance_classes": best, "chance_loss": math.log(best), "chance_tolerance": tol}
        return None
    else:
        if value > math.log(MAX_LEVEL_CLASSES + 1):  # no K in range; exp would overflow on a blown-up loss
            return None
        k = int(round(math.exp(value)))
        nearest = min((kk for kk in (k - 1, k, k + 1) if 2 <= kk <= MAX_LEVEL_CLASSES),
                      key=lambda kk: abs(value - math.log(kk)), default=None)
        if nearest is None:
            return None
        best = nearest
        tol = min(rel_tol * math.log(best),
                  0.25 * (math.log(best + 1) - math.log(best)),
                  0.25 * (math.log(best) - math.log(max(best - 1, 1))))
    if abs(value - math.log(best)) > tol:
        return None
    return {"chance_classes": best, "chance_loss": math.log(best), "chance_tolerance": tol}


def chance_test(steps: np.ndarray, x: np.ndarray, classes: int | None, source: str | None,
                *, rel_tol: float = 0.02) -> dict[str, Any] | None:
    """Is the loss sitting at ln K, the loss of a classifier predicting the uniform prior?

    The level of the last third (median) must be within the tolerance of
    ln K, and its Theil-Sen line must not leave that band over the last
    third (a run passing through ln K on its way down is not at chance).
    When only the level tells K, the last third's robust sd must also be
    within ``rel_tol`` of ln K: the loss of a prior barely varies by batch.
    """
    late = x[-max(5, x.size // 3):]
    level = float(np.median(late))
    hit = chance_level(level, classes=classes, rel_tol=rel_tol)
    if hit is None:
        return None
    t = trend(late, steps[-late.size:].astype(float))
    drift = abs(t.slope) * float(steps[-1] - steps[-late.size]) if math.isfinite(t.slope) else 0.0
    if drift > hit["chance_tolerance"]:
        return None
    spread = float(mad_sd(late))
    # From the level alone the match may be a coincidence (a language model
    # settling near 1.10 is not predicting 3 classes); a model predicting the
    # prior has almost no minibatch noise, its loss is ln K whatever the batch.
    if source is None and not spread <= rel_tol * hit["chance_loss"]:
        return None
    return {**hit, "chance_source": source or "the loss level (no class count in the log)",
            "late_level": level, "late_drift": drift, "late_spread_at_chance": spread}
