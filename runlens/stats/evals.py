"""Tests of a validation loss: its trend after the minimum, its jumps, its noise.

Pure numpy/scipy on arrays of evaluation steps and losses; knows nothing
about runs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.stats.robust import bucket_medians, mad_sd, rolling_median
from runlens.stats.spikes import rolling_spikes
from runlens.stats.trend import trend


def eval_noise(vl: np.ndarray) -> float:
    """Robust sd of the evaluations around their rolling median of 5 (a trend leaves none)."""
    if vl.size < 5:
        return float(mad_sd(np.diff(vl)) / math.sqrt(2.0)) if vl.size >= 3 else 0.0
    return float(mad_sd(vl - rolling_median(vl, 5, mode="nearest")))


#: Permutations of the selection-aware overfitting test (p resolution 1/500).
PERMUTATIONS = 499
#: Evaluations the permutation test works on (bucket medians beyond that).
PERM_POINTS = 200
#: Evaluations below the five the permutation test needs, at which a rise at every one is still
#: judged (exactly, at the trend's level: no order of four is rarer than 1 in 24).
FEW_EVALS = 4


def overfit_test(vs: np.ndarray, vl: np.ndarray, *, min_evals_after: int = 4) -> dict[str, Any] | None:
    """The trend of the validation loss after its minimum, robust to evaluation noise.

    The minimum is taken on the rolling median of 3 (a single lucky
    evaluation does not move it) and quoted as the value logged there; the evaluations after it (the minimum
    left out) get a Mann-Kendall test and a Theil-Sen line, whose climb over
    that stretch is the effect size, or the median of its last third above the
    smoothed minimum when that is larger (a rise that levelled off, which a line
    underestimates): jumps between evaluations move neither. Choosing the minimum first makes any stretch after it look
    like a rise, so the p-value that decides (``val_perm_p``) is a
    permutation test of the same statistic (Mann-Kendall's standardized S
    after the smoothed minimum) over shuffled evaluation orders: the selection is
    part of its null. Deterministic (a fixed generator). None with fewer
    than 5 evaluations or ``min_evals_after`` after the minimum, except
    exactly 4 rising at each one (:func:`_few_evals`, an exact test).
    """
    if vl.size == FEW_EVALS and min_evals_after > FEW_EVALS - 1:
        return _few_evals(vs, vl)
    if vl.size < 5:
        return None
    smooth = _smooth(vl)
    i = int(np.argmin(smooth))
    if vl.size - 1 - i < min_evals_after:
        return None
    seg_s, seg = vs[i + 1:].astype(float), vl[i + 1:]
    t = trend(seg, seg_s)
    rise = float(t.slope * (seg_s[-1] - vs[i])) if math.isfinite(t.slope) else 0.0
    # A line underestimates a rise that levelled off (a rate annealed to nothing after the turn): the
    # level of the last third of the stretch above the smoothed minimum is the climb too, robust alike.
    rise = max(rise, float(np.median(seg[-max(3, seg.size // 3):])) - float(smooth[i]))
    # The minimum quoted is the logged value at that evaluation (one the user finds in the log);
    # the smoothed level it was chosen by is kept beside it.
    return {"val_min": float(vl[i]), "val_min_smoothed": float(smooth[i]), "val_min_step": int(vs[i]),
            "val_rise": rise,
            "val_trend_tau": t.tau, "val_trend_p": t.p_increasing,
            "val_perm_p": _permutation_p(vl, min_evals_after), "val_noise_sd": eval_noise(vl),
            "evals_after_min": int(vl.size - 1 - i), "val_last": float(vl[-1])}


def _few_evals(vs: np.ndarray, vl: np.ndarray) -> dict[str, Any] | None:
    """Four evaluations, the first the lowest and each one above the last: the one order of four
    in 24 (exact p = 1/24) that says the held-out loss only rose, the most that four evaluations
    can say. Its evidence says ``few_evals``; None for any other order."""
    if not np.all(np.diff(vl) > 0):
        return None
    # Exact without enumerating the orders: of the 4! orders of four distinct values, the statistic
    # after the minimum (:func:`_mk_after_min`) reaches the strictly rising order's only in that order
    # (any other puts the minimum later, leaving too few evaluations after it, or has a fall after it).
    p = 1 / math.factorial(FEW_EVALS)
    t = trend(vl[1:], vs[1:].astype(float))
    rise = float(t.slope * (vs[-1] - vs[0])) if math.isfinite(t.slope) else float(vl[-1] - vl[0])
    return {"val_min": float(vl[0]), "val_min_smoothed": float(vl[0]), "val_min_step": int(vs[0]),
            "val_rise": rise, "val_trend_tau": t.tau, "val_trend_p": float(p), "val_perm_p": float(p),
            "val_noise_sd": 0.0, "evals_after_min": FEW_EVALS - 1, "val_last": float(vl[-1]),
            "few_evals": FEW_EVALS}


def _smooth(v: np.ndarray) -> np.ndarray:
    return rolling_median(v, 3, mode="nearest") if v.size >= 7 else v


def _mk_after_min(v: np.ndarray, min_after: int) -> float:
    i = int(np.argmin(_smooth(v)))
    seg = v[i + 1:]
    if seg.size < max(3, min_after):
        return -math.inf
    # Mann-Kendall's S standardized by its null sd: a long steady rise
    # scores far above a short one, which a plain tau would not tell apart.
    n = seg.size
    d = np.sign(seg[None, :] - seg[:, None])
    return float(np.triu(d, 1).sum() / math.sqrt(n * (n - 1) * (2 * n + 5) / 18.0))


def _permutation_p(vl: np.ndarray, min_after: int) -> float:
    """P(Mann-Kendall z after the smoothed minimum >= the observed one) over shuffled evaluations."""
    v = vl if vl.size <= PERM_POINTS else bucket_medians(vl, PERM_POINTS)[1]
    observed = _mk_after_min(v, min_after)
    rng = np.random.default_rng(0)
    hits = sum(_mk_after_min(rng.permutation(v), min_after) >= observed for _ in range(PERMUTATIONS))
    return (1 + hits) / (PERMUTATIONS + 1)


def val_jumps(vl: np.ndarray, min_evals: int = 6) -> dict[str, float]:
    """How much the late validation loss jumps between evaluations.

    RMS of the residuals of the later half of the evaluations from their
    rolling median of 5 (edges padded with the nearest value, so a monotone
    fall or rise leaves none), the same without the evaluation of the
    largest residual (``rms_without_largest``), with the level (median) and
    the progress of the validation loss (first evaluation minus the level)
    to judge it by (the start is the median of the first three evaluations: a model's first
    evaluation, straight from its initialization, can sit far above the rest, as a VAE's KL term does).
    """
    late = vl[vl.size // 2:]
    if late.size < min_evals:
        return {"rms": 0.0, "rms_without_largest": 0.0, "level": 0.0, "progress": 0.0}
    resid = late - rolling_median(late, 5, mode="nearest")
    level = float(np.median(late))
    # The same with the evaluation of the largest excursion left out: one bump is an event, not
    # jumping; a validation loss that jumps keeps most of its RMS without any single evaluation.
    rest = np.delete(late, int(np.argmax(np.abs(resid))))
    rest_resid = rest - rolling_median(rest, 5, mode="nearest")
    return {"rms": float(np.sqrt(np.mean(resid ** 2))), "level": level,
            "rms_without_largest": float(np.sqrt(np.mean(rest_resid ** 2))),
            "progress": float(max(np.median(vl[:3]) - level, 0.0))}


def still_falling(vl: np.ndarray, alpha: float, min_drop: float, min_evals: int = 6) -> bool:
    """Whether the validation loss is still falling: ``min_drop`` or more of its start (the median of its
    first three evaluations) below it at the later half's median, and that later half (``min_evals`` at
    least) along a downward Kendall trend at ``alpha`` with its lowest value in its last third. Beside a
    training loss that only grows noisier as it falls (a learning model's per-batch spread), a loss that
    jumps on its way down, reaching new lows to the end, is a model still learning, not one that jumps
    without settling; one that jumps about a level has neither the fall nor, but by chance, the trend."""
    v = vl[np.isfinite(vl)]
    late = v[v.size // 2:]
    if late.size < min_evals:
        return False
    start = float(np.median(v[:3]))
    fell = start > 0 and (start - float(np.median(late))) >= min_drop * start
    return fell and bool(trend(late).p_decreasing < alpha) and int(np.argmin(late)) >= late.size - math.ceil(late.size / 3)


def drop_after_spikes(steps: np.ndarray, x: np.ndarray, vs: np.ndarray, vl: np.ndarray,
                      spikes: list[dict[str, float]] | None = None) -> np.ndarray:
    """The validation losses, less those evaluated right after a training-loss spike.

    A corrupt batch throws the model back for a moment: the evaluation that
    follows it jumps too, and that jump belongs to the spike. ``spikes``:
    :func:`rolling_spikes` of ``x`` when the caller has it (the signals memo).
    """
    if vl.size == 0 or x.size < 50:
        return vl
    spike_steps = steps[[int(s["index"]) for s in (rolling_spikes(x) if spikes is None else spikes)]]
    if spike_steps.size == 0:
        return vl
    prev = np.concatenate(([np.iinfo(np.int64).min], vs[:-1]))
    hit = np.array([np.any((spike_steps > p) & (spike_steps <= v)) for p, v in zip(prev, vs, strict=True)])
    return vl[~hit]


def rises_after_min(vl: np.ndarray) -> int:
    """How many evaluations follow the lowest one when each is above the one before it (4 or more),
    else 0: given where the minimum is, 1 order of their k! (exact p = 1/k!)."""
    vl = vl[np.isfinite(vl)]
    if vl.size < 5:
        return 0
    after = vl[int(np.argmin(vl)):]
    return after.size - 1 if after.size - 1 >= 4 and bool(np.all(np.diff(after) > 0)) else 0
