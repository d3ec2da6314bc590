"""Where a short log's loss sits, and whether it moved at all: readings of a few points' level.

A short log has no power for the long curve's trend-against-noise tests, but
four of its readings need none: a loss whose last points sit at ln K to the
printed digits (the prior, whatever came before), a held-out loss that sits
at ln K at every evaluation, a learning rate too small to move a float32
weight, and a log that starts at the start of training and never falls. Each is underfitting; see :mod:`.short` for the order in
which a short log's readings are tried.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from runlens.detectors.curve.features import short_evidence
from runlens.detectors.curve.params import CurveParams
from runlens.diagnosis import CurveVerdict
from runlens.signals.series import Series
from runlens.stats.chance import COINCIDENCE_ALPHA, GUESSED_SPREAD, chance_level, level_coincidence
from runlens.stats.robust import mad_sd
from runlens.stats.trend import Trend, trend

#: How many optimizer steps from the start of training a step-indexed short log must cover before
#: "no progress" means anything: longer than a usual warmup, during which a loss may not fall yet.
MIN_START_STEPS = 500
#: How many epochs from the start an epoch-indexed short log must cover: after that many passes over
#: the data, a model that learns has fallen by more than ``min_drop`` on data it has seen.
MIN_START_EPOCHS = 4
#: A fall from the start under ``min_drop / CRAWL`` is no progress even where it is steady: at its
#: pace, ``CRAWL`` times the span logged would not reach ``min_drop``.
CRAWL = 10.0


#: A spread of a loss, relative to its level, that no training model holds over several points.
ALIKE = 1e-3
#: The fewest points of a tail held within ``ALIKE`` that say the loss stopped, whatever came before.
ALIKE_TAIL = 6


#: Evaluations at ln K from the first on that need no coincidence test when K is guessed: a held-out
#: loss that never left the prior's level (as the long curve's test takes a loss that started there).
NEVER_LEFT = 4


def _at_chance(values: np.ndarray, classes: tuple[int | None, str | None], *,
               from_start: bool = False) -> dict[str, Any] | None:
    """The chance level ``values`` all sit at: within its tolerance, and when K is guessed from the
    level, printed alike to ``GUESSED_SPREAD`` of ln K and, unless they are ``NEVER_LEFT`` values or
    more from the start of the series (``from_start``), too close to it for a coincidence."""
    k, source = classes
    level = float(np.median(values))
    hit = chance_level(level, classes=k)
    if hit is None or not np.all(np.abs(values - hit["chance_loss"]) <= hit["chance_tolerance"]):
        return None
    ev = {**hit, "chance_source": source or "the loss level (no class count in the log)", "late_level": level,
          "late_drift": float(np.ptp(values))}
    if source is None:
        # The prior's loss is ln K whatever the batch: a level that only passes near some ln K (they
        # are 0.1 apart around K = 10) moves more than that, or lands there by chance.
        # Less the median's own standard error, as the long curve's chance test allows.
        se = 1.2533 * float(mad_sd(values)) / math.sqrt(values.size)
        p = level_coincidence(level, hit["chance_classes"], slack=se)
        never_left = from_start and values.size >= NEVER_LEFT
        if float(np.ptp(values)) > GUESSED_SPREAD * hit["chance_loss"] or (p > COINCIDENCE_ALPHA and not never_left):
            return None
        ev["level_coincidence_p"] = p
    return ev


def chance_tail(steps: np.ndarray, x: np.ndarray, classes: tuple[int | None, str | None]) -> CurveVerdict | None:
    """The last half of the points (3 at least) all at ln K: the model ended predicting the prior,
    whether it fell there or rose there (allennlp's 1.356 then 1.3864, 1.3864, 1.3864 = ln 4)."""
    k = max(3, math.ceil(x.size / 2))
    if x.size < 3 or (hit := _at_chance(x[-k:], classes)) is None:
        return None
    where = f"ln({hit['chance_classes']})={hit['chance_loss']:.4f}, chance level (K from {hit['chance_source']})"
    return CurveVerdict(
        "underfitting", f"the last {k} of {x.size} losses sit at {where}: they stay within "
        f"{hit['late_drift']:.3g} of each other, the loss of a model that predicts the prior, in a short log",
        {**short_evidence(x, "short_chance_tail"),
         "tail_points": k, "start_level": float(x[0]), "end_level": float(x[-1]),
         "relative_drop": (float(x[0]) - float(x[-1])) / abs(float(x[0])) if x[0] else 0.0, **hit,
         "step": int(steps[-k])})


def validation_chance(x: np.ndarray, sets: dict[str, tuple[np.ndarray, np.ndarray]],
                      classes: tuple[int | None, str | None]) -> CurveVerdict | None:
    """A held-out loss at ln K at every one of 3 or more evaluations: whatever the training loss
    did, nothing it learned carries to unseen data (Lasagne's 2.3032, 2.3032, 2.3018 ... = ln 10)."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl)
        if int(ok.sum()) < 3 or (hit := _at_chance(vl[ok], classes, from_start=True)) is None:
            continue
        where = f"ln({hit['chance_classes']})={hit['chance_loss']:.4f}, chance level (K from {hit['chance_source']})"
        return CurveVerdict(
            "underfitting", f"the validation loss{'' if name == 'val_loss' else f' ({name})'} sits at {where} at "
            f"each of its {int(ok.sum())} evaluations (within {hit['late_drift']:.3g}): the model predicts the "
            f"prior on unseen data; the training loss ended at {x[-1]:.4g}, in a short log",
            {**short_evidence(x, "short_validation_at_chance"),
             "eval_set": name, "evaluations": int(ok.sum()), "val_level": hit.pop("late_level"),
             "val_spread": hit.pop("late_drift"), **hit, "step": int(vs[ok][0])})
    return None


#: The learning rate at or below which training stops: a float32 weight moves only by more than 2^-24
#: (6e-8) of itself, and a step of lr x a gradient of 100 (Adam's is about lr) on a weight of 1e-2 is
#: under that from lr 6e-12 down. The time-series forecasters halve the rate every epoch: 40 epochs in,
#: it is there.
VANISHED_LR = 1e-12


def lr_vanished(steps: np.ndarray, x: np.ndarray, lr: Series | None) -> CurveVerdict | None:
    """The logged learning rate above 0 and at or below ``VANISHED_LR`` at each of its last half of points
    (2 at least; a printed 0 may be a rate rounded away): no weight moves, whatever the loss's batch-to-batch noise shows (Informer's epochs 915-918,
    its rate halved each epoch to 7e-280 while its loss wandered at 840)."""
    if lr is None or lr.values.size < 2:
        return None
    k = max(2, math.ceil(lr.values.size / 2))
    tail = lr.values[-k:]
    # A printed 0 is no evidence: "lr: 0.0000" is any rate under 5e-5 at four decimals.
    tiny = (lr.values > 0) & (lr.values <= VANISHED_LR)
    if not np.all(tiny[-k:]):
        return None
    above = np.flatnonzero(~tiny)
    first = int(above[-1]) + 1 if above.size else 0
    since, n = int(lr.steps[first]), lr.values.size - first
    return CurveVerdict(
        "underfitting", f"the learning rate is {float(tail[-1]):.3g} from step {since} on (at most {VANISHED_LR:g} "
        f"at each of the last {n} of its {lr.values.size} values): no float32 weight moves at that rate, so "
        f"nothing trains; the loss ended at {float(x[-1]):.4g}, in a short log",
        {**short_evidence(x, "short_lr_vanished"),
         "last_lr": float(tail[-1]), "max_lr_since": float(np.max(lr.values[first:])), "vanished_lr": VANISHED_LR,
         "lr_points": int(lr.values.size), "start_level": float(x[0]), "end_level": float(x[-1]),
         "relative_drop": (float(x[0]) - float(x[-1])) / abs(float(x[0])) if x[0] else 0.0, "step": since})


def from_start(steps: np.ndarray, index: str) -> bool:
    """Whether a log counted in steps or epochs begins at the start of training: its first point
    within one logging interval of 0. A log counted in rows does not say where it begins, nor one
    whose steps restart in an epoch after the first (``late_step``: :func:`..features.late_index`)."""
    if index not in ("step", "epoch") or steps.size < 2:
        return False
    first, gap = float(steps[0]), float(steps[1] - steps[0])
    return 0 <= first <= gap


def no_progress(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, t: Trend, base: dict[str, Any],
                sets: dict[str, tuple[np.ndarray, np.ndarray]], index: str,
                lr: Series | None = None) -> CurveVerdict | None:
    """From the start of training (its first point within one logging interval of step or epoch 0),
    over ``MIN_START_EPOCHS`` epochs or ``MIN_START_STEPS`` steps at least, the loss's end level (the
    median of its last fifth) is within ``min_drop`` of the lower of its first point and the median of
    its first three and not that far below its first point, or no point after the first is below it;
    no held-out loss fell by ``min_drop``; and neither a downward Kendall trend at ``alpha_strong`` nor
    a fall at every point (a nearly monotone fall is progress, however slow, unless it crawls: under
    ``min_drop / CRAWL`` over the whole span): a model that learns drops fastest at the start.
    A log that begins mid-run may be a plateau, and a log counted in rows says nothing of where it
    begins; neither is judged. Nor is a log whose logged learning rate rose over it and never fell
    (:func:`warming_up`): the warmup has not ended, and a loss need not fall before it does."""
    if x.size < 5 or not from_start(steps, index) or warming_up(steps, lr):
        return None
    span = float(steps[-1])
    if span < (MIN_START_EPOCHS if index == "epoch" else MIN_START_STEPS):
        return None
    S, first = base["start_level"], float(x[0])
    end = float(np.median(x[-max(2, x.size // 5):]))
    # Levels, not extremes: one minibatch far below the start is noise, the level the run ends at is
    # not. From the lower of the first point and the median of the first three (a loss that rose after
    # its first print and came back made no progress: 2.15 -> 2.43 -> ... -> 2.12).
    ref = min(first, S)
    drop = (ref - end) / abs(ref) if ref else 0.0
    # The first point is where the model started: an end far below it is progress that the median of
    # the first three hides (20.8 -> 13.7 -> 12.1 -> 13.6 -> 11.6).
    best = (first - end) / first if first > 0 else 0.0
    # Or no loss printed after the first was below it: whatever its noise, the run never did better
    # than the model it started from (a loss that rose from its start and jitters above it).
    never_below = float(np.min(x[1:])) >= first > 0 and not _rest_fell(cfg, steps, x, end)
    if not (0 < ref and ((abs(drop) < cfg.min_drop and best < cfg.min_drop) or never_below)):
        return None
    # So slow that ten times the span logged would not reach ``min_drop`` at its pace: a fall, but
    # the loss barely moved from the start (a 9.158 -> 9.083 creep over ten epochs at ln of the vocabulary).
    crawl = 0 <= drop < cfg.min_drop / CRAWL and best < cfg.min_drop / CRAWL
    if not crawl and (t.p_decreasing < cfg.alpha_strong or bool(np.all(np.diff(x) < 0))):
        # A nearly monotone fall is progress, however small (Keras' 0.859, 0.817, 0.810, ... 0.787 over
        # 8 epochs, each below the one before): the claim is "no progress", not "slow". Only such a fall
        # reaches alpha_strong at this size; a noisy creep (2.91 -> 2.85 over ten) does not. A fall at
        # every point is, whatever its size: its exact p, 1/n!, is the least n points give (six cannot
        # reach alpha_strong).
        return None
    for _, vl in sets.values():
        v = vl[np.isfinite(vl)]
        if v.size >= 2 and v[0] > 0 and (v[0] - float(np.min(v[1:]))) / v[0] >= cfg.min_drop:
            return None  # the held-out loss learned: progress the training loss's average hides
    unit = "epochs" if index == "epoch" else "steps"
    moved = (f"the loss crept {-drop:+.2%} ({ref:.4g} to {end:.4g}): at that pace ten times the span logged would "
             f"not take it down {cfg.min_drop:.0%}" if crawl and not never_below else
             f"no loss after the first ({float(x[0]):.4g}) was below it" if never_below else
             f"the loss moved {-drop:+.1%} ({ref:.4g} to {end:.4g}), less than {cfg.min_drop:.0%}")
    return CurveVerdict(
        "underfitting", f"from the start of training to {unit[:-1]} {int(span)}, {moved} (Kendall tau={t.tau:.2f}, "
        f"p={t.p_decreasing:.2g}): a model that learns falls fastest in its first {unit}; it made no progress, "
        "in a short log",
        {**base, "relative_drop": drop, "best_drop": best, "end_level": end, "span": span, "index_kind": index,
         "never_below_start": never_below, "crawl": crawl, "kind": "short_no_progress", "step": int(steps[0])})


def _rest_fell(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, end: float) -> bool:
    """Whether the losses after the first fell by ``min_drop`` from the median of their first three,
    along a downward Kendall trend at ``alpha`` or at every point: a first print far below the rest (a
    running sum divided by the interval before the interval filled: 0.01, then 0.5, 0.45, ... 0.35)
    is no start the run failed to beat."""
    rest = x[1:]
    head = float(np.median(rest[:3]))
    if not (head > 0 and (head - end) / head >= cfg.min_drop):
        return False
    return bool(np.all(np.diff(rest) < 0)) or trend(rest, steps[1:].astype(float)).p_decreasing < cfg.alpha


#: Evaluations a validation loss printed alike must span while the training loss fell by ``min_drop``.
FROZEN_MOVED = 3


def frozen_validation(cfg: CurveParams, steps: np.ndarray, x: np.ndarray,
                      sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> CurveVerdict | None:
    """The validation loss printed alike at every evaluation (2 or more, at different steps, to a
    thousandth of its level or finer), with the training loss not down by ``min_drop`` (or at
    ``FROZEN_MOVED`` evaluations or more whatever it did): a fixed validation set gives the same loss
    only to the same weights, so nothing was learnt between the evaluations, or what is evaluated is
    not what was trained (OpenNMT's "Validation perplexity: 56.168" at steps 380,000 and 510,000, its lr
    printed as 0)."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if vl.size < 2 or np.unique(vs).size < 2 or float(np.ptp(vl)) != 0.0 or vl[0] == 0:
            continue
        q = printed_step(vl)
        drop = (float(x[0]) - float(x[-1])) / abs(float(x[0])) if x[0] else 0.0
        # Training that moved the weights (its loss down by ``min_drop``) and a validation loss the same
        # to its last digit at 3 evaluations or more: what is evaluated is not what was trained (an
        # output saturated to a constant, a metric never recomputed). Two alike may be a coincidence.
        moved = drop >= cfg.min_drop
        if q > ALIKE * abs(float(vl[0])) or (moved and np.unique(vs).size < FROZEN_MOVED):
            continue
        what = ("while the weights moved, so what is evaluated does not change with training (an output "
                "saturated to a constant, a metric not recomputed)" if moved else "so nothing was learnt between them")
        return CurveVerdict(
            "underfitting", f"the validation loss is {vl[0]:.6g} at each of its {vl.size} evaluations (steps "
            f"{int(vs[0])} to {int(vs[-1])}): only the same weights give a fixed validation set the same loss, "
            f"{what}; the training loss moved {-drop:+.1%}, in a short log",
            {**short_evidence(x, "short_frozen_validation"),
             "eval_set": name, "evaluations": int(vl.size), "val_level": float(vl[0]), "printed_step": q,
             "relative_drop": drop, "step": int(vs[0])})
    return None


def printed_step(x: np.ndarray) -> float:
    """The unit of the last printed digit: 10^-d for the fewest decimals d (<= 8) that hold every value."""
    for d in range(9):
        if np.all(np.abs(np.round(x, d) - x) <= 1e-9 * np.maximum(1.0, np.abs(x))):
            return 10.0 ** -d
    return 0.0


#: The fewest values a repeat must hold, of which ``REPEAT_DISTINCT`` different: a sequence of the
#: same few values is a loss printed coarsely, not a pass repeated.
REPEAT_MIN = 4
REPEAT_DISTINCT = 3


def repeated(steps: np.ndarray, x: np.ndarray) -> CurveVerdict | None:
    """The last ``m`` losses (``REPEAT_MIN`` at least, ``REPEAT_DISTINCT`` of them different) repeat,
    value for value, the ``m`` printed ``lag`` points before them, at later steps: the same batches
    gave the same losses, so the weights did not change between the two passes (a zero learning rate,
    frozen parameters, an optimizer that never steps). Noise of any trained model does not repeat a
    sequence to the printed digit."""
    n = x.size
    for lag in range(REPEAT_MIN, n - REPEAT_MIN + 1):
        m = 0
        while m < n - lag and x[n - 1 - m] == x[n - 1 - m - lag]:
            m += 1
        if m >= REPEAT_MIN and np.unique(x[n - m:]).size >= REPEAT_DISTINCT:
            return CurveVerdict(
                "underfitting", f"the last {m} losses repeat, value for value, the {m} printed {lag} points "
                f"before them (from step {int(steps[n - m - lag])} and from step {int(steps[n - m])}): the same "
                "batches gave the same losses, so the weights did not change between the passes",
                {"points": int(n), "short_log": True, "repeat_length": int(m), "repeat_lag": int(lag),
                 "kind": "short_repeated", "step": int(steps[n - m])})
    return None


#: How far a learning rate must fall over the points judged to call the schedule annealing: an order of
#: magnitude, the last stretch of a cosine or linear decay to 0 (step decays of 10x count too).
ANNEAL = 10.0


def _rate_over(steps: np.ndarray, lr: Series | None) -> np.ndarray:
    """The logged learning rate's finite, positive values over the span of ``steps`` (none without a rate)."""
    if lr is None or steps.size < 2:
        return np.empty(0)
    inside = (lr.steps >= steps[0]) & (lr.steps <= steps[-1]) & np.isfinite(lr.values) & (lr.values > 0)
    return lr.values[inside]


def warming_up(steps: np.ndarray, lr: Series | None) -> bool:
    """Whether the logged learning rate never fell over the span of ``steps`` and ended higher than it
    began: a warmup still under way at the log's end (SPML's 4.0e-6 rising to 4.6e-6 over 800 of its
    first epoch's iterations), during which "no progress yet" is the schedule's, not the model's."""
    v = _rate_over(steps, lr)
    return v.size >= 3 and bool(np.all(np.diff(v) >= 0)) and float(v[-1]) > float(v[0])


def annealed(steps: np.ndarray, lr: Series | None) -> bool:
    """Whether the logged learning rate fell at every value (never rose) over the span of ``steps`` and
    ended ``ANNEAL`` times lower or more: a schedule decaying to its end, where a loss that flattens into
    a band is converging as annealing makes it, not stuck (LLaMA-Factory's last 4 logs of a cosine to
    0, the rate 1.4e-8 -> 2.9e-10, the loss 4.467 -> 4.460)."""
    v = _rate_over(steps, lr)
    return v.size >= 2 and bool(np.all(np.diff(v) <= 0)) and float(v[0]) >= ANNEAL * float(v[-1])


#: How far a loss must fall in one logging interval to have collapsed rather than trained: three
#: orders of magnitude. Optimization moves a loss down a fraction of its level per step; a thousandfold
#: at once is the objective losing its content (every label masked, an empty batch, a NaN set to 0).
COLLAPSE = 1e3


def collapsed(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: dict[str, tuple[np.ndarray, np.ndarray]],
              grads_broke: bool = False) -> CurveVerdict | None:
    """Underfitting when the loss fell ``COLLAPSE`` times or more below every point before, in one interval, to
    a level every later point stays at or under (2 points at least, or a last point of exactly 0: no
    average of losses is 0 while any of them carries a signal; not still halving), from a positive level: no training signal is left (Paddle's cost 0.0064 then 0.000000 at each pass). Not when a
    held-out loss moved by ``min_drop`` of its level over those steps: the model's outputs changed, it
    memorized its training data (a classifier at 100% training accuracy whose validation loss rose).
    With a non-finite gradient norm logged (``grads_broke``) it is diverged: a NaN masked as 0."""
    if x.size < 2 or not np.all(np.isfinite(x)) or np.any(x < 0):
        return None
    # A printed 0 is any value under half the last digit printed ("0.00" may be 0.004): the bound after.
    half_digit = printed_step(x) / 2
    for j in range(1, x.size):
        # From every point before, not from one: a spike that came back down is the spike's finding.
        before, after = float(np.min(x[:j])), x[j:]
        if after.size < 2 and float(after[0]) != 0.0:
            continue  # one low last point may be one easy batch; a loss averaged to exactly 0 is none
        bound = max(float(np.max(after)), half_digit)
        # Not while it still halves above the print's zero: learning on after a first spike (25545, 16, 11, 6.7).
        if before > 0 and bound * COLLAPSE <= before and not (half_digit < float(np.min(after)) <= bound / 2) \
                and not _held_out_moved(cfg, steps[j], sets):
            return CurveVerdict(
                "diverged" if grads_broke else "underfitting", f"the loss fell from {before:.4g} to {float(x[j]):.3g} in one interval "
                f"({COLLAPSE:g}x or more) and stayed at or under {bound:.3g} for "
                + (f"its last {after.size} points: " if after.size > 1 else "its last point, exactly 0: ") + ("while the gradient norm is non-finite: a NaN masked as 0, in a short log"
                                            if grads_broke else "no training signal is left (every label masked or "
                                            "ignored, an empty batch, a NaN replaced by 0), not learning, in a short log"),
                {**short_evidence(x, "short_collapsed"),
                 "level_before": before, "level_after": bound, "collapse": COLLAPSE,
                 "step": int(steps[j])})
    return None


def _held_out_moved(cfg: CurveParams, since: int, sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> bool:
    for vs, vl in sets.values():
        v = vl[(vs >= since) & np.isfinite(vl)]
        if v.size >= 2 and np.median(np.abs(v)) > 0 and float(np.ptp(v)) >= cfg.min_drop * float(np.median(np.abs(v))):
            return True
    return False


def equivalent(x: np.ndarray, at: float, margin: float, alpha: float) -> bool:
    """Two one-sided t-tests at ``alpha`` (TOST): the points' mean lies within ``margin`` of ``at``.
    One epoch's average off the band (the first, which holds the initial transient) moves the mean
    by its share only; a level passing through on its way down is the caller's trend test's to refuse."""
    if x.size < 4 or not np.all(np.isfinite(x)):
        return False
    se = float(np.std(x, ddof=1)) / math.sqrt(x.size)
    half = float(stats.t.ppf(1 - alpha, x.size - 1)) * se
    mean = float(np.mean(x))
    return at - margin <= mean - half and mean + half <= at + margin


#: The band, relative to the level, inside which values printed finer than it are one value: a loss measured
#: on new batches changes its fifth significant digit at every print.
EXACT_RESOLUTION = 1e-5


def identical(x: np.ndarray) -> bool:
    """Three values printed alike to a thousandth of their level or finer (Keras' ``loss: 14.5063``
    three epochs running), or within ``EXACT_RESOLUTION`` of their level by a print ten times finer
    (PaddleNLP's ``loss:1535.619873``, ``1535.619629``, ``1535.633667``): a loss that trains moves by
    more than its last digit in an epoch, and by more than a hundred-thousandth of itself between prints."""
    level = abs(float(np.median(x))) if x.size else 0.0
    if x.size != 3 or level == 0:
        return False
    q, spread = printed_step(x), float(np.ptp(x))
    return (spread == 0.0 and 0 < q <= ALIKE * level) or (0 < q <= EXACT_RESOLUTION * level / 10
                                                          and spread <= EXACT_RESOLUTION * level)
