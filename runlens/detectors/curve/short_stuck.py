"""A short log stuck where no learning model stays: readings that need a second signal or none at all.

The whole log stuck (:func:`stuck`: printed alike, in a band, or at ln K), its tail
held within a thousandth (:func:`alike_tail`), and four readings that need a second signal or none at all, each underfitting
(``stuck``), each independent of the names a trainer prints:

- the held-out loss of a log with no training loss printed the same at
  every one of ``FROZEN_EVALS`` evaluations or more (:func:`evaluations_frozen`);
- a held-out loss within a thousandth of its level at ``FROZEN_EVALS``
  evaluations or more from the start of training, while the training loss
  did not fall either (:func:`validation_alike_from_start`);
- a training loss exactly 0 at every point from the start of training
  (:func:`zero_from_start`): there was never a signal to learn from;
- a loss near ln K while an accuracy sits near 1/K, the same K
  (:func:`chance_by_accuracy`): two independent signals of a model that
  predicts the prior, where the loss level alone could be a coincidence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.detectors.curve.features import short_evidence
from runlens.detectors.curve.memorized import Accuracies, Column, equal_tail
from runlens.detectors.curve.params import CurveParams
from runlens.detectors.curve.short_level import (
    ALIKE,
    ALIKE_TAIL,
    EXACT_RESOLUTION,
    equivalent,
    from_start,
    printed_step,
)
from runlens.diagnosis import CurveVerdict
from runlens.stats.chance import MAX_LEVEL_CLASSES, ROUND_CLASSES, chance_level
from runlens.stats.trend import trend

#: The fewest evaluations printed alike that say a log with no training loss learnt nothing: one
#: epoch's model evaluated twice gives one value; five passes that change nothing are not a coincidence.
FROZEN_EVALS = 5
#: The coarsest print, relative to the level, at which values printed alike are evidence: three
#: significant digits or more (0.887 to 0.1%), at which an evaluation of a model still learning moves.
FROZEN_RESOLUTION = 5e-3


def evaluations_frozen(sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> CurveVerdict | None:
    """A log that holds no training loss, whose held-out loss (or the quantity read as one) is printed
    the same at each of ``FROZEN_EVALS`` evaluations or more, at different steps, by a print that
    resolves ``FROZEN_RESOLUTION`` of it: the same weights give a fixed set the same value, so nothing
    changed between the evaluations (MLX's "Test accuracy 0.113" at each of ten epochs)."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if np.unique(vs).size < FROZEN_EVALS or float(np.ptp(vl)) != 0.0 or vl[0] == 0:
            continue
        q = printed_step(vl)
        if not 0 < q <= FROZEN_RESOLUTION * abs(float(vl[0])):
            continue
        return CurveVerdict(
            "underfitting", f"the log holds no training loss, and the held-out series read as the validation "
            f"loss{_named(name)} (its roles say from what) is "
            f"{vl[0]:.6g} at each of its {vl.size} evaluations (steps {int(vs[0])} to {int(vs[-1])}, printed to "
            f"{q:g}): only the same weights give a fixed set the same value, so nothing was learnt between "
            "them, in a short log",
            {"points": 0, "n_points": 0, "short_log": True, "kind": "short_frozen_evaluations", "eval_set": name,
             "evaluations": int(vl.size), "val_level": float(vl[0]), "printed_step": q,
             "min_evaluations": FROZEN_EVALS, "max_resolution": FROZEN_RESOLUTION, "training_loss_logged": False,
             "step": int(vs[0])})
    return None


def validation_alike_from_start(cfg: CurveParams, steps: np.ndarray, x: np.ndarray,
                                sets: dict[str, tuple[np.ndarray, np.ndarray]], index: str) -> CurveVerdict | None:
    """A held-out loss evaluated from the start of training (its first evaluation within one interval
    of step 0) that stays within ``ALIKE`` of its level at each of ``FROZEN_EVALS`` evaluations or more,
    with no Kendall trend at ``alpha``, while the training loss over them fell by less than
    ``min_drop``: a model that learns moves its held-out loss by more than a thousandth in its first
    evaluations; this one never did (a validation MSE of 8.7014 to 8.7022 dB from epoch 0 on, as a
    KalmanNet thread shows). A converged run's held-out loss holds still too, but not from the start."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if np.unique(vs).size < FROZEN_EVALS or not from_start(vs, index):
            continue
        level = float(np.median(vl))
        if level == 0 or float(np.ptp(vl)) > ALIKE * abs(level) or printed_step(vl) > ALIKE * abs(level):
            continue
        if trend(vl, vs.astype(float)).p < cfg.alpha:
            continue
        span = x[(steps >= vs[0]) & (steps <= vs[-1])]
        first, last = (float(np.median(span[:3])), float(np.median(span[-3:]))) if span.size >= 3 else (0.0, 0.0)
        if span.size >= 3 and first != 0 and (first - last) / abs(first) >= cfg.min_drop:
            continue
        return CurveVerdict(
            "underfitting", f"the validation loss{_named(name)} stays within {float(np.ptp(vl)):.3g} of "
            f"{level:.6g} ({float(np.ptp(vl)) / abs(level):.3%} of it, no trend) at each of its {vl.size} evaluations "
            f"from the start of training (steps {int(vs[0])} to {int(vs[-1])}), and the training loss did not fall "
            "either: a model that learns moves its held-out loss from its first evaluations on, in a short log",
            {**short_evidence(x, "short_validation_alike"),
             "eval_set": name, "evaluations": int(vl.size), "val_level": level, "val_spread": float(np.ptp(vl)),
             "alike": ALIKE, "train_first": first, "train_last": last, "step": int(vs[0])})
    return None


def _named(name: str) -> str:
    return "" if name == "val_loss" else f" ({name})"


#: The fewest points, all exactly 0 from the start, that say the loss never carried a signal.
ZERO_POINTS = 2


def zero_from_start(steps: np.ndarray, x: np.ndarray, index: str) -> CurveVerdict | None:
    """A training loss exactly 0 at each of ``ZERO_POINTS`` points or more, from the start of training:
    no model starts at a perfect fit, so the loss never measured anything (a constant target, every
    example masked, a loss on the wrong tensor). A loss that fell to 0 had a signal first: the collapse
    readings judge that."""
    if x.size < ZERO_POINTS or not bool(np.all(x == 0)) or not from_start(steps, index):
        return None
    return CurveVerdict(
        "underfitting", f"the training loss is exactly 0 at each of its {x.size} points from step {int(steps[0])} "
        "on: no model fits its data before it trains, so the loss never carried a signal to learn from (a "
        "constant target, every example masked, the loss of the wrong tensor), in a short log",
        {**short_evidence(x, "short_zero_from_start"),
         "start_level": 0.0, "end_level": 0.0, "min_points": ZERO_POINTS, "step": int(steps[0])})


#: How far from 1/K an accuracy may sit and still be the prior's, above ``MAX_LEVEL_CLASSES``: a factor
#: of two either way (a hundred-class head scores 0.01 to 0.02 on a small held-out set by sampling
#: alone; the round counts whose ln K the loss can sit near are a factor of two apart or more).
ACC_FACTOR = 2.0
#: Up to ``MAX_LEVEL_CLASSES``, where ln K and ln(K +- 1) are close, the accuracy must point to K itself:
#: within a quarter of 1/K (0.075 to 0.125 for ten classes; 1/7 and 1/13 fall outside).
ACC_REL_TOL = 0.25
#: How far the loss may sit from ln K, relative to it, when an accuracy at 1/K corroborates K.
LOSS_REL_TOL = 0.02


def chance_by_accuracy(steps: np.ndarray, x: np.ndarray, acc: Accuracies, stated: int | None = None
                       ) -> CurveVerdict | None:
    """The last half of the losses (3 at least) within ``LOSS_REL_TOL`` of ln K and an accuracy's last
    half (3 points at least) near 1/K (within ``ACC_REL_TOL`` of it for K = 2..16, within a factor
    ``ACC_FACTOR`` for a round count above): the loss and the accuracy are each what predicting the
    prior gives, for the same K. Either alone can be a coincidence (a loss passes near some ln K); both
    is a model that learnt nothing (MMAction's loss 4.60 = ln 100 with a top-1 accuracy of 0.01 to
    0.02). The held-out accuracy is read when there is one, the training accuracy only without it: two
    accuracies would give two chances to match some K by coincidence. A class count the run states
    (``stated``) is the only K tried, and a loss read through a proxy (``NO_CHANCE``) has none."""
    picked = next(((w, c) for w, c in (("validation", acc[1]), ("training", acc[0]))
                   if c is not None and c[1].size >= 3), None)
    if x.size < 3 or picked is None:
        return None
    which, (a_steps, a) = picked
    a = a[np.argsort(a_steps, kind="stable")]
    a_level = float(np.median(a[-max(3, math.ceil(a.size / 2)):]))
    k = max(3, math.ceil(x.size / 2))
    level = float(np.median(x[-k:]))
    ks = _candidates(level) if stated is None else [stated] if stated >= 2 else []
    for kk in (kk for kk in ks if a_level > 0 and _near_prior(a_level, kk)):
        hit = chance_level(level, classes=kk, rel_tol=LOSS_REL_TOL)
        if hit is None or not bool(np.all(np.abs(x[-k:] - hit["chance_loss"]) <= LOSS_REL_TOL * hit["chance_loss"])):
            continue
        return CurveVerdict(
            "underfitting", f"the last {k} of {x.size} losses sit at ln({kk})={hit['chance_loss']:.4f} (level "
            f"{level:.4g}, within {LOSS_REL_TOL:.0%}) while the {which} accuracy sits at {a_level:.3g}, near "
            f"1/{kk}={1 / kk:.3g}: loss and accuracy are both what predicting the prior of {kk} classes gives, "
            "in a short log",
            {**short_evidence(x, "short_chance_by_accuracy"),
             "tail_points": k, "late_level": level, "accuracy_level": a_level, "accuracy_set": which, **hit,
             "chance_source": f"the {which} accuracy at 1/K", "accuracy_factor": ACC_FACTOR,
             "accuracy_rel_tol": ACC_REL_TOL, "loss_rel_tol": LOSS_REL_TOL, "step": int(steps[-k])})
    return None


#: How far from 0.5 a ROC AUC may sit and still rank nothing: two and a half points, what a few hundred
#: held-out examples leave a model without skill by sampling alone.
AUC_CHANCE = 0.025


def chance_by_auc(steps: np.ndarray, x: np.ndarray, auc: Column | None) -> CurveVerdict | None:
    """The last half of the losses (1 at least) within ``LOSS_REL_TOL`` of ln 2 while the ROC AUC's
    last half sits within ``AUC_CHANCE`` of 0.5: a binary model's cross-entropy at ln 2 is what
    predicting one half for every example gives, and an AUC of one half is a ranking no better than a
    coin's. Either alone can be a coincidence (a loss near 0.69 at a class share near one half); both,
    measured apart, is a model that learnt nothing (HugeCTR's loss 0.6899 with AUC 0.488 after 100,000
    iterations)."""
    if x.size < 1 or auc is None:
        return None
    a_steps, a = auc
    a = a[np.argsort(a_steps, kind="stable")]
    a_level = float(np.median(a[-max(1, math.ceil(a.size / 2)):]))
    k = max(1, math.ceil(x.size / 2))
    ln2 = math.log(2)
    if abs(a_level - 0.5) > AUC_CHANCE or not bool(np.all(np.abs(x[-k:] - ln2) <= LOSS_REL_TOL * ln2)):
        return None
    level = float(np.median(x[-k:]))
    return CurveVerdict(
        "underfitting", f"the last {k} of {x.size} losses sit at ln(2)={ln2:.4f} (level {level:.4g}, within "
        f"{LOSS_REL_TOL:.0%}) while the ROC AUC sits at {a_level:.3g}, within {AUC_CHANCE:g} of 0.5: the loss is "
        "what predicting one half for every example gives and the ranking is a coin's, stuck at chance, in a "
        "short log",
        {**short_evidence(x, "short_chance_by_auc"), "tail_points": k, "late_level": level, "auc_level": a_level,
         "auc_chance": AUC_CHANCE, "chance_classes": 2, "chance_loss": ln2, "loss_rel_tol": LOSS_REL_TOL,
         "chance_source": "the ROC AUC at 0.5", "step": int(steps[-k])})


def _near_prior(accuracy: float, k: int) -> bool:
    if k <= MAX_LEVEL_CLASSES:
        return abs(accuracy - 1 / k) <= ACC_REL_TOL / k
    return 1 / (ACC_FACTOR * k) <= accuracy <= ACC_FACTOR / k


def _candidates(level: float) -> list[int]:
    """The K whose ln K is within ``LOSS_REL_TOL`` of ``level``: 2..16, or a round count above."""
    out: list[int] = [kk for kk in range(2, MAX_LEVEL_CLASSES + 1) if abs(level - math.log(kk)) <= LOSS_REL_TOL * math.log(kk)]
    out += [kk for kk in ROUND_CLASSES if abs(level - math.log(kk)) <= LOSS_REL_TOL * math.log(kk)]
    return out


def stuck(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, classes: tuple[int | None, str | None],
          index: str = "step", annealing: bool = False) -> CurveVerdict | None:
    """The whole short log stuck (``kind: short_stuck``), the first reading :mod:`.short` tries."""
    # Stuck: every printed value the same, or all within ``stuck_band`` of the
    # level with no Kendall trend at ``alpha``: a model that does not learn (at ln K: the prior).
    level = float(np.median(x))
    q = printed_step(x)
    t = trend(x, steps.astype(float))
    k, source = classes
    hit = chance_level(level, classes=k)
    # Every point at ln K is stuck at chance even while it creeps: a trend of a few hundredths of a
    # percent is significant over a handful of monotone points and still changes nothing.
    # Or minibatch noise about ln K: the level (the median) at ln K and every point within the stuck band
    # of it (AlexNet's 6.898..6.920 about ln 1000 = 6.908 at error rate 1.0).
    at_chance = hit is not None and (bool(np.all(np.abs(x - hit["chance_loss"]) <= hit["chance_tolerance"])) or (
        x.size >= 4 and abs(level - hit["chance_loss"]) <= hit["chance_tolerance"]
        and (bool(np.all(np.abs(x - hit["chance_loss"]) <= cfg.stuck_band * hit["chance_loss"]))
             or equivalent(x, hit["chance_loss"], cfg.stuck_band * hit["chance_loss"], cfg.alpha)
             and not t.p_decreasing < cfg.alpha)))
    # Within a band but not printed alike: an epoch's average that converged sits in a band too. Stuck
    # only where the band says more than convergence: at ln K, from the start of training on (a model
    # that learns falls fastest there), or across single steps (each a minibatch's loss, whose noise
    # alone leaves a band of a percent unless the outputs no longer depend on the inputs), unless the
    # learning rate is annealing over those points: a decay to its end flattens a loss into a band.
    # Alike to a thousandth of the level is stuck wherever it starts: no training model's loss holds
    # that still over several points.
    spread = float(np.ptp(x))
    still = not t.p < cfg.alpha or at_chance
    # Printed alike where the print cannot resolve a change a learning model makes (coarser than
    # ``FROZEN_RESOLUTION`` of the level, as read back: trailing zeros are lost) is a band like any other:
    # stuck where a band is. Epoch means of a converged model counted in rows (0.0030 at each of eight
    # epochs, mid-run) repeat by rounding; a minibatch's loss printed alike step after step does not.
    coarse = level != 0 and not 0 < q <= FROZEN_RESOLUTION * abs(level)
    banded = at_chance or index in ("step", "late_step") or from_start(steps, index)
    within = (spread == 0.0 and (not coarse or banded)) or at_chance or (
        level != 0 and 0 < spread <= ALIKE * abs(level) and still) or (
        level != 0 and spread <= cfg.stuck_band * abs(level) and still and not annealing and banded)
    if not within:
        return None
    ev: dict[str, Any] = {**short_evidence(x, "short_stuck"),
                          "start_level": float(x[0]), "end_level": float(x[-1]), "late_level": level,
                          "late_drift": float(np.ptp(x)), "printed_step": q, "relative_band": float(np.ptp(x)) /
                          abs(level) if level else 0.0, "relative_drop": (float(x[0]) - float(x[-1])) / abs(x[0])
                          if x[0] else 0.0, "trend": t.to_dict(), "step": int(steps[0])}
    where = ""
    if hit is not None:
        ev.update(hit, chance_source=source or "the loss level (no class count in the log)")
        where = f" at ln({hit['chance_classes']})={hit['chance_loss']:.3f}, chance level (K from {ev['chance_source']})"
    return CurveVerdict(
        "underfitting", f"the loss is stuck at {level:.6g}{where}: its {x.size} points stay within "
        f"{float(np.ptp(x)):.3g} ({ev['relative_band']:.2%} of the level)"
        f"{' with no trend' if not t.p < cfg.alpha else ''}, in a short log",
        ev)


def alike_tail(alpha: float, steps: np.ndarray, x: np.ndarray, annealing: bool = False) -> CurveVerdict | None:
    """The last two thirds of the points (``ALIKE_TAIL`` at least) within ``ALIKE`` (a thousandth) of
    their level, after whatever fall came first: the loss stopped there (FANN's "Current error: 187.36"
    at epoch 1, then 34.07 to 34.09 from epoch 1000 to 14000). A model that still learns moves by more
    than a thousandth of its loss between prints, so a creep inside that band with ties and turns is no
    learning; one lower at every print is a descent, and while the logged rate anneals (``annealing``)
    the band must show no Kendall trend at ``alpha`` at all: a schedule's end flattens a converged loss too. The prints must resolve a thousandth of
    the level (a converged loss printed as ``0.05`` repeats too). A tail printed exactly alike
    (:func:`_exact_tail`) needs no share of the log."""
    k = max(ALIKE_TAIL, math.ceil(2 * x.size / 3))
    exact = _exact_tail(x)
    if exact:
        k = exact
    elif x.size < k:
        return None
    while k < x.size and _alike(x[-(k + 1):]):
        k += 1
    tail = x[-k:]
    moving = trend(tail, steps[-k:].astype(float)).p < alpha
    # Lower at every print, however little, is a descent (1 order of k!): still learning. A creep with
    # ties and turns inside the band is noise about a level, unless the rate anneals.
    if not _alike(tail) or (moving and (annealing or bool(np.all(np.diff(tail) < 0)))):
        return None
    level = float(np.median(tail))
    if min(printed_step(tail), printed_step(x)) > ALIKE * abs(level):
        return None  # too coarse for a thousandth anywhere in the log ("0.5" after "0.321375" is zeros trimmed)
    return CurveVerdict(
        "underfitting", f"the loss is stuck at {level:.6g}: its last {k} of {x.size} points "
        + (f"are printed alike to the last digit ({printed_step(x):g})" if exact >= k else
           f"stay within {float(np.ptp(tail)):.3g} ({float(np.ptp(tail)) / abs(level):.3%} of the level)"
           f"{', a creep under a thousandth' if moving else ' with no trend'}") + ", in a short log",
        {**short_evidence(x, "short_stuck_tail"),
         "tail_points": k, "start_level": float(x[0]), "end_level": float(x[-1]), "late_level": level,
         "late_drift": float(np.ptp(tail)), "relative_band": float(np.ptp(tail)) / abs(level), "alike": ALIKE,
         "trend_significant": bool(moving), "exact_tail": exact,
         "relative_drop": (float(x[0]) - float(x[-1])) / abs(float(x[0])) if x[0] else 0.0,
         "step": int(steps[-k])})


def _exact_tail(x: np.ndarray) -> int:
    """The length of the last run of values equal to the last one, when it is ``ALIKE_TAIL`` or more and
    the log prints ``EXACT_RESOLUTION`` of the level or finer (five significant digits, which a loss
    measured on new batches changes at every print) (t-SNE's ``error = 0.2076470`` at each of six
    reports after ``20.6228523`` at each of five); else 0."""
    run = equal_tail(x)
    level = abs(float(x[-1]))
    if run < ALIKE_TAIL or level == 0 or not 0 < min(printed_step(x[-run:]), printed_step(x)) <= EXACT_RESOLUTION * level:
        return 0
    return run


def _alike(x: np.ndarray) -> bool:
    level = float(np.median(x))
    return level != 0 and float(np.ptp(x)) <= ALIKE * abs(level)


#: The fewest points of an error rate at 100% that say the model outputs nothing: one or two evaluations
#: at the start of a speech model's training are the blank stage every CTC model passes through.
EMPTY_POINTS = 3
#: How far the training loss may fall over those points and still not be leaving that stage: by half.
EMPTY_FALL = 0.5


def empty_output(steps: np.ndarray, x: np.ndarray, rate: Column | None) -> CurveVerdict | None:
    """Underfitting (``kind: short_empty_output``) when a word or character error rate is exactly 100%
    (1 as a fraction) at each of its ``EMPTY_POINTS`` points or more, at different steps, while the
    training loss fell by less than ``EMPTY_FALL`` from its first point to its last: an error rate of
    exactly 100% is an edit distance equal to the reference's length, every word missing (the all-blank
    transcript of a CTC model that learnt nothing; a wrong transcript inserts or substitutes and scores
    otherwise, evaluation after evaluation). SpeechBrain's ``valid WER: 1.00e+02`` at four epochs while
    its training loss moved 3.11 -> 2.89."""
    if rate is None or x.size < 2:
        return None
    rs, rv = rate
    if np.unique(rs).size < EMPTY_POINTS or not (bool(np.all(rv == 1.0)) or bool(np.all(rv == 100.0))):
        return None
    first, last = float(x[0]), float(x[-1])
    if not first > 0 or (first - last) / first >= EMPTY_FALL:
        return None
    return CurveVerdict(
        "underfitting", f"the error rate is exactly {rv[0]:g} (100%) at each of its {rv.size} points (steps "
        f"{int(rs[0])} to {int(rs[-1])}) while the training loss went {first:.4g} -> {last:.4g}: every reference "
        "word is missing from the output (an empty transcript scores exactly 100%, a wrong one otherwise), the "
        "model has learnt nothing yet, in a short log",
        {**short_evidence(x, "short_empty_output"), "error_rate": float(rv[0]), "rate_points": int(rv.size),
         "min_points": EMPTY_POINTS, "train_first": first, "train_last": last, "max_fall": EMPTY_FALL,
         "step": int(rs[0])})


#: The fewest evaluations, at different steps, a correlation of exactly 0 at each is read from: once is an
#: untrained model's, twice can be a model still leaving its prior.
AGREEMENT_POINTS = 3


def no_agreement(steps: np.ndarray, x: np.ndarray, score: Column | None) -> CurveVerdict | None:
    """Underfitting (``kind: short_no_agreement``) when a Matthews correlation or Cohen's kappa is exactly
    0 at each of its ``AGREEMENT_POINTS`` points or more, at different steps: both are exactly 0 when every
    prediction is one class (sklearn's MCC and kappa of a constant prediction), and a model that learnt
    anything moves them off 0 at the printed precision; a model that predicts the majority class has a
    loss at the entropy of the label shares, not at ln K, so the loss alone does not show it (run_glue on
    CoLA: ``mcc= 0.000000`` at every print, the loss about 0.61)."""
    if score is None or x.size < 1:
        return None
    ss, sv = score
    if np.unique(ss).size < AGREEMENT_POINTS or not bool(np.all(sv == 0.0)):
        return None
    return CurveVerdict(
        "underfitting", f"the Matthews correlation (or kappa) is exactly 0 at each of its {sv.size} points (steps "
        f"{int(ss[0])} to {int(ss[-1])}): every prediction is one class, whatever the input (the loss "
        f"{float(x[0]):.4g} -> {float(x[-1]):.4g} is the entropy of the label shares, not learning), in a short log",
        {**short_evidence(x, "short_no_agreement"), "agreement": 0.0, "agreement_points": int(sv.size),
         "min_points": AGREEMENT_POINTS, "train_first": float(x[0]), "train_last": float(x[-1]), "step": int(ss[0])})
