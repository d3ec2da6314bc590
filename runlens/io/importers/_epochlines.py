"""Console lines that share an epoch and carry no other step marker: logs within the epoch, in order.

A log read one point an epoch keeps each epoch's last line: right when every epoch prints one line
(a mean over its batches), or its progress lines and then its summary (fairseq's ``train_inner``
lines and the epoch's ``train`` line, ESPnet's batch ranges and ``results``), since read between the
progress lines the summary makes a sawtooth that is not the training's. But a paste of a few epochs,
or of one (wav2letter's ``epoch:1 loss:91.69`` nine times), read that way keeps a point or three of
its lines: there the lines are the points, numbered in order, or counted by a field on them that
counts updates (fairseq's ``num_updates``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runlens.io.importers._runacc import RunAcc
from runlens.io.reader.names import names_count, tokens

#: Epochs enough for a curve read one point an epoch: then each epoch's last line is kept.
EPOCHS_ENOUGH = 4


@dataclass(frozen=True)
class EpochLines:
    """The training loss's lines: their epochs (``epochs``), the steps they get (``steps``) and the
    field those come from (``counter``; None: the lines numbered from 0)."""

    epochs: np.ndarray
    steps: np.ndarray
    counter: str | None

    def place(self, at: np.ndarray, is_eval: bool) -> np.ndarray:
        """The steps of a series logged at epochs ``at``: the loss's lines' own for a series on the
        same lines, else its epoch's last loss line's. An evaluation printed on every training line
        (Flair's ``end of split`` lines, each with its ``valid loss``) is one per line, not one per
        epoch: keeping only each epoch's last would drop all but one of them."""
        if at.size == self.epochs.size and np.array_equal(at, self.epochs):
            return self.steps
        return self.steps[np.maximum(np.searchsorted(self.epochs, at, side="right") - 1, 0)]

    def events(self, events: list[tuple[Any, ...]], error: dict[str, Any] | None,
               ) -> tuple[list[tuple[Any, ...]], dict[str, Any] | None]:
        """``events`` and ``error`` with their epochs placed as :meth:`place` places an evaluation's."""
        def at(epoch: int) -> int:
            return int(self.place(np.array([epoch]), True)[0])
        moved = [(at(step), *rest) for step, *rest in events]
        if error is not None and isinstance(error.get("step"), int):
            error = {**error, "step": at(error["step"])}
        return moved, error

    def index(self) -> tuple[str, str]:
        """``(index_kind, why)`` for the importer's config."""
        shared = (f"several training lines share an epoch ({self.epochs.size} lines over epochs "
                  f"{self.epochs[0]}..{self.epochs[-1]})")
        if self.counter is None:
            return "row", f"{shared} and nothing else counts them: the lines, numbered from 0 in order, are the index"
        return "step", f"{shared}: their field {self.counter!r}, rising on every line, is the index"


def lines_in_epochs(acc: RunAcc) -> EpochLines | None:
    """The lines of a run whose training lines' only step marker is the epoch, when some epoch holds
    several of them and fewer than ``EPOCHS_ENOUGH`` epochs are logged; None otherwise (one line an
    epoch, another step marker, or epochs enough)."""
    if not acc.by_epoch or acc.by_epoch != acc.other_train:
        return None
    pair = acc.series.get((False, "loss")) or next((v for (ev, _), v in acc.series.items() if not ev), None)
    if pair is None:
        return None
    ep = np.frombuffer(pair[0], dtype=np.int64)
    if ep.size < 2 or np.any(np.diff(ep) < 0) or np.all(np.diff(ep) > 0) or np.unique(ep).size >= EPOCHS_ENOUGH:
        return None
    for (is_eval, col), (st, vals) in acc.series.items():
        v = np.frombuffer(vals, dtype=np.float64)
        if (not is_eval and col != "epoch" and names_count(tokens(acc.names.get(col, col))) and v.size == ep.size
                and np.array_equal(np.frombuffer(st, dtype=np.int64), ep) and np.all(np.isfinite(v))
                and np.all(v == np.round(v)) and np.all(np.diff(v) > 0)):
            return EpochLines(ep, v.astype(np.int64), acc.names.get(col, col))
    return EpochLines(ep, np.arange(ep.size), None)
