"""One logged quantity over steps, read from a run table the one way every consumer reads it.

Pure data: a :class:`Series` holds ``steps`` (int64, ascending) and
``values`` (float64) of the same length, plus where they came from. The
readers below decide, once, what a null is (a value that was not logged,
dropped), what order rows come in (by step, stable) and which non-finite
values count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from runlens.io.run import Run

_EMPTY_STEPS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Series:
    """``values[i]`` was logged at ``steps[i]``; steps ascend; ``source`` names the column."""

    steps: np.ndarray
    values: np.ndarray
    source: str = ""

    def __len__(self) -> int:
        return len(self.values)

    def before(self, step: int | None) -> Series:
        """The part strictly before ``step`` (everything when ``step`` is None)."""
        if step is None:
            return self
        keep = self.steps < step
        return self if keep.all() else Series(self.steps[keep], self.values[keep], self.source)

    def finite(self) -> Series:
        """Only the finite values."""
        ok = np.isfinite(self.values)
        return self if ok.all() else Series(self.steps[ok], self.values[ok], self.source)

    def without(self, steps: np.ndarray) -> Series:
        """Leave out the rows at ``steps`` (e.g. the steps a loss scaler skipped)."""
        if len(steps) == 0:
            return self
        keep = ~np.isin(self.steps, steps)
        return self if keep.all() else Series(self.steps[keep], self.values[keep], self.source)


def empty(source: str = "") -> Series:
    return Series(_EMPTY_STEPS, np.empty(0), source)


def logged(run: Run, table: str, name: str) -> tuple[Series, np.ndarray] | None:
    """``(series, row_index)`` of the rows where ``table.name`` was logged (not null), by step.

    ``row_index`` maps each kept value back to its row in the table (so a
    caller can align another column); None when the column is absent or
    not numeric.
    """
    values = run.column(table, name)
    if values is None:
        return None
    steps = run.steps(table)
    rows = np.arange(len(values))
    col = getattr(run, table).column(name)
    if col.null_count:
        ok = ~col.is_null().to_numpy(zero_copy_only=False)
        steps, values, rows = steps[ok], values[ok], rows[ok]
    if steps.size > 1 and np.any(steps[1:] < steps[:-1]):
        order = np.argsort(steps, kind="stable")
        steps, values, rows = steps[order], values[order], rows[order]
    return Series(steps, values, f"{table}.{name}"), rows
