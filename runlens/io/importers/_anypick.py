"""Which of the names a console log's lines print are its losses: the last reading's choice
(:mod:`runlens.io.importers.anyline`), by the names' words alone."""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol

from runlens.io.reader.names import ERROR_WORDS, LOSS, METRIC, TRAIN, VAL, is_lr, qualifiers, tokens
from runlens.io.reader.roles import name_rank

LOSSY = LOSS | ERROR_WORDS
GRAINS = frozenset({"epoch", "batch", "step", "iter", "iteration"})
# Metric words that make a loss or error word name something else (an error *rate* is not minimized
# as a loss of its own scale; a loss's *time* is not a loss).
NOT_LOSS = (METRIC - ERROR_WORDS) | {"rate", "lr", "scale", "scaler", "norm", "weight", "count", "num"}
#: The name of a number printed right after a line's counter with no name of its own (NeuroSAT's
#: ``[3] 0.6932 (0.30, 0.20, 0.30, 0.20) [53s]``, ``print(epoch, loss)``): a loop that names nothing
#: prints its loss first. Read as the loss only when no line names one, and only on lines that name
#: nothing; the import warning says so.
BARE = "value after the counter"


class Seen(Protocol):
    names: dict[str, int]  # name -> lines carrying it
    first: dict[str, int]  # name -> order first seen


def side(toks: tuple[str, ...]) -> str | None:
    """``"train"`` / ``"val"`` for a name that names a loss or an error, None for any other."""
    if not LOSSY & set(toks) or NOT_LOSS & set(toks) or is_lr(toks):
        return None
    return "val" if VAL & set(toks) else "train"


def only_side(toks: tuple[str, ...]) -> str | None:
    """``"train"`` / ``"val"`` for a name that is nothing but a side (``train``, ``tst``)."""
    if toks and set(toks) <= TRAIN:
        return "train"
    if toks and set(toks) <= VAL:
        return "val"
    return None


def candidate(name: str) -> bool:
    """Whether a name may be a loss: a loss or error word, a side alone, or the counter's bare value."""
    if name == BARE:
        return True
    toks = tokens(name)
    return side(toks) is not None or only_side(toks) is not None


def pick(seen: Seen) -> tuple[str | None, str | None]:
    """The training loss's name and the validation loss's (either None)."""
    by: dict[str, list[str]] = defaultdict(list)
    for name in seen.names:
        which = side(tokens(name))
        if which is not None:
            by[which].append(name)
    if not by:  # no name says loss: names that only say a side (``train==[266.1``, ``:trn,0.5``)
        for name in seen.names:
            which = only_side(tokens(name))
            if which is not None:
                by[which].append(name)
    if not by and BARE in seen.names:
        by["train"].append(BARE)

    def best(names: list[str]) -> str | None:
        # A loss word outranks an error word, a validation set a test set; of one rank, the name on
        # the most lines. Two names of one rank on as many lines (``error`` and ``err``, a GAN's two
        # losses) leave the choice to the user.
        ranked = sorted(names, key=lambda n: (*_rank(n, seen), seen.first[n]))
        if not ranked or (len(ranked) > 1 and _rank(ranked[0], seen) == _rank(ranked[1], seen)):
            return None
        return ranked[0]

    return best(by["train"]), best(by["val"])


def _rank(name: str, seen: Seen) -> tuple[bool, bool, int, bool, int]:
    # Of one count, the loss alone before a qualified one (``loss`` before ``pde_losses``, its parts),
    # and a per-batch one before a per-epoch one, as the table reader orders them.
    t = tokens(name)
    toks = set(t)
    return (not LOSS & toks, "test" in toks and not (VAL - {"test"}) & toks, -seen.names[name],
            bool(qualifiers(t) and not toks <= GRAINS | LOSS | TRAIN | VAL), name_rank(name, 0)[0])
