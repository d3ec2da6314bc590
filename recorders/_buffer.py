"""The writer's in-memory rows: what the training thread appends to between flushes.

Kept apart from :mod:`recorders.writer` so the writer reads as the life of
a run (open, add rows, hand over, close) and this module as the buffer's
bookkeeping: typed user columns, the layer-name dictionary, bounded memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from recorders import _parts
from recorders._parts import now as _now
from recorders._parts import plain_number as _num
from recorders._writer_io import Batch
from recorders.format import FIELDS

ROW_TABLES = ("scalars", "evals", "events")


class Buffers:
    """Pending rows of one writer; the caller holds the writer's lock around every call."""

    def __init__(self, max_pending_rows: int, warn_once: Callable[[str, str], None],
                 on_drop: Callable[[str, int], None] = lambda table, rows: None) -> None:
        self.max_pending_rows = max_pending_rows
        self._warn_once = warn_once
        self._on_drop = on_drop
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in ROW_TABLES}
        self.layers: list[tuple[int, np.ndarray, dict[str, Any]]] = []
        self.layer_rows = 0
        self.user_types: dict[str, dict[str, pa.DataType]] = {t: {} for t in ROW_TABLES}
        self.layer_dict: list[str] = []
        self._layer_index: dict[str, int] = {}
        self._names_cache: tuple[Sequence[str] | None, np.ndarray] = (None, np.empty(0, np.int32))
        self.since_flush = 0
        self.last_flush = time.monotonic()

    def row(self, table: str, step: int, t: float | None, columns: dict[str, Any]) -> dict[str, Any]:
        row = {"step": int(step), "time": _now(t)}
        fixed = FIELDS[table]
        for key, value in columns.items():
            value = _num(value)
            if key not in fixed and not self._accept_user(table, key, value):
                continue
            row[key] = value
        return row

    def _accept_user(self, table: str, key: str, value: Any) -> bool:
        typ = _parts.value_type(value) if value is not None else None
        if value is not None and typ is None:
            self._warn_once(f"drop {table}.{key}",
                            f"runlens: {table} column {key!r} dropped: {type(value).__name__} is not a number")
            return False
        known = self.user_types[table].get(key)
        if known is None:
            self.user_types[table][key] = typ or pa.float64()
        elif known == pa.int64() and typ == pa.float64():
            self.user_types[table][key] = pa.float64()  # a float seen later widens the column
        return True

    def layer_id(self, name: str) -> int:
        i = self._layer_index.get(name)
        if i is None:
            i = self._layer_index[name] = len(self.layer_dict)
            self.layer_dict.append(name)
        return i

    def add_layers(self, step: int, names: Sequence[str], cols: dict[str, Any]) -> None:
        cached_names, idx = self._names_cache
        if names is not cached_names:  # the recorder passes the same tuple every step
            idx = np.fromiter((self.layer_id(str(n)) for n in names), dtype=np.int32, count=len(names))
            self._names_cache = (names, idx)
        self.layers.append((int(step), idx, cols))
        self.layer_rows += len(idx)
        if self.layer_rows > self.max_pending_rows:
            self._drop_oldest_layers()

    def _drop_oldest_layers(self) -> None:
        dropped = 0
        while self.layer_rows > self.max_pending_rows and len(self.layers) > 1:
            _, idx, _ = self.layers.pop(0)
            self.layer_rows -= len(idx)
            dropped += len(idx)
        self._on_drop("layers", dropped)
        self._warn_once("drop layers", f"runlens: dropping the oldest buffered layer rows ({dropped} so far "
                        f"this time) that could not be written")

    def take(self) -> Batch | None:
        """The pending rows as one batch, the buffers emptied."""
        self.since_flush = 0
        self.last_flush = time.monotonic()
        if not (self.layers or any(self.rows.values())):
            return None
        batch = Batch(self.rows, self.layers, {t: dict(types) for t, types in self.user_types.items()},
                      list(self.layer_dict))
        self.rows = {t: [] for t in ROW_TABLES}
        self.layers, self.layer_rows = [], 0
        return batch

    def give_back(self, batch: Batch) -> None:
        """A batch the queue had no room for goes back in front of the newer rows."""
        for t, rows in batch.rows.items():
            merged = rows + self.rows[t]
            if len(merged) > self.max_pending_rows:
                self._on_drop(t, len(merged) - self.max_pending_rows)
                del merged[: len(merged) - self.max_pending_rows]
                self._warn_once(f"drop {t}", f"runlens: dropping the oldest buffered {t} rows: the writer "
                                "cannot keep up")
            self.rows[t] = merged
        self.layers = batch.layers + self.layers
        self.layer_rows = sum(len(c[1]) for c in self.layers)
        if self.layer_rows > self.max_pending_rows:
            self._drop_oldest_layers()
