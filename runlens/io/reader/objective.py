"""The objective of a log that prints no loss at all: its error rate, its accuracy's complement, or the
negative of its reward or log-likelihood.

Some trainers print only what a person watches (MXNet's Speedometer ``Train-accuracy=0.95``, a
tutorial's ``Test accuracy 0.96``, an OCR trainer's ``word error rate``). Such a log is still a
curve: an error rate falls as the model learns, an accuracy rises, and ``1 - accuracy`` is the
error rate it implies. Read so only when nothing in the log is named a loss (or made one by the
rules before; a reinforcement-learning loop's reward rises as it learns, its negative falls): the pick
says which series it is and how it was turned (``how`` in ``import_roles``), and the curve and
``loss_at_chance`` read no ln K in it: 1 - accuracy at 0.693 is no binary classifier at chance.

A series is an accuracy when its name has an accuracy word (an F-score's ``F1`` and an exact match's
``EM`` are read alike, after an accuracy) and its values lie in [0, 1] (or in [0, 100], a percentage:
then ``1 - value / 100``); an error rate when its name has an error word and its values are not
negative. A top-k accuracy (``top_k_accuracy_5``) is read only where no top-1 is printed. A running
best (``best_acc``) is no curve of the run and is left out. The training side is read as the loss,
the held-out side (``val``, ``test``) as the validation loss; an error rate is preferred to an
accuracy on the same side, then the finer grain. A score below zero is a reward; so is a log-likelihood
or an ELBO at or below zero everywhere, what a topic model's sampler or a variational fit maximizes. Two
quantities of the kind read (``mse`` and ``rmse``, ``top1 err`` and ``error rate``) leave the choice to ``--loss``:
the log is refused as before, naming what it holds, unless every one of them is NaN or Inf on every
line (LSTNet's ``{'RAE': nan, 'RSE': nan}``): whichever is read, the run diverged. One quantity
printed as its last value and its mean, or beside its macro average, is one quantity.
"""

from __future__ import annotations

import re

import numpy as np

from runlens.io.reader.names import ERROR_WORDS, NEUTRAL, TRAIN, VAL, is_val, tokens
from runlens.io.reader.picks import Pick
from runlens.io.reader.table import Table

#: The scores read through their complement, in the order one is preferred to another printed beside it: an
#: accuracy, then an F-score, then an exact match (a reading-comprehension trainer's ``EM``), then a score
#: named only a performance (Theano CNN's ``train perf: 74.38 %``); a top-k
#: accuracy comes last (:func:`_top_k`).
_SCORE_TIERS = (frozenset({"acc", "accuracy", "top1", "correct"}), frozenset({"f1", "fscore", "f1score"}),
                frozenset({"em"}), frozenset({"perf", "performance"}))
ACCURACY_WORDS = frozenset().union(*_SCORE_TIERS)
#: What a reinforcement-learning loop maximizes and prints (``Average reward``, ``Mean Reward``).
REWARD_WORDS = frozenset({"reward", "rewards", "return", "returns"})
#: What a probabilistic model maximizes and prints: a log-likelihood or its evidence lower bound
#: (tomotopy's ``Log-likelihood: -27.89``, PyMC's ``ELBO = -1372.98``). Read through its negative only
#: where every value is at most 0, a log-probability's range: a positive ``elbo`` is as often the loss
#: a VAE's loop minimizes (the bound's negative) under the bound's name.
LIKELIHOOD_WORDS = frozenset({"likelihood", "lik", "loglik", "loglikelihood", "elbo"})
#: A name that says it is the negative already (``neg_log_likelihood``, ``NELBO``): a loss.
_NEGATIVE = frozenset({"neg", "negative", "minus", "nll", "nelbo"})
#: Words that make a series something else than the run's curve: a running best or worst, a count, a spread.
_NOT_A_CURVE = frozenset({"best", "worst", "max", "min", "num", "count", "top5", "new", "std", "var", "stddev"})
_TOP_N = re.compile(r"top(\d+)")
#: Which of one quantity's values is printed, or how it is averaged over classes: the quantity stays the
#: same (a mean or a running average is one already, as :data:`NEUTRAL` says).
_POOLED = frozenset({"last", "latest", "macro", "micro", "weighted"})
#: The smoothed prints of a quantity, preferred to its last value.
_SMOOTHED = frozenset({"mean", "avg", "average", "running", "smoothed", "ema"})
RATE = "rate"
COMPLEMENT = "complement"
NEGATED = "negated"
#: The ``how`` of a role read through a proxy: a reader that finds a loss by its name comes first.
PROXIES = (RATE, COMPLEMENT, NEGATED)


def names_objective(name: str) -> bool:
    """Whether ``name`` is an accuracy, an error rate, a reward or a log-likelihood this module can read as
    the objective (a running best, a spread or a count is not)."""
    toks = set(tokens(name))
    return (bool(toks & (ACCURACY_WORDS | ERROR_WORDS | REWARD_WORDS)) or _likelihood(toks)) and not toks & _NOT_A_CURVE


def _likelihood(toks: set[str]) -> bool:
    """Whether a name's words say a log-likelihood or its bound, and not its negative."""
    return bool(toks & LIKELIHOOD_WORDS) and not toks & _NEGATIVE


def _top_k(toks: tuple[str, ...]) -> bool:
    """Whether an accuracy so named is a top-k one with k above 1 (``top_k_accuracy_5``, ``Top-5 Accuracy``,
    ``acc@5``): a trainer prints it beside its top-1 accuracy, one quantity's looser grain, not a choice."""
    if any((m := _TOP_N.fullmatch(t)) and int(m.group(1)) > 1 for t in toks):
        return True
    if "top" in toks and ("k" in toks or any(t.isdigit() and int(t) > 1 for t in toks)):
        return True
    return any(t in ACCURACY_WORDS and i + 1 < len(toks) and toks[i + 1].isdigit() and int(toks[i + 1]) > 1
               for i, t in enumerate(toks))


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
    words = set(toks)
    if words & _NOT_A_CURVE:
        return None
    v = table.values[column][table.present[column]]
    if not v.size:
        return None
    likelihood = _likelihood(words)
    if not np.isfinite(v).any():
        # Never finite: no scale to check, and what it is named says which kind it would have been.
        return next((how for how, named in ((RATE, ERROR_WORDS), (COMPLEMENT, ACCURACY_WORDS),
                                            (NEGATED, REWARD_WORDS)) if words & named),
                    NEGATED if likelihood else None)
    if words & ERROR_WORDS and float(np.nanmin(v)) >= 0:
        return RATE
    if words & ACCURACY_WORDS and percent_scale(v) is not None:
        return COMPLEMENT
    if words & REWARD_WORDS or (likelihood and float(np.nanmax(v)) <= 0):
        return NEGATED
    # A score below zero is no accuracy, F-score or rate: what an agent's loop prints as its episode's
    # "score" (a return, ``episode 6264 score -73.42 average score -178.85``).
    if "score" in words and float(np.nanmin(v)) < 0:
        return NEGATED
    return None


def _rank(table: Table, column: str, how: str) -> tuple[int, int, int, int, int]:
    toks = tokens(column)
    grain = 0 if ("step" in toks or "batch" in toks) else (2 if "epoch" in toks else 1)
    # Of one quantity printed as its last value and its mean, the mean: an episode's reward is noise.
    pooled = 0 if set(toks) & _SMOOTHED else 1
    return (PROXIES.index(how), grain, pooled, -int(table.present[column].sum()), len(column))


def _why(column: str, how: str, role: str) -> str:
    what = "the training loss" if role == "loss" else "the validation loss"
    if how == RATE:
        return (f"no loss is named in the log: {column!r} is an error rate, what the run is judged by, read as "
                f"{what} (lower is better; --loss names another)")
    if how == NEGATED:
        kind = "a log-likelihood or its bound" if set(tokens(column)) & LIKELIHOOD_WORDS else "a reward"
        return (f"no loss is named in the log: {column!r} is {kind}, what the run maximizes, read as {what} "
                "through its negative (lower is better; --loss names another)")
    return (f"no loss is named in the log: {column!r} is an accuracy, read as {what} through its complement, "
            "1 - accuracy (the error rate it implies; lower is better; --loss names another)")


def _quantity(column: str) -> frozenset[str]:
    """What a series measures, without its set, its grain, how it is pooled or neutral words:
    ``Train-accuracy`` and a per-batch ``accuracy`` are one quantity, ``Last_Episode_reward`` and
    ``Mean_Episode_reward`` one, ``fscore`` and ``macro_fscore`` one; ``mse`` and ``rmse`` two."""
    return frozenset(t for t in tokens(column) if t not in VAL and t not in TRAIN and t not in NEUTRAL
                     and t not in _POOLED)


def _one(table: Table, found: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The candidate to read, the error rates first, and among accuracies the first tier printed
    (:data:`_SCORE_TIERS`): None when the first kind present names more than one quantity (``top1 err``
    beside ``error rate``, ``mse`` beside ``rmse``) and one of them is finite somewhere: ``--loss`` chooses."""
    for how in PROXIES:
        kind = [f for f in found if f[1] == how]
        if kind and how == COMPLEMENT:
            tiers = [_tier(c) for c, _ in kind]
            kind = [f for f, t in zip(kind, tiers, strict=True) if t == min(tiers)]
        if kind:
            # Several quantities, each NaN or Inf on every line, say one thing whichever is read.
            one = len({_quantity(c) for c, _ in kind}) == 1 or not any(_finite(table, c) for c, _ in kind)
            return min(kind, key=lambda f: _rank(table, *f)) if one else None
    return None


def _tier(column: str) -> int:
    toks = tokens(column)
    if _top_k(toks):
        return len(_SCORE_TIERS)
    return next(i for i, words in enumerate(_SCORE_TIERS) if set(toks) & words)


def _finite(table: Table, column: str) -> bool:
    return bool(np.isfinite(table.values[column][table.present[column]]).any())


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
