"""What a console log's lines carry over to the lines after them: an inner counter's count across
epochs, and the step that a loss printed on a line of its own, under a step line, belongs to.

- An inner counter that goes back to its start right after a new epoch's summary line (STIDGCN's
  ``Iter: 150``, ``Epoch: 001, Train Loss: ...``, ``Iter: 000``) counts that epoch's batches: it is
  counted on from the last step, not read as a new run. One that goes back with no summary between
  restarts the count (a new run, judged as one).
- A line that is one loss name and its value (``discrim_loss nan``), right under a training line that
  names no loss or under other such lines, is that step's (pix2pix-tensorflow's ``progress  epoch 50
  step 602 ...`` then one line per loss part). Anything else in between ends it; under a line that
  names a loss, such a line is an average or a summary, not this step's.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runlens.io.importers._linetypes import Line
from runlens.io.importers._mapping import NUM, to_float
from runlens.io.reader.names import is_lossish, is_val, tokens

# One name and its value (in the text reader's spelling of a number, NaN and Inf included), alone on a line.
_ONE_FIELD = re.compile(rf"^\s*([A-Za-z_][\w/.\-]*)\s*[:=]?\s+({NUM})\s*$")


@functools.lru_cache(maxsize=4096)
def _named_loss(name: str) -> bool:
    # Asked of each line of one name under a training line, and of that line's fields: the names repeat.
    return is_lossish(tokens(name))


@dataclass(slots=True)
class Carry:
    """The state the reader carries from line to line (see the module's rules)."""

    offset: int = 0  # added to an inner counter counted on across epochs
    raw_last: int | None = None  # the counter's last value as printed
    gap: int = 1  # the last step interval
    summarized: bool = False  # a new epoch's summary came since the last training line
    summary_epoch: int | None = None
    trail: int | None = None  # the step of the last training line, while only loss lines follow it
    _trail_fields: Sequence[tuple[str, Any]] = ()

    def summary(self, epoch: int) -> None:
        """An epoch's summary line, in a log that counts steps."""
        if self.summary_epoch is None or epoch > self.summary_epoch:
            self.summarized, self.summary_epoch = True, epoch

    def count_on(self, hit: Line, rows: int, last_step: int | None, markers: Counter) -> None:
        """``hit``'s step on the run's count (the module's first rule)."""
        raw, ev = hit.step, hit.eval_line
        if not ev and self.raw_last is not None and raw < self.raw_last and rows:
            self.offset = last_step + self.gap - raw if self.summarized and last_step is not None else 0
            markers["inner counter"] += bool(self.offset)
        if self.offset:
            hit.step = raw + self.offset
        if not ev:
            self.raw_last = raw

    def trained(self, step: int, last_step: int | None, fields: Sequence[tuple[str, Any]]) -> None:
        """A training line at ``step`` with ``fields`` was read (``last_step``: the one before). Only a line
        that names no loss opens a trail (its losses are on the lines under it): asked when a line of one
        loss comes, not on every training line."""
        if last_step is not None and step > last_step:
            self.gap = step - last_step
        self.summarized = False
        self.trail, self._trail_fields = step, fields

    def under_step(self, raw: str) -> tuple[Line, list[tuple[str, float]]] | None:
        """The loss on a line of its own under a training line, at that line's step (the module's
        second rule); None for any other line, which ends the trail unless it is blank."""
        if self.trail is None:
            return None
        m = _ONE_FIELD.match(raw)
        if m is None or not _named_loss(m.group(1)) or any(_named_loss(k) for k, _ in self._trail_fields):
            if raw.strip():
                self.trail = None
            return None
        self._trail_fields = ()  # asked once: the lines under it are losses of a line that names none
        name = m.group(1)
        return Line(self.trail, "", is_val(tokens(name)), None, "under step"), [(name, to_float(m.group(2)))]


def carried(markers: Counter) -> list[str]:
    """The import warnings that say what was carried over from line to line, if anything was."""
    notes = []
    if markers.get("inner counter"):
        notes.append(f"the step counter went back to its start {markers['inner counter']} time(s) right after an "
                     "epoch's summary line: read as the next epoch's batches, counted on from the last step, not "
                     "as a new run")
    if markers.get("under step"):
        notes.append(f"{markers['under step']} loss value(s) printed one per line under a training line that names "
                     "no loss: read at that line's step")
    return notes
