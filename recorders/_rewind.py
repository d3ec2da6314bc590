"""A step counter that goes back within one attempt, counted while it happens.

Rows share a key (``step``) and a reader keeps the last row of each key, so
a loop that passes its batch index as the step (0..N-1 every epoch), its
epoch to every batch, or trains a second model through the same recorder,
replaces earlier rows without any error. Compaction at close keeps only
the surviving rows, so afterwards only the writer can tell: it counts what
it saw in the attempt's ``steps_went_back`` entry of run.json
(docs/format.md) and warns once while training runs. A resumed attempt
starts a new count: its steps going back to the checkpoint's is what a
resume does (format v1, "Resumed runs").
"""

from __future__ import annotations

import warnings
from typing import Any


class StepRewinds:
    """Counts one attempt's rows whose step is not past every step the attempt wrote before.

    ``times``: the step went below the previous row's; ``rows``: rows at a step at or before
    the attempt's highest so far (each replaces or interleaves an earlier row).
    """

    __slots__ = ("_entry", "prev", "top")

    def __init__(self) -> None:
        # The attempt's highest step so far and the previous row's: the writer sets both inline on a
        # row past ``top`` (every row of a loop whose step counts up), and calls :meth:`back` otherwise.
        self.top: int | None = None
        self.prev: int | None = None
        self._entry: dict[str, int] | None = None

    def back(self, step: int, attempt: dict[str, Any]) -> None:
        """A row at ``step <= top``: counted into ``attempt["steps_went_back"]`` (the caller holds the
        meta lock). The dict is updated in place, so a flush that serialises run.json sees it whole."""
        entry = self._entry
        if entry is None:
            entry = self._entry = {"times": 0, "rows": 0, "first_from": int(self.prev if self.prev is not None
                                                                             else step), "first_to": int(step)}
            attempt["steps_went_back"] = entry
            warnings.warn(f"runlens: the step went back from {entry['first_from']} to {step} in one run: rows "
                          "with the same step replace each other when the run is read. Pass a step that keeps "
                          "counting across epochs (or none: the recorder counts), and give a new training "
                          "its own recorder and folder", RuntimeWarning, stacklevel=4)
        entry["rows"] += 1
        if self.prev is not None and step < self.prev:
            entry["times"] += 1
        self.prev = step
