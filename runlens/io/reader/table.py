"""The reader's one intermediate form: named numeric columns over the rows of a log.

Every shape a log comes in (a list of records, a dict of lists, JSON lines,
a delimited or Markdown table) is read into a :class:`Table`; which column
is the loss, the validation loss or the index is decided afterwards, from
the names and values alone (:mod:`runlens.io.reader.roles`). A column is
absent on rows that did not log it (``present``), which is not the same as
a logged NaN.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runlens.io.reader.values import number

_SECTION_KEYS = ("mode", "phase", "split", "stage", "set")
_VAL_SECTIONS = frozenset({"val", "valid", "validation", "eval", "evaluation", "dev", "test"})
_COUNTERS = frozenset({"epoch", "iter", "step", "iteration", "global_step", "current_steps", "steps", "time"})
MAX_COLUMNS = 4096  # a table wider than this is not a metrics log (documented in docs/integrations)


@dataclass
class Table:
    """Columns of equal length ``n``; ``present[name][i]`` says row ``i`` logged ``name``."""

    n: int
    values: dict[str, np.ndarray]
    present: dict[str, np.ndarray]
    shape: str  # how the file was read: "json records", "json columns", "json lines", "delimited", ...
    notes: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # a name the user may give -> the column's name
    # The column a shape knows to count its rows (a block's ``total_timesteps``) when no column is
    # named a step or an epoch: the index before the row number.
    counter: str | None = None

    @property
    def names(self) -> list[str]:
        return list(self.values)

    def column(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        return self.values[name], self.present[name]


class Records:
    """Rows of ``{name: value}`` gathered column by column (no dense matrix until the end)."""

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self.rows = 0
        self._at: dict[str, list[int]] = {}
        self._vals: dict[str, list[float]] = {}
        self.too_wide = False

    def add(self, row: dict) -> None:
        """One row; values that are not numbers are left out; nested dicts are flattened (``a/b``).

        A row marked as a validation pass by a text field (mmdet's ``"mode": "val"``, ``"split": "eval"``)
        has its metrics named as validation ones (``loss`` -> ``val/loss``); its counters keep their names.
        """
        i = self.rows
        took = False
        section = next((str(row[k]).lower() for k in _SECTION_KEYS if isinstance(row.get(k), str)), None)
        prefix = "val/" if section in _VAL_SECTIONS else ""
        for key, value in _flat(row):
            if prefix and key not in _COUNTERS:
                key = prefix + key
            v = number(value)
            if v is None:
                continue
            at = self._at.get(key)
            if at is None:
                if len(self._at) >= MAX_COLUMNS:
                    self.too_wide = True
                    continue
                at = self._at[key] = []
                self._vals[key] = []
            at.append(i)
            self._vals[key].append(v)
            took = True
        if took:
            self.rows += 1

    def table(self) -> Table:
        values, present = {}, {}
        for key, at in self._at.items():
            idx = np.asarray(at, dtype=np.int64)
            col = np.full(self.rows, np.nan)
            col[idx] = self._vals[key]
            mask = np.zeros(self.rows, dtype=bool)
            mask[idx] = True
            values[key], present[key] = col, mask
        notes = [f"more than {MAX_COLUMNS} columns: only the first {MAX_COLUMNS} were read"] if self.too_wide else []
        return Table(self.rows, values, present, self.shape, notes)


def _flat(row: dict[str, Any], prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and depth < 2:
            yield from _flat(value, name + "/", depth + 1)
        else:
            yield name, value


def from_columns(columns: dict[str, list], shape: str) -> Table:
    """A table from equally long lists of values (a Keras ``history``)."""
    n = max((len(v) for v in columns.values()), default=0)
    values, present = {}, {}
    for name, cells in list(columns.items())[:MAX_COLUMNS]:
        nums = [number(c) for c in cells]
        mask = np.array([v is not None for v in nums] + [False] * (n - len(nums)), dtype=bool)
        values[name] = np.array([np.nan if v is None else v for v in nums] + [np.nan] * (n - len(nums)))
        present[name] = mask
    return Table(n, values, present, shape)
