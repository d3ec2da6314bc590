"""The objective of a log that prints no loss at all: its error rate, its accuracy's complement, or its
reward's negative.

Some trainers print only what a person watches (MXNet's Speedometer ``Train-accuracy=0.95``, a
tutorial's ``Test accuracy 0.96``, an OCR trainer's ``word error rate``). Such a log is still a
curve: an error rate falls as the model learns, an accuracy rises, and ``1 - accuracy`` is the
error rate it implies. Read so only when nothing in the log is named a loss (or made one by the
rules before; a reinforcement-learning loop's reward rises as it learns, its negative falls): the pick
says which series it is and how it was turned (``how`` in ``import_roles``), and the curve and
``loss_at_chance`` read no ln K in it: 1 - accuracy at 0.693 is no binary classifier at chance.

A series is an accuracy when its name has an accuracy word and its values lie in [0, 1] (or in
[0, 100], a percentage: then ``1 - value / 100``); an error rate when its name has an error word
and its values are not negative. A running best (``best_acc``) is no curve of the run and is left
out. The training side is read as the loss, the held-out side (``val``, ``test``) as the validation
loss; an error rate is preferred to an accuracy on the same side, then the finer grain. Two
quantities of the kind read (``mse`` and ``rmse``, ``top1 err`` and ``error rate``) leave the choice
to ``--loss``: the log is refused as before, naming what it holds.
"""

from __future__ import annotations

import numpy as np

from runlens.io.reader.names import ERROR_WORDS, NEUTRAL, TRAIN, VAL, is_val, tokens
from runlens.io.reader.picks import Pick
from runlens.io.reader.table import Table

ACCURACY_WORDS = frozenset({"acc", "accuracy", "top1", "correct"})
#: What a reinforcement-learning loop maximizes and prints (``Average reward``, ``Mean Reward``).
REWARD_WORDS = frozenset({"reward", "rewards", "return", "returns"})
#: Words that make a series something else than the run's curve: a running best or worst, a count, a spread.
_NOT_A_CURVE = frozenset({"best", "worst", "max", "min", "num", "count", "top5", "new", "std", "var", "stddev"})
RATE = "rate"
COMPLEMENT = "complement"
NEGATED = "negated"
#: The ``how`` of a role read through a proxy: a reader that finds a loss by its name comes first.
PROXIES = (RATE, COMPLEMENT, NEGATED)


def names_objective(name: str) -> bool:
    """Whether ``name`` is an accuracy, an error rate or a reward this module can read as the objective
    (a running best, a spread or a count is not)."""
    toks = set(tokens(name))
    return bool(toks & (ACCURACY_WORDS | ERROR_WORDS | REWARD_WORDS)) and not toks & _NOT_A_CURVE


def percent_scale(values: np.ndarray) -> float | None:
    """1 for fractions, 100 for percentages, None for values no accuracy takes (negative, above 100)."""
    v = values[np.isfinite(values)]
    if not v.size or v.min() < 0 or v.max() > 100:
        return None
    return 1.0 if v.max() <= 1 else 100.0


def complement(values: np.ndarray) -> np.ndarray:
    """The error rate an accuracy implies: ``1 - acc`` (``1 - acc / 100`` for a percentage)."""
    scale = percent_scale(values) or 1.0
    return 1.0 - values / scale


def _kind(table: Table, column: str) -> str | None:
    toks = tokens(column)
    if set(toks) & _NOT_A_CURVE:
        return None
    v = table.values[column][table.present[column]]
    if not np.isfinite(v).any():
        return None
    if set(toks) & ERROR_WORDS and float(np.nanmin(v)) >= 0:
        return RATE
    if set(toks) & ACCURACY_WORDS and percent_scale(v) is not None:
        return COMPLEMENT
    if set(toks) & REWARD_WORDS:
        return NEGATED
    return None


def _rank(table: Table, column: str, how: str) -> tuple[int, int, int, int]:
    toks = tokens(column)
    grain = 0 if ("step" in toks or "batch" in toks) else (2 if "epoch" in toks else 1)
    return (PROXIES.index(how), grain, -int(table.present[column].sum()), len(column))


def _why(column: str, how: str, role: str) -> str:
    what = "the training loss" if role == "loss" else "the validation loss"
    if how == RATE:
        return (f"no loss is named in the log: {column!r} is an error rate, what the run is judged by, read as "
                f"{what} (lower is better; --loss names another)")
    if how == NEGATED:
        return (f"no loss is named in the log: {column!r} is a reward, what the run maximizes, read as {what} "
                "through its negative (lower is better; --loss names another)")
    return (f"no loss is named in the log: {column!r} is an accuracy, read as {what} through its complement, "
            "1 - accuracy (the error rate it implies; lower is better; --loss names another)")


def _quantity(column: str) -> frozenset[str]:
    """What a series measures, without its set, its grain or neutral words: ``Train-accuracy`` and a
    per-batch ``accuracy`` are one quantity, ``mse`` and ``rmse`` two."""
    return frozenset(t for t in tokens(column) if t not in VAL and t not in TRAIN and t not in NEUTRAL)


def _one(table: Table, found: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The candidate to read, the error rates first: None when the first kind present names more than
    one quantity (``top1 err`` beside ``error rate``, ``mse`` beside ``rmse``): ``--loss`` chooses."""
    for how in PROXIES:
        kind = [f for f in found if f[1] == how]
        if kind:
            return min(kind, key=lambda f: _rank(table, *f)) if len({_quantity(c) for c, _ in kind}) == 1 else None
    return None


def proxy_picks(table: Table, index: str | None) -> list[Pick]:
    """The training and validation objectives of a log that names no loss, best first per side. Only
    for the series a console or tracker importer gathered (``<kind> series``), as the lone series
    is: a structured table's columns are chosen by its header, and a block of numbers between other
    lines is no training table unless a column is named a loss."""
    if not table.shape.endswith(" series"):
        return []
    sides: dict[str, list[tuple[str, str]]] = {"loss": [], "val_loss": []}
    for c in table.names:
        if c == index or c not in table.values:
            continue
        how = _kind(table, c)
        if how is not None:
            sides["val_loss" if is_val(tokens(c)) else "loss"].append((c, how))
    picks = []
    for role, found in sides.items():
        if (one := _one(table, found)) is not None:
            picks.append(Pick(role, (one[0],), one[1], _why(one[0], one[1], role)))
    return picks
