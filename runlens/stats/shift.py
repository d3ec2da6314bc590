"""A level shift: a series jumps up to a higher level, settles there and never recovers.

Pure numpy/scipy; knows nothing about runs (``steps`` only name where the
jump is).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from runlens.stats.robust import bucket_medians, mad_sd, rolling_median
from runlens.stats.trend import trend


def level_shift(steps: np.ndarray, x: np.ndarray, start_level: float, *,
                alpha: float = 0.001) -> dict[str, Any] | None:
    """A jump up after which the loss settles at the higher level and never recovers.

    On bucket medians (at most 200), at or after the curve's minimum: the
    split that maximises the median after it minus the median of the tenth
    of the run before it (5 buckets at least). It is
    a level shift when the two sides differ (Mann-Whitney one-sided p <
    ``alpha``), by at least 6 noise sd of the bucket medians and a quarter
    of the progress made before it; the rise is sudden (half of it within 3
    buckets); the stretch after it settles (its Theil-Sen line climbs by
    less than half the jump: more would be divergence); and the last 10%
    stays above the old level by half the jump.
    """
    pos, med = bucket_medians(x, int(np.clip(x.size // 5, 20, 200)))
    k = med.size
    if k < 20:
        return None
    noise = float(mad_sd(np.diff(med))) / math.sqrt(2.0)
    i_min = int(np.argmin(rolling_median(med, 3, mode="nearest")))
    width = max(5, k // 10)  # the level just before a split: its last tenth of the run
    best = None
    for j in range(max(i_min + 1, 5), k - 3):
        jump = float(np.median(med[j:]) - np.median(med[max(0, j - width):j]))
        if best is None or jump > best[1]:
            best = (j, jump)
    if best is None:
        return None
    j, jump = best
    before, after = med[max(0, j - width):j], med[j:]
    old = float(np.median(before))
    if not (jump >= 6 * noise and jump >= 0.25 * max(start_level - old, 0.0) and jump > 0):
        return None
    if float(np.max(med[j:j + 3])) - old < 0.5 * jump:
        return None
    p = float(stats.mannwhitneyu(after, before, alternative="greater").pvalue)
    t = trend(after, pos[j:])
    final = float(np.median(med[-max(2, k // 10):]))
    climb = float(t.slope * (pos[-1] - pos[j])) if math.isfinite(t.slope) else 0.0
    if not (p < alpha and climb < 0.5 * jump and final - old >= 0.5 * jump):
        return None
    return {"shift_step": int(steps[int(pos[j])]), "level_before": old, "level_after": float(np.median(after)),
            "jump": jump, "noise_sd": noise, "mannwhitney_p": p, "after_climb": climb,
            "final_level": final}
