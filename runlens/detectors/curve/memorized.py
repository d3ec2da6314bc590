"""A short log that shows memorization: (almost) every training example right, one held-out in ten wrong.

A paste of the last epochs of a run that overfit (Keras's ``loss: 0.0019 -
accuracy: 1.0000 - val_loss: 1.1507 - val_accuracy: 0.6797``) shows no rise
of the validation loss: the rise came before the paste. What it shows is
the gap, and a loss gap alone is not enough (a training loss averaged per
token against a validation loss summed per sentence differ tenfold in a run
that generalizes). Accuracies are fractions of the same kind on both sets,
so the reading needs both: the accuracy gap (an error rate ten times the
training one) and the loss gap, at every evaluation, with the validation
loss not improving across them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._bugs import ACCURACY_COLUMNS, VAL_ACCURACY_COLUMNS, fractions, scalar_column
from runlens.detectors.curve.features import role_how, short_evidence
from runlens.detectors.curve.params import CurveParams
from runlens.diagnosis import CurveVerdict
from runlens.io.reader.names import TRAIN, VAL, is_val, tokens
from runlens.io.reader.objective import COMPLEMENT
from runlens.stats.trend import trend

if TYPE_CHECKING:
    from runlens.io.run import Run

#: Training accuracy at or above which the model gets (almost) every training example right.
FIT = 0.99
#: How far the held-out accuracy must trail the training accuracy: one held-out example in ten
#: wrong while (almost) none of the training set is, beyond what a model that generalizes shows.
ACC_GAP = 0.10
#: How many points a training accuracy printed alike must span: fewer repeat by chance.
FROZEN = 4
#: How many times the training loss the validation loss must be at each evaluation: an order of
#: magnitude, the loss's own statement of the gap the accuracies show.
LOSS_RATIO = 10.0
#: How many times the training error rate (1 - accuracy) the held-out one must be: the same order of
#: magnitude, in the accuracies' own terms. A model right on 98.8% of its training set and 70% of the
#: held-out one (1.2% wrong against 30%) memorized as surely as one at 100% and 89%; a fixed least
#: training accuracy (``FIT``) told them apart by a few tenths of a point.
ERROR_RATIO = 10.0

Column = tuple[np.ndarray, np.ndarray]
Accuracies = tuple[Column | None, Column | None]


def _column(run: Run, table: str, names: tuple[str, ...]) -> Column | None:
    found = scalar_column(run, names, table, min_points=1, any_case=True)
    return None if found is None else (found[0], found[1])


#: The words of an accuracy's name (``categorical_accuracy``, ``top1_acc``, ``binary_accuracy``).
_ACC_WORDS = frozenset({"acc", "accuracy"})
#: Words that say how an accuracy was pooled, not what it measures: ``Eval Acc (total)`` is the held-out
#: accuracy over every class and example.
_POOLED = frozenset({"total", "overall", "mean", "avg", "average"})


def _held_out_accuracy_column(run: Run) -> tuple[str, ...]:
    """The one held-out column named a validation word and an accuracy word and nothing else but how it
    was pooled (``Test Accuracy``, ``valid_acc``, ``Eval Acc (total)``): what a log that evaluates no loss
    prints of its held-out set."""
    e = getattr(run, "evals", None)
    found = [c for c, words in ((c, tokens(c)) for c in (e.column_names if e is not None else ()))
             if is_val(words) and len(_ACC_WORDS & set(words)) == 1 and set(words) <= VAL | _ACC_WORDS | _POOLED]
    return tuple(found) if len(found) == 1 else ()


def _paired(run: Run) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A training accuracy named otherwise than :data:`ACCURACY_COLUMNS` and its held-out twin: the
    same words but for a validation word (Keras's ``categorical_accuracy`` and
    ``val_categorical_accuracy``). Both or neither: an unpaired name may measure something else."""
    t, e = getattr(run, "scalars", None), getattr(run, "evals", None)
    if t is None or e is None:
        return (), ()
    held = {tuple(w for w in words if w not in VAL): c
            for c, words in ((c, tokens(c)) for c in e.column_names) if is_val(words)}
    for c in t.column_names:
        words = tokens(c)
        if _ACC_WORDS & set(words) and not is_val(words):
            twin = held.get(tuple(w for w in words if w not in TRAIN))
            if twin is not None:
                return (c,), (twin,)
    return (), ()


def _top1(words: tuple[str, ...]) -> bool:
    """Whether a name's words are a top-1 accuracy and nothing else but a training word (``top1``,
    ``Acc@1``, ``acc1``, ``train_top1``): the accuracy of a classifier's first guess, printed beside its
    top-5."""
    rest = [w for w in words if w not in TRAIN]
    return rest in (["top1"], ["acc1"], ["top", "1"], ["top1", "acc"], ["acc", "1"], ["accuracy", "1"])


def _lone_training_accuracy(run: Run) -> tuple[str, ...]:
    """The one training column named an accuracy word, no validation word and no number
    (``ctype_acc``, ``running train acc``; not ``top5_acc``, whose chance is 5/K), or a top-1 accuracy
    (:func:`_top1`), in a log that holds no other accuracy: what a loop that evaluates nothing prints of
    how often it is right."""
    t = getattr(run, "scalars", None)
    found = [c for c, words in ((c, tokens(c)) for c in (t.column_names if t is not None else ()))
             if not is_val(words) and (_top1(words) or (len(_ACC_WORDS & set(words)) == 1
                                                       and not any(ch.isdigit() for ch in c)))]
    return tuple(found) if len(found) == 1 else ()


def accuracies(run: Run) -> Accuracies:
    """The training and validation accuracy as fractions, each None when missing; both None when
    they are not on one scale (a percentage is read as one when both columns are percentages)."""
    train, val = _column(run, "scalars", ACCURACY_COLUMNS), _column(run, "evals", VAL_ACCURACY_COLUMNS)
    if train is None and val is None:
        more_train, more_val = _paired(run)
        train, val = _column(run, "scalars", more_train), _column(run, "evals", more_val)
    if train is None and val is None:
        train = _column(run, "scalars", _lone_training_accuracy(run))
    if val is None:
        val = _column(run, "evals", _held_out_accuracy_column(run))
    cols = [c for c in (train, val) if c is not None]
    scaled = list(fractions(*(v for _, v in cols)) or ()) if cols else []
    if not scaled:
        return None, None
    return ((train[0], scaled.pop(0)) if train is not None else None,
            (val[0], scaled.pop(0)) if val is not None else None)


def _at(steps: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The latest value logged at or before each step of ``at`` (NaN before the first)."""
    order = np.argsort(steps, kind="stable")
    s, v = steps[order], values[order]
    i = np.searchsorted(s, at, side="right") - 1
    return np.where(i >= 0, v[np.clip(i, 0, None)], np.nan)


def memorized(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: dict[str, Column],
              acc: Accuracies, base: dict[str, Any]) -> CurveVerdict | None:
    """Overfitting when at each of the last 2 or more evaluations the held-out error rate (1 - accuracy) is
    ``ERROR_RATIO`` times the training one or more, the validation accuracy ``ACC_GAP`` below the
    training accuracy and the validation loss ``LOSS_RATIO`` times the
    training loss or more, and the validation loss fell by less than ``min_drop`` across them or ended
    above its first evaluation in the log."""
    train, val = acc
    if train is None or val is None or "val_loss" not in sets:
        return None
    (ts, ta), (vs, va) = train, val
    ls, lv = sets["val_loss"]
    ok = np.isfinite(lv)
    ls, lv = ls[ok], lv[ok]
    at = np.intersect1d(vs, ls)
    if at.size < 2:
        return None
    train_acc, val_acc = _at(ts, ta, at), _at(vs, va, at)
    train_loss, val_loss = _at(steps, x, at), _at(ls, lv, at)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = val_loss / train_loss
    held = ((1 - val_acc >= ERROR_RATIO * (1 - train_acc)) & (train_acc - val_acc >= ACC_GAP) & (train_loss > 0)
            & (ratio >= LOSS_RATIO))
    # The evaluations that end the log: a run memorizes by its end, and what came before (accuracy
    # still climbing at epoch 1) says nothing against it.
    k = int(np.argmin(held[::-1])) if not bool(np.all(held)) else held.size
    if k < 2:
        return None
    at, train_acc, val_acc, train_loss, val_loss, ratio = (a[-k:] for a in (at, train_acc, val_acc, train_loss,
                                                                            val_loss, ratio))
    fall = (val_loss[0] - val_loss[-1]) / val_loss[0] if val_loss[0] > 0 else 0.0
    # Falling back across the memorized evaluations is no recovery while it ends above the log's
    # first evaluation: the held-out loss is worse than before the model fit its data.
    if fall >= cfg.min_drop and not val_loss[-1] > lv[0]:
        return None
    judged = (f"not improving ({fall:.0%} down, < {cfg.min_drop:.0%})" if fall < cfg.min_drop else
              f"ending at {val_loss[-1]:.4g}, above its first evaluation {lv[0]:.4g}")
    return CurveVerdict(
        "overfitting", f"at each of {at.size} evaluations the held-out error rate is {_error_ratio(train_acc, val_acc)} "
        f"(>= {ERROR_RATIO:g}x; training accuracy {train_acc.min():.3g} or more) while the validation accuracy trails it "
        f"by {float(np.min(train_acc - val_acc)):.3g} or more "
        f"(>= {ACC_GAP:g}) and the validation loss is {float(np.min(ratio)):.3g}x the training loss or more "
        f"(>= {LOSS_RATIO:g}x), {judged}: the model memorized its "
        f"training data, in a short log of {x.size} points",
        {**base, "kind": "short_memorized", "evaluations": int(at.size), "eval_set": "val_loss",
         "train_accuracy": train_acc.tolist(), "val_accuracy": val_acc.tolist(),
         "gap_ratios": ratio.tolist(), "val_fall": float(fall), "min_error_ratio": ERROR_RATIO, "min_accuracy_gap": ACC_GAP,
         "min_loss_ratio": LOSS_RATIO, "step": int(at[0])})


def _error_ratio(train_acc: np.ndarray, val_acc: np.ndarray) -> str:
    """How far the held-out error rate is above the training one, in words: a ratio, or, when no
    training example is wrong at an evaluation, that (a ratio over zero is no number to print)."""
    train_err, val_err = 1 - train_acc, 1 - val_acc
    if bool(np.any(train_err <= 0)):
        return (f"{float(np.min(val_err)):.3g} or more while the training one is {float(np.min(train_err)):.3g} at "
                "some of them (no training example wrong)")
    return f"{float(np.min(val_err / train_err)):.3g}x the training one or more"


def frozen_accuracy(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, acc: Accuracies,
                    share: float = 0.0) -> CurveVerdict | None:
    """Underfitting when the training accuracy, or else the held-out one, is printed alike at its last
    ``FROZEN`` points or more (to a thousandth or finer), below ``FIT``, while the training loss over the
    same steps moved by ``min_drop`` of its level's size or more (a loss below 0, as a Poisson or
    log-likelihood objective prints it, included): the predictions do not change though the loss
    does, so the model predicts the same (one class) whatever it is shown. A fixed held-out set scores
    the same to the last printed digit, evaluation after evaluation, only when no prediction on it
    changed (Meta-MGNN's test accuracy 50.21079287809484 at every epoch while its training loss halves).
    ``share``: the least share of the accuracy's points the frozen stretch must hold. A long run's
    converged model keeps its held-out predictions for many evaluations (a tagger's 0.9626 at 12 of its
    21); one whose every evaluation, from the first, scores the same never changed a prediction while
    its loss moved (the long curve asks that: ``share=1``)."""
    for which, column, beside in (("training", acc[0], None), ("held-out", acc[1], acc[0])):
        if column is not None and (verdict := _frozen(cfg, steps, x, column, which, share, beside)) is not None:
            return verdict
    return None


def _fits(train: Column | None, since: float) -> bool:
    """Whether the training accuracy is at ``FIT`` or above at every point it was printed from step
    ``since`` (the held-out accuracy's frozen stretch): a model that gets every training example right
    tells its inputs apart, so a held-out score that no longer changes is a converged (or memorizing)
    model's, not one that predicts the same whatever it is shown (a Keras run's val_acc 0.8889, 8 of 9,
    for its last 8 epochs beside acc 1.0000)."""
    if train is None:
        return False
    ts, ta = train
    over = ta[(ts >= since) & np.isfinite(ta)]
    return bool(over.size) and bool(np.all(over >= FIT))


def equal_tail(values: np.ndarray) -> int:
    """How many of the last ``values`` (in order) equal the last one."""
    same = values == values[-1]
    return int(np.argmin(same[::-1])) if not same.all() else int(same.size)


def alike_tail_length(values: np.ndarray) -> int:
    """:func:`equal_tail`, printed to a thousandth or finer (0.5003, not 0.50); 0 when the last is
    printed coarsely: such a print repeats by rounding alone."""
    last = float(values[-1])
    return 0 if abs(round(last, 2) - last) < 1e-9 else equal_tail(values)


def _frozen(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, column: Column, which: str,
            share: float, beside: Column | None = None) -> CurveVerdict | None:
    ts, ta = column
    if ta.size < FROZEN:
        return None
    order = np.argsort(ts, kind="stable")
    ts, ta = ts[order], ta[order]
    run = alike_tail_length(ta)
    if run < max(FROZEN, share * ta.size) or ta[-1] >= FIT or _fits(beside, float(ts[-run])):
        return None
    span = (steps >= ts[-run]) & (steps <= ts[-1])
    loss = x[span]
    # Measured against the level's size: a signed objective (a Poisson or log-likelihood loss below 0)
    # moves as much as a positive one (auto_ml's loss -3.9 -> -54.5 under an accuracy fixed at 0.0787).
    level = abs(float(np.median(loss)))
    if loss.size < FROZEN or not level > 0:
        return None
    moved = float(np.ptp(loss)) / level
    if moved < cfg.min_drop:
        return None
    short = bool(x.size < cfg.min_points)
    return CurveVerdict(
        "underfitting", f"the {which} accuracy is {ta[-1]:.4g} at each of its last {run} points (steps "
        f"{int(ts[-run])} to {int(ts[-1])}) while the training loss moved by {moved:.0%} of its level: the "
        "predictions do not change though the loss does, the model predicts the same whatever it is shown"
        + (", in a short log" if short else ""),
        {"points": int(x.size), "n_points": int(x.size), "short_log": short,
         "kind": "short_frozen_accuracy" if short else "frozen_accuracy", "accuracy": float(ta[-1]),
         "frozen_points": run, "accuracy_of": which, "loss_moved": moved, "min_fit": FIT, "step": int(ts[-run])})


#: An accuracy at or under this at every point is a model that gets next to nothing right: chance for
#: twenty classes or more, and far under what any classifier that learned something reaches.
NEAR_ZERO = 0.05
#: The fewest accuracies that say so: the first four logs of a face-recognition run read 0.000 as they
#: should ("wait for more iterations"); six lines and more are a stretch of the run, not its first steps.
NEAR_ZERO_POINTS = 6


def accuracy_near_zero(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, acc: Accuracies) -> CurveVerdict | None:
    """Underfitting when the training accuracy is at most ``NEAR_ZERO`` at each of its
    ``NEAR_ZERO_POINTS`` points or more, with no upward Kendall trend at ``alpha``, while the training loss over the same steps fell
    by less than ``min_drop`` (the median of its last 3 against its first 3), nor by ``min_drop`` along a
    downward Kendall trend at ``alpha`` (the Theil-Sen line's fall across the span: a per-step accuracy
    on a batch of one clip is 0 or 1, and reads 0 while the loss falls at nearly every print): nothing
    is learned, and the loss says no more (InsightFace's ``acc=0.006 lossvalue=6.24`` for 15 lines). A rising accuracy
    (the first iterations of a thousand-class run) or a loss that falls is progress, however low."""
    train = acc[0]
    if train is None or train[1].size < NEAR_ZERO_POINTS:
        return None
    ts, ta = train
    if float(np.max(ta)) > NEAR_ZERO or trend(ta, ts.astype(float)).p_increasing < cfg.alpha:
        return None
    inside = (steps >= ts.min()) & (steps <= ts.max())
    loss, span = x[inside], steps[inside].astype(float)
    if loss.size < FROZEN:
        return None
    first, last = float(np.median(loss[:3])), float(np.median(loss[-3:]))
    fall = (first - last) / abs(first) if first else 0.0
    line = trend(loss, span)
    # The ends' medians miss a fall the whole span shows: the Theil-Sen line's fall across it, where the
    # Kendall test finds a downward trend, measures the same progress by every point.
    line_fall = -line.slope * float(span[-1] - span[0]) / abs(first) if first and span.size > 1 else 0.0
    if fall >= cfg.min_drop or (line.p_decreasing < cfg.alpha and line_fall >= cfg.min_drop):
        return None
    return CurveVerdict(
        "underfitting", f"the training accuracy is at most {float(np.max(ta)):.3g} at each of its {ta.size} "
        f"points, with no upward trend, while the loss fell {fall:.1%} ({first:.4g} -> {last:.4g}): the model "
        "gets next to nothing right and is not learning, in a short log",
        {**short_evidence(x, "short_accuracy_near_zero"),
         "max_accuracy": float(np.max(ta)), "accuracy_points": int(ta.size), "near_zero": NEAR_ZERO,
         "loss_fall": fall, "step": int(ts.min())})


#: How far under its best a held-out accuracy must fall, and stay, to say the model broke: overfitting
#: costs a held-out accuracy points, not half of it.
COLLAPSE_SHARE = 0.5
#: The least best accuracy that says the model had learnt something to lose.
LEARNT = 0.2


def held_out_accuracy(run: Run, acc: Accuracies) -> Column | None:
    """The held-out accuracy as fractions: its own column (``acc``, :func:`accuracies` of the run), or the
    one a validation loss was read from (``1 - accuracy``, the complement the reader took when no loss
    was named)."""
    if acc[1] is not None:
        return acc[1]
    if role_how(run.config, "val_loss") != COMPLEMENT or (val := _column(run, "evals", ("val_loss",))) is None:
        return None
    return val[0], 1.0 - val[1]


def accuracy_collapsed(column: Column | None) -> CurveVerdict | None:
    """Diverged when a log with no training loss shows a held-out accuracy (5 evaluations or more) that
    reached ``LEARNT`` or more and then fell to ``COLLAPSE_SHARE`` of its best or under at each of its
    last third of evaluations (2 at least): the model lost what it had learnt and did not get it back
    (tch-rs's CIFAR-10 test accuracy 72.32% at epoch 4, then 10.00%, chance, at every epoch after). A
    held-out loss alone cannot tell overfitting from a blow-up; an accuracy halved can."""
    if column is None or column[1].size < 5:
        return None
    ts, ta = column
    order = np.argsort(ts, kind="stable")
    ts, ta = ts[order], ta[order]
    k = max(2, math.ceil(ta.size / 3))
    best = int(np.argmax(ta))
    top = float(ta[best])
    if not (top >= LEARNT and best < ta.size - k and float(np.max(ta[-k:])) <= COLLAPSE_SHARE * top):
        return None
    return CurveVerdict(
        "diverged", f"the log holds no training loss, and its held-out accuracy fell from {top:.4g} (step "
        f"{int(ts[best])}) to {float(ta[-1]):.4g}, at most {COLLAPSE_SHARE:.0%} of its best at each of its last "
        f"{k} evaluations: the model lost what it had learnt and did not get it back (overfitting costs a "
        "held-out accuracy points, not half of it)",
        {"points": 0, "n_points": 0, "short_log": True, "kind": "held_out_accuracy_collapsed",
         "best_accuracy": top, "final_accuracy": float(ta[-1]), "evaluations": int(ta.size), "last_evaluations": k,
         "collapse_share": COLLAPSE_SHARE, "training_loss_logged": False, "step": int(ts[best + 1])})
