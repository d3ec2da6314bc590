"""A short log that shows memorization: every training example right, one held-out in ten wrong.

A paste of the last epochs of a run that overfit (Keras's ``loss: 0.0019 -
accuracy: 1.0000 - val_loss: 1.1507 - val_accuracy: 0.6797``) shows no rise
of the validation loss: the rise came before the paste. What it shows is
the gap, and a loss gap alone is not enough (a training loss averaged per
token against a validation loss summed per sentence differ tenfold in a run
that generalizes). Accuracies are fractions of the same kind on both sets,
so the reading needs both: the accuracy gap and the loss gap, at every
evaluation, with the validation loss not improving across them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._bugs import ACCURACY_COLUMNS, VAL_ACCURACY_COLUMNS
from runlens.detectors.curve.params import CurveParams
from runlens.diagnosis import CurveVerdict

if TYPE_CHECKING:
    from runlens.io.run import Run

#: Training accuracy at or above which the model gets (almost) every training example right.
FIT = 0.99
#: How far the held-out accuracy must trail the training accuracy: one held-out example in ten
#: wrong while (almost) none of the training set is, beyond what a model that generalizes shows.
ACC_GAP = 0.10
#: How many times the training loss the validation loss must be at each evaluation: an order of
#: magnitude, the loss's own statement of the gap the accuracies show.
LOSS_RATIO = 10.0

Column = tuple[np.ndarray, np.ndarray]


def _column(run: Run, table: str, names: tuple[str, ...]) -> tuple[Column, str] | None:
    for name in names:
        v = run.column(table, name)
        if v is not None:
            ok = np.isfinite(v)
            if ok.sum() >= 2:
                return (run.steps(table)[ok], v[ok]), name
    return None


def accuracies(run: Run) -> tuple[Column, Column] | None:
    """The training and validation accuracy as fractions, or None when either is missing or they
    are not on one scale (a percentage is read as one when both columns are percentages)."""
    train, val = _column(run, "scalars", ACCURACY_COLUMNS), _column(run, "evals", VAL_ACCURACY_COLUMNS)
    if train is None or val is None:
        return None
    (ts, ta), (vs, va) = train[0], val[0]
    if min(ta.min(), va.min()) < 0:
        return None
    if max(ta.max(), va.max()) > 1:
        if max(ta.max(), va.max()) > 100 or min(ta.max(), va.max()) <= 1:
            return None  # not fractions, or one a fraction and the other a percentage
        ta, va = ta / 100, va / 100
    return (ts, ta), (vs, va)


def _at(steps: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The latest value logged at or before each step of ``at`` (NaN before the first)."""
    order = np.argsort(steps, kind="stable")
    s, v = steps[order], values[order]
    i = np.searchsorted(s, at, side="right") - 1
    return np.where(i >= 0, v[np.clip(i, 0, None)], np.nan)


def memorized(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: dict[str, Column],
              acc: tuple[Column, Column] | None, base: dict[str, Any]) -> CurveVerdict | None:
    """Overfitting when at each of 2 or more evaluations the training accuracy is ``FIT`` or more,
    the validation accuracy ``ACC_GAP`` below it and the validation loss ``LOSS_RATIO`` times the
    training loss or more, and the validation loss fell by less than ``min_drop`` across them."""
    if acc is None or "val_loss" not in sets:
        return None
    (ts, ta), (vs, va) = acc
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
    held = (train_acc >= FIT) & (train_acc - val_acc >= ACC_GAP) & (train_loss > 0) & (ratio >= LOSS_RATIO)
    fall = (val_loss[0] - val_loss[-1]) / val_loss[0] if val_loss[0] > 0 else 0.0
    if not bool(np.all(held)) or fall >= cfg.min_drop:
        return None
    return CurveVerdict(
        "overfitting", f"at each of {at.size} evaluations the training accuracy is at least {train_acc.min():.3g} "
        f"(>= {FIT:g}) while the validation accuracy trails it by {float(np.min(train_acc - val_acc)):.3g} or more "
        f"(>= {ACC_GAP:g}) and the validation loss is {float(np.min(ratio)):.3g}x the training loss or more "
        f"(>= {LOSS_RATIO:g}x), not improving ({fall:.0%} down, < {cfg.min_drop:.0%}): the model memorized its "
        f"training data, in a short log of {x.size} points",
        {**base, "kind": "short_memorized", "evaluations": int(at.size), "eval_set": "val_loss",
         "train_accuracy": train_acc.tolist(), "val_accuracy": val_acc.tolist(),
         "gap_ratios": ratio.tolist(), "val_fall": float(fall), "min_fit": FIT, "min_accuracy_gap": ACC_GAP,
         "min_loss_ratio": LOSS_RATIO, "step": int(at[0])})
