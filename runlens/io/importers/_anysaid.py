"""What a log read by the names beside its numbers (:mod:`.anyline`) holds besides its losses: the
events its lines say in words (a NaN in a warning, the exception the run died of), the other names
whose values end NaN/Inf, and the accuracy printed beside the loss. Functions of the scan's numbers;
the text was never kept."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from runlens.io.importers._common import Imported, Series, column_name, last_per_step
from runlens.io.importers._logsignals import Watch
from runlens.io.reader.names import LOSS, VAL, tokens

#: The words of an accuracy; distinct names kept (top-1 and top-5, a set's and another's: a few).
_ACCURACY = frozenset({"acc", "accuracy"})
_MAX_ACCURACIES = 8


def placed(rows: np.ndarray, place: np.ndarray, at: Sequence[int] | np.ndarray, before: int | None = None) -> np.ndarray:
    """The place of each row of ``at``: that of the last line with values at or before it (``rows``, their
    ``place``); a row before the first such line takes the first's, or ``before`` when given."""
    i = np.searchsorted(rows, np.asarray(at, dtype=np.int64), side="right") - 1
    out = place[np.clip(i, 0, None)]
    return out if before is None else np.where(i >= 0, out, before)


def said(imp: Imported, watch: Watch, where: tuple[Sequence[int], Sequence[int], int], rows: np.ndarray,
         place: np.ndarray) -> None:
    """The events ``watch`` read in the lines' words (``where``: the row of each event, of each stated
    blow-up, of the exception), each at the place of the last line with values before it (the step it
    was said after); an exception with no training line after it is how the run ended."""
    event_rows, stated_rows, error_row = where
    events = [(int(at), *e[1:]) for at, e in zip(placed(rows, place, event_rows, before=0), watch.events, strict=True)]
    stated = [(int(at), *e[1:]) for at, e in zip(placed(rows, place, stated_rows, before=0), watch.stated, strict=True)]
    imp.events = events + stated
    if watch.error is not None:
        step = watch.error["step"]
        imp.error = {**watch.error, "step": step if step is not None else int(placed(rows, place, [error_row], before=0)[0])}


def broken_metrics(imp: Imported, seen: Any, rows: np.ndarray, place: np.ndarray) -> None:
    """The other names whose values end non-finite, as user scalars holding that tail and the finite
    value before it (what the ``nonfinite_metric`` finding reads); the import warning says so."""
    kept = []
    for name, (last, tail_rows, tail_values) in seen.tails.items():
        if not tail_rows or column_name(name) in imp.train:
            continue
        before = last[:] if last[0] >= 0 else []  # the last finite value, when there was one
        at = np.asarray(before[:1] + list(tail_rows), dtype=np.int64)
        values = np.asarray(before[1:] + list(tail_values), dtype=np.float64)
        # A line without a loss takes the place of the loss line before it, as the evaluations do.
        imp.train[column_name(name)] = last_per_step(Series(placed(rows, place, at), values))[0]
        kept.append(f"{name!r} ({len(tail_rows)} lines)")
    if kept:
        imp.warnings.append("values that end NaN/Inf kept from their last finite one on: " + ", ".join(kept))


def keep_accuracy(accs: dict[str, tuple[array, array]], row: int, name: str, value: float) -> None:
    """Keep ``value`` when ``name`` names an accuracy (and no loss): the chance and memorization
    readings compare it with the loss (a loss at ln 10 beside an accuracy of 0.1 learnt nothing)."""
    kept = accs.get(name)
    if kept is None:
        toks = set(tokens(name))
        if len(accs) >= _MAX_ACCURACIES or not toks & _ACCURACY or toks & LOSS:
            return
        kept = accs[name] = (array("q"), array("d"))
    kept[0].append(row)
    kept[1].append(value)


def accuracies(imp: Imported, accs: dict[str, tuple[array, array]], rows: np.ndarray, place: np.ndarray) -> None:
    """The training and the held-out accuracy, when one name each holds it on 3 lines or more: as the
    ``accuracy`` and ``val_accuracy`` columns, each value at the place of the last line with a loss."""
    for held_out, table, column in ((False, imp.train, "accuracy"), (True, imp.evals, "val_accuracy")):
        names = [n for n, (r, _) in accs.items() if len(r) >= 3 and bool(set(tokens(n)) & VAL) == held_out]
        if len(names) != 1 or column in table:
            continue
        at = np.frombuffer(accs[names[0]][0], dtype=np.int64)
        values = np.frombuffer(accs[names[0]][1], dtype=np.float64)
        table[column] = last_per_step(Series(placed(rows, place, at), values))[0]

