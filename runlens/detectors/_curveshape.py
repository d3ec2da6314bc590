"""Shape tests of the loss curve that the curve classifier combines.

Kept apart from ``curve`` (which holds the decision and its documentation)
so that each test is one function with its own statistics: the chance
level, the validation trend after its minimum, evaluation jumps, and the
segment view of the training loss (a jump up that never recovers).
Pure functions of arrays and signal series, except the class-count reader.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from runlens.detectors._curveblowup import ended_exploding, masked_nan  # noqa: F401 - the curve reads them here
from runlens.stats.progress import progress_test
from runlens.stats.robust import bucket_medians, find_spikes, mad_sd, rolling_median
from runlens.stats.trend import trend
from runlens.stats.variance import levene_compare, wander_test

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Series

#: Number of classes searched when only the loss level can tell K.
MAX_LEVEL_CLASSES = 16
#: Config keys that state the number of classes.
CLASS_KEYS = ("num_classes", "n_classes", "classes", "num_labels", "n_labels")
#: Scalars/evals columns that hold it, or the labels themselves.
CLASS_COLUMNS = ("num_classes", "n_classes")
LABEL_COLUMNS = ("label", "labels", "target")


# -- the number of classes ---------------------------------------------------------

def stated_classes(run: Run) -> tuple[int | None, str | None]:
    """``(K, source)``: the number of classes the run states, and where it says so."""
    k = _config_classes(run.config)
    if k is not None:
        return k
    for table in ("scalars", "evals"):
        for name in CLASS_COLUMNS:
            v = run.column(table, name)
            if v is not None and np.isfinite(v).any():
                kk = int(np.nanmedian(v))
                if 2 <= kk <= 10**6:
                    return kk, f"{table}.{name} column"
        for name in LABEL_COLUMNS:
            v = run.column(table, name)
            if v is None:
                continue
            v = v[np.isfinite(v)]
            if v.size >= 20 and np.all(v == np.round(v)):
                kk = int(np.unique(v).size)
                if 2 <= kk <= 10**6:
                    return kk, f"distinct values of the {table}.{name} column"
    return None, None


def _config_classes(config: Any, prefix: str = "config") -> tuple[int, str] | None:
    if not isinstance(config, Mapping):
        return None
    for key in CLASS_KEYS:
        v = config.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and 2 <= v <= 10**6:
            return v, f"{prefix}.{key}"
    for key in ("id2label", "label2id", "label_names", "classes_names"):
        v = config.get(key)
        if isinstance(v, (Mapping, list)) and 2 <= len(v) <= 10**6:
            return len(v), f"{prefix}.{key} (length)"
    for key, sub in config.items():  # one level down: config["model"]["num_classes"]
        if isinstance(sub, Mapping) and prefix.count(".") < 1:
            found = _config_classes(sub, f"{prefix}.{key}")
            if found is not None:
                return found
    return None


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
        best = min((kk for kk in (k - 1, k, k + 1) if 2 <= kk <= MAX_LEVEL_CLASSES),
                   key=lambda kk: abs(value - math.log(kk)), default=None)
        if best is None:
            return None
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


def curve_features(steps: np.ndarray, x: np.ndarray) -> dict[str, Any]:
    """The numbers every label reads, computed once (``x`` finite, ordered)."""
    n = x.size
    # The first steps, not the first 5%: a long run falls a long way in its
    # first 5%, and a learning rate too high throws the loss far above its
    # initial value within a step or two (hence also the very first loss).
    S = min(float(x[0]), float(np.median(x[:5])))
    E = float(np.median(x[-max(5, n // 10):]))
    pos, med = bucket_medians(x, int(np.clip(n // 5, 10, 200)))
    j = int(np.argmin(med))
    i_min = int(round(pos[j]))
    tail = x[i_min:]
    third = max(3, n // 3)
    late = x[-third:]
    scale = max(abs(S), abs(E), 1e-12)
    return {
        "points": int(n), "start_level": S, "end_level": E, "min_level": float(med[j]),
        "final_level": float(np.median(x[-max(5, n // 50):])),
        "min_step": int(steps[i_min]), "relative_drop": (S - E) / scale if S != 0 else 0.0,
        "late_spread": mad_sd(late), "scale": abs(S) if S != 0 else scale,
        "after_min_trend": trend(tail, steps[i_min:].astype(float)) if tail.size >= 10 else None,
        # Differences remove the trend; what is left is the step-to-step noise.
        # The middle third is the reference: the first holds the initial
        # transient, which calms down even in a run that never settles.
        "late_vs_early": levene_compare(np.diff(x[third:2 * third]), np.diff(late)),
        "wander": wander_test(late),
        # Progress before noise: the whole curve's trend, and the fall to its best level as such.
        "progress": progress_test(x),
        "fall_to_min_p": trend(x[:i_min + 1], max_points=200).p_decreasing if i_min >= 4 else 1.0,
    }


# -- validation ----------------------------------------------------------------------

def validation_sets(validation: Mapping[str, Series], last_step: int | None
                    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{name: (steps, losses)}`` per eval set (``val_loss``, each ``val_loss@<set>``):
    finite values only, by step, up to the last training step."""
    out = {}
    for name, series in validation.items():
        s = series.finite()
        keep = np.ones(len(s), bool) if last_step is None else s.steps <= last_step
        out[name] = (s.steps[keep], s.values[keep])
    return out


def eval_noise(vl: np.ndarray) -> float:
    """Robust sd of the evaluations around their rolling median of 5 (a trend leaves none)."""
    if vl.size < 5:
        return float(mad_sd(np.diff(vl)) / math.sqrt(2.0)) if vl.size >= 3 else 0.0
    return float(mad_sd(vl - rolling_median(vl, 5, mode="nearest")))


#: Permutations of the selection-aware overfitting test (p resolution 1/500).
PERMUTATIONS = 499
#: Evaluations the permutation test works on (bucket medians beyond that).
PERM_POINTS = 200


def overfit_test(vs: np.ndarray, vl: np.ndarray, *, min_evals_after: int = 4) -> dict[str, Any] | None:
    """The trend of the validation loss after its minimum, robust to evaluation noise.

    The minimum is taken on the rolling median of 3 (a single lucky
    evaluation does not move it) and quoted as the value logged there; the evaluations after it (the minimum
    left out) get a Mann-Kendall test and a Theil-Sen line, whose climb over
    that stretch is the effect size: jumps between evaluations move
    neither. Choosing the minimum first makes any stretch after it look
    like a rise, so the p-value that decides (``val_perm_p``) is a
    permutation test of the same statistic (Mann-Kendall's standardized S
    after the smoothed minimum) over shuffled evaluation orders: the selection is
    part of its null. Deterministic (a fixed generator). None with fewer
    than 5 evaluations or ``min_evals_after`` after the minimum.
    """
    if vl.size < 5:
        return None
    smooth = _smooth(vl)
    i = int(np.argmin(smooth))
    if vl.size - 1 - i < min_evals_after:
        return None
    seg_s, seg = vs[i + 1:].astype(float), vl[i + 1:]
    t = trend(seg, seg_s)
    rise = float(t.slope * (seg_s[-1] - vs[i])) if math.isfinite(t.slope) else 0.0
    # The minimum quoted is the logged value at that evaluation (one the user finds in the log);
    # the smoothed level it was chosen by is kept beside it.
    return {"val_min": float(vl[i]), "val_min_smoothed": float(smooth[i]), "val_min_step": int(vs[i]),
            "val_rise": rise,
            "val_trend_tau": t.tau, "val_trend_p": t.p_increasing,
            "val_perm_p": _permutation_p(vl, min_evals_after), "val_noise_sd": eval_noise(vl),
            "evals_after_min": int(vl.size - 1 - i), "val_last": float(vl[-1])}


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


def drop_after_spikes(steps: np.ndarray, x: np.ndarray, vs: np.ndarray, vl: np.ndarray,
                      spikes: list[dict[str, float]] | None = None) -> np.ndarray:
    """The validation losses, less those evaluated right after a training-loss spike.

    A corrupt batch throws the model back for a moment: the evaluation that
    follows it jumps too, and that jump belongs to the spike. ``spikes``:
    :func:`find_spikes` of ``x`` when the caller has it (the signals memo).
    """
    if vl.size == 0 or x.size < 50:
        return vl
    spike_steps = steps[[s["index"] for s in (find_spikes(x) if spikes is None else spikes)]]
    if spike_steps.size == 0:
        return vl
    prev = np.concatenate(([np.iinfo(np.int64).min], vs[:-1]))
    hit = np.array([np.any((spike_steps > p) & (spike_steps <= v)) for p, v in zip(prev, vs, strict=True)])
    return vl[~hit]


# -- the segment view ----------------------------------------------------------------

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


def curve_evidence(f: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The curve features every verdict carries, plus ``extra``."""
    lev = f["late_vs_early"]
    ev = {k: f[k] for k in ("points", "start_level", "end_level", "min_level", "min_step",
                            "relative_drop", "late_spread")}
    ev.update(progress_p=f["progress"].p_decreasing, progress_effect=f["progress"].effect)
    ev.update(levene_late_vs_early=lev.statistic, levene_p_smaller=lev.p_smaller,
              variance_ratio_late_early=lev.ratio, wander_ratio=f["wander"]["ratio"],
              wander_p=f["wander"]["p"], wander_excess=f["wander"]["excess"])
    ev.update(extra)
    return ev
