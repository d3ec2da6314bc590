"""One run of a console log as the text reader accumulates it: its numbers as compact arrays, the
training lines that say how it is indexed (per step, or one point per epoch), and what its lines said
in words (:class:`~runlens.io.importers._logsignals.Watch`); and the import warnings that describe the
runs of a log, which of them was imported and what the reading left out."""

from __future__ import annotations

import math
from array import array
from collections import Counter
from typing import Any

from runlens.io.importers._common import record_runs
from runlens.io.importers._linetypes import Line
from runlens.io.importers._logsignals import Watch
from runlens.io.importers._names import Mapper
from runlens.io.reader.names import is_lossish, tokens

_SIGNALS = frozenset({"grad_norm", "loss_scale"})


class RunAcc:
    """The numbers of one run in the log, as compact arrays."""

    def __init__(self, first_line: int) -> None:
        self.series: dict[tuple[bool, str], tuple[array, array]] = {}
        self.names: dict[str, str] = {}  # column -> the name as logged
        self.first_line = self.last_line = first_line
        self.first_step: int | None = None
        self.last_step: int | None = None
        self.rows = 0
        self.watch = Watch()  # what its lines say in words: a non-finite value met, the exception it died of
        # Training lines that close an epoch's counter (``10000/10000``, ``[e][735/735]``): (step, epoch),
        # the counter totals seen on them, and how many training lines are anything else.
        self.epoch_ends: list[tuple[int, int]] = []
        self.totals: set[int] = set()
        self.other_train = 0
        self.by_epoch = 0  # training lines whose only counter is the epoch ("Epoch 7 train loss 0.61")

    def tally(self, hit: Line) -> None:
        """Count a training line as one that closes an epoch's counter, or as any other."""
        if hit.count is not None and hit.epoch is not None and hit.count[0] == hit.count[1]:
            self.epoch_ends.append((hit.step, hit.epoch))
            self.totals.add(hit.count[1])
        else:
            self.other_train += 1
        self.by_epoch += hit.source == "epoch"

    def per_epoch(self) -> int | None:
        """The counter total ``N`` when the epoch is this run's index, else None.

        A counter ``i/N`` whose ``N`` is the same on every line and that restarts every epoch counts
        progress within the epoch (Keras counts samples: ``9999/60000``), not optimizer steps. When
        every training line kept is the one that closes an epoch (``N/N``, the partial ones dropped),
        the log has one point per epoch: the epoch as logged is the index. Such a line's step was
        counted as ``e * N - 1``, so the epoch is ``step // N + 1`` on every series alike.
        """
        if not self.epoch_ends or self.other_train or len(self.totals) != 1:
            return None
        if min(e for _, e in self.epoch_ends) < 1:  # 0-based epochs: the steps were clipped at 0
            return None
        return next(iter(self.totals))

    def steps(self) -> tuple[int, int] | None:
        """The run's first and last step as the run is read (epochs when the epoch is its index)."""
        if self.first_step is None or self.last_step is None:
            return None
        total = self.per_epoch()
        if total is None:
            return self.first_step, self.last_step
        return self.first_step // total + 1, self.last_step // total + 1

    def span(self) -> str:
        steps = self.steps()
        if steps is None:
            return "no training step"
        return f"{'epochs' if self.per_epoch() is not None else 'steps'} {steps[0]}..{steps[1]}"

    def settings_only(self) -> bool:
        """One line read, naming no loss, gradient norm or held-out value: the run's settings printed with a
        ``step`` among them (``{'lr': 0.001, 'step': 10}``), not a training step, when steps follow from 0."""
        return self.rows == 1 and not any(ev or is_lossish(tokens(col)) or col in _SIGNALS for ev, col in self.series)

    def put(self, is_eval: bool, column: str, name: str, step: int, value: float) -> None:
        pair = self.series.get((is_eval, column))
        if pair is None:
            pair = self.series[(is_eval, column)] = (array("q"), array("d"))
            self.names.setdefault(column, name)
        pair[0].append(step)
        pair[1].append(value)


def reading_warnings(runs: list[RunAcc], run: int | None, chosen: int, markers: Counter, config: dict[str, Any],
                      n_lines: int, skipped: int) -> tuple[list[str], int]:
    """What the reading of the log left out or chose, and how many progress lines it dropped."""
    warnings: list[str] = []
    if len(runs) > 1:
        which = "the last" if run is None else "as asked"
        warnings.append(f"the log holds {len(runs)} runs (the step went back to its start, or a second "
                        f"'Epoch 1/N'): {describe(runs)}; imported run {chosen} ({which}); "
                        "pick another with --run N")
        record_runs(config, [(f"lines {r.first_line}-{r.last_line}", r.steps()) for r in runs], chosen, warnings[-1])
    beyond = markers.pop("_beyond", 0)
    if beyond:
        warnings.append(f"{beyond} line(s) with a step beyond what a 64-bit integer holds: skipped")
    partial = markers.pop("_partial", 0)
    if partial:
        warnings.append(f"{partial} progress lines inside an epoch hold running means of the epoch so far "
                        "(they restart every epoch): only each epoch's last line is kept")
    if skipped:
        warnings.append(f"{skipped} of {n_lines} lines carry no step or no number: skipped")
    return warnings, partial


def describe(runs: list[RunAcc]) -> str:
    return "; ".join(f"run {i} (lines {r.first_line}-{r.last_line}, {r.rows} lines, {r.span()})"
                     for i, r in enumerate(runs, 1))


def put_line(cur: RunAcc, hit: Line, fields: list[tuple[str, float]], mapper: Mapper) -> None:
    """Put one read line's ``fields`` into ``cur`` at ``hit``'s step, the epoch beside them."""
    # The hot loop of the reader: the memo and the arrays are looked up inline, not through calls.
    epoch_done = False
    step, ev, memo, series = hit.step, hit.eval_line, mapper._memo, cur.series
    for name, value in fields:
        target = memo.get((name, ev)) or mapper(name, ev)
        if target[1] == "epoch":
            if target[0] or epoch_done or not math.isfinite(value):
                continue
            value, epoch_done = float(math.floor(value)), True
        pair = series.get(target)
        if pair is None:
            cur.put(target[0], target[1], name, step, value)
            continue
        pair[0].append(step)
        pair[1].append(value)
    if hit.epoch is not None and not epoch_done and not ev:
        cur.put(False, "epoch", "epoch", step, float(hit.epoch))
    cur.rows += 1
