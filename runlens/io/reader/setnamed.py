"""Series named by their data set alone: ``3d_train 88.13 3d_eval 63.54 3d_valid 67.05``.

Some trainers print one error per data set and call it by the set (PoseFormer's ``3d_train`` and
``3d_valid``, a mean per-joint error; Knet's examples call theirs ``trn`` and ``tst``). With no
loss word anywhere in the log, a pair of them, the one training series so named and a held-out
series of the same quantity (the same words once the set's word is taken out), are what the
trainer minimizes and watches: the training and validation loss. A training series alone is not
read this way (the header ``starting training`` of a log is no column of losses); nor is a name
with a word of another known quantity (a metric, a time, a rate, a count), a column of whole
numbers (a count of samples), or fractions that end higher than they start (an accuracy).

In a log that names no loss at all, two more series are read as the training loss, each said so
(:func:`lone_series`): the one training series named an error and nothing else (FANN's ``Current
error``, Torch7's ``Err``: what the trainer minimizes), else, in a console or tracker log, its one
measured series that names no other quantity.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from runlens.io.reader.names import (
    COUNT_WORDS,
    ERROR_WORDS,
    LOSS,
    METRIC,
    NEUTRAL,
    TRAIN,
    VAL,
    is_grad_norm,
    is_lr,
    tokens,
)
from runlens.io.reader.table import Table

#: Words that make a set's series some other quantity than its error (beside METRIC and the counters).
_OTHER = frozenset({"size", "samples", "sample", "count", "num", "n", "len", "length", "examples", "tokens",
                    "speed", "throughput", "images", "imgs", "image", "img", "batches", "lr", "rate", "norm", "scale",
                    "s", "sec", "secs", "second", "seconds", "ms", "fps", "elapsed", "duration", "remaining"})
#: The held-out set a validation loss is taken from first: a validation set, then dev, test, eval
#: (``3d_eval`` beside ``3d_valid`` is the training set evaluated without dropout).
_PREFERENCE = (("val", "valid", "validation", "vali", "va", "vl", "validate", "holdout"), ("dev",),
               ("test", "tst"), ("eval", "evaluation"))


def _quantity(name: str, sets: frozenset[str]) -> tuple[str, ...] | None:
    """The words of ``name`` besides its set word (one of ``sets``), or None when it names no set,
    names a known other quantity, or carries more than one word of its own."""
    toks = tokens(name)
    if not any(t in sets for t in toks) or any(t in LOSS for t in toks):
        return None
    rest = tuple(t for t in toks if t not in sets and t not in NEUTRAL)
    if len(rest) > 1 or any(t in METRIC or t in _OTHER or t in COUNT_WORDS for t in rest):
        return None
    if is_lr(toks) or is_grad_norm(toks):
        return None
    return rest


def _measured(table: Table, column: str) -> bool:
    v = table.values[column][table.present[column]]
    v = v[np.isfinite(v)]
    return v.size >= 2 and not bool(np.all(v == np.round(v)))


def rising_fractions(values: np.ndarray, rise: float = 1.0) -> bool:
    """Fractions whose last finite value is ``rise`` times their first or more: an accuracy, not a
    loss that rose."""
    v = values[np.isfinite(values)]
    return bool(v.size and v.min() >= 0 and v.max() <= 1 and v[-1] > rise * v[0])


def _accuracy_like(table: Table, column: str) -> bool:
    """Fractions that end higher than they start: an accuracy (Knet's examples print ``:trn`` and
    ``:tst`` accuracies as often as losses), not a loss that rose."""
    return rising_fractions(table.values[column][table.present[column]])


def set_named(table: Table, index: str | None) -> list[tuple[str, str, str]]:
    """``(role, column, why)`` for the training and validation loss named by their sets, both or none."""
    cols = [c for c in table.names if c != index and c in table.values]
    train = [(c, q) for c in cols if (q := _quantity(c, TRAIN)) is not None and _measured(table, c)]
    if len(train) != 1:
        return []
    column, quantity = train[0]
    if _accuracy_like(table, column):
        return []
    held = [c for c in cols if c != column and _quantity(c, VAL | {"tst"}) == quantity and _measured(table, c)]
    for words in _PREFERENCE:
        match = [c for c in held if set(tokens(c)) & set(words)]
        if match:
            what = f" of {' '.join(quantity)!r}" if quantity else ""
            return [("loss", column, f"{column!r} and {match[0]!r} are one quantity{what} on the training and a "
                     "held-out set, named by their sets alone with no loss or metric word: what a trainer prints "
                     "per set is what it minimizes, read as the training and validation loss (--loss and "
                     "--val-loss name others)"),
                    ("val_loss", match[0], f"{match[0]!r}: the held-out set's series of the training loss "
                     f"{column!r}")]
    return []


def lone_series(table: Table, index: str | None) -> tuple[str, str] | None:
    """``(column, why)`` of the one error a log that names no loss minimizes (:func:`minimized_error`),
    else of the one measured series of a log that names no loss, when its name is no
    other known quantity (a metric, a time, a rate, a count, a norm): what a person printed at each
    epoch to watch the run (TEACH's ``Train_rf 4.856e-01``), read as the training loss. Only for the
    series a console or tracker importer gathered (``<kind> series``): a structured table's shape is
    chosen by the roles its header gives, and one unnamed column must not decide it."""
    if (error := minimized_error(table, index)) is not None:
        return error
    if not table.shape.endswith(" series"):
        return None
    found = _the_one(table, index, lambda toks: not (
        any(t in METRIC or t in _OTHER or t in COUNT_WORDS or t in VAL for t in toks) or is_lr(toks)
        or is_grad_norm(toks)))
    return None if found is None else (found, (
        f"{found!r} is the one measured series of a log that names no loss, and names no other quantity: what "
        "was printed to watch the run, read as the training loss (--loss names another)"))


def _the_one(table: Table, index: str | None, named: Callable[[tuple[str, ...]], bool]) -> str | None:
    """The one measured column (not the index) whose name's words ``named`` accepts, unless it reads as
    an accuracy; None when there is none or more than one."""
    found = [c for c in table.names
             if c != index and c in table.values and _measured(table, c) and named(tokens(c))]
    return found[0] if len(found) == 1 and not _accuracy_like(table, found[0]) else None


def minimized_error(table: Table, index: str | None) -> tuple[str, str] | None:
    """``(column, why)`` of the one training series named an error and nothing else, in a log that names
    no loss: the quantity the trainer minimizes and prints (``error``, ``Current error``, ``Err``,
    ``mse``), read as the training loss. A rate, a percentage or a top-k error names another word
    (``error rate``, ``top1 err``) and is not this; two such series leave the choice to ``--loss``."""
    found = _the_one(table, index, _error_alone)
    return None if found is None else (found, (
        f"{found!r} is the one training series named an error and nothing else, in a log that names no loss: "
        "what the trainer minimizes and prints, read as the training loss (--loss names another)"))


def _error_alone(toks: tuple[str, ...]) -> bool:
    rest = [t for t in toks if t not in NEUTRAL and t not in TRAIN]
    return len(rest) == 1 and rest[0] in ERROR_WORDS and not any(t in VAL for t in toks)
