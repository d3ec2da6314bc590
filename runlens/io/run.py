"""The in-memory run: metadata plus the four tables, deduplicated and ordered.

``runlens.io.loader.load_run`` builds it; detectors and renderers only read it.
Tables are Arrow tables (``None`` when the run has no such table or it was
not loaded); the accessors below hand detectors numpy arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from runlens._meta import MetaFields


@dataclass(frozen=True)
class LayerMatrix:
    """One per-layer column as a dense (steps x layers) matrix.

    ``values[i, j]`` is the value for ``steps[i]`` and ``layers[j]``; NaN where
    the layer was not recorded at that step or the value was null, and
    ``present`` tells those apart from a recorded NaN. ``layers`` are in
    depth order (``depth[j]`` is run.json's ``index``: 0 nearest the input).
    """

    steps: np.ndarray
    layers: tuple[str, ...]
    depth: np.ndarray
    values: np.ndarray
    present: np.ndarray


@dataclass(frozen=True)
class Run(MetaFields):
    """A run as read from disk. Frozen; detectors never change it."""

    path: str
    meta: Mapping[str, Any]
    status: str  # finished | crashed | killed | running (killed is derived)
    scalars: pa.Table | None = None
    evals: pa.Table | None = None
    layers: pa.Table | None = None
    events: pa.Table | None = None
    warnings: tuple[str, ...] = ()
    # The scalars' step went back with no resume to explain it (runlens.io.rewinds): rows were replaced.
    step_rewinds: Mapping[str, int] | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    # -- metadata -----------------------------------------------------------
    @property
    def name(self) -> str:
        name = self.meta.get("name")
        return name if isinstance(name, str) and name else _basename(self.path)

    @property
    def run_id(self) -> str:
        rid = self.meta.get("run_id")
        return rid if isinstance(rid, str) else ""



    @property
    def layer_info(self) -> tuple[Mapping[str, Any], ...]:
        """run.json ``layers`` entries that are well formed, in depth order."""
        entries = [
            e for e in self.meta.get("layers") or ()
            if isinstance(e, Mapping) and isinstance(e.get("name"), str)
        ]
        return tuple(sorted(entries, key=lambda e: _int_or(e.get("index"), 1 << 62)))

    # -- tables -------------------------------------------------------------
    def has(self, table: str, column: str | None = None) -> bool:
        """Whether ``table`` was loaded with at least one row (and ``column``)."""
        t = getattr(self, table)
        if t is None or t.num_rows == 0:
            return False
        return column is None or column in t.column_names

    def steps(self, table: str = "scalars") -> np.ndarray:
        """The ``step`` column of a table as int64 (empty if absent)."""
        key = ("steps", table)
        if key in self._cache:
            return self._cache[key]
        t = getattr(self, table)
        if t is None or "step" not in t.column_names:
            return np.empty(0, dtype=np.int64)
        out = t.column("step").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        out.flags.writeable = False  # shared by every caller: nobody may change it in place
        self._cache[key] = out
        return out

    def prime_steps(self, table: str, steps: np.ndarray) -> None:
        """Hand the run a table's step column the loader already decoded (int64, table order)."""
        t = getattr(self, table)
        if t is None or len(steps) != t.num_rows:
            raise ValueError(f"{table}: {len(steps)} steps for {0 if t is None else t.num_rows} rows")
        steps = np.asarray(steps, dtype=np.int64)
        steps.flags.writeable = False
        self._cache[("steps", table)] = steps

    def column(self, table: str, name: str) -> np.ndarray | None:
        """A numeric column as float64, nulls as NaN, aligned with ``steps``."""
        key = (table, name)
        if key in self._cache:
            return self._cache[key]
        t = getattr(self, table)
        if t is None or name not in t.column_names:
            return None
        col = t.column(name)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            return None
        arr = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
        arr = np.asarray(arr, dtype=np.float64)
        self._cache[key] = arr
        return arr

    def layer_names(self) -> tuple[str, ...]:
        """Layer names in depth order: run.json order, then unknown ones as met."""
        if "layer_names" in self._cache:
            return self._cache["layer_names"]
        names = [e["name"] for e in self.layer_info]
        seen = set(names)
        if self.layers is not None and "layer" in self.layers.column_names:
            for n in _used_names(self.layers.column("layer"), seen):
                if n is not None and n not in seen:
                    names.append(n)
                    seen.add(n)
        self._cache["layer_names"] = tuple(names)
        return self._cache["layer_names"]

    def layer_matrix(self, column: str) -> LayerMatrix | None:
        """``column`` of the layers table as a dense steps x layers matrix."""
        key = ("layer_matrix", column)
        if key in self._cache:
            return self._cache[key]
        t = self.layers
        if t is None or t.num_rows == 0 or column not in t.column_names:
            return None
        names = self.layer_names()
        steps, row, cols, ok = self._layer_placement()
        raw = t.column(column)
        vals = _as_float64(raw)
        valid = ~raw.is_null().to_numpy(zero_copy_only=False) if raw.null_count else np.ones(len(vals), bool)
        if ok is not None:
            vals, valid = vals[ok], valid[ok]
        shape = (len(steps), len(names))
        if self._cache.get("layer_regular"):
            # Every step holds every layer in depth order (the recorder's layout): no scatter needed.
            values, present = vals.reshape(shape), valid.reshape(shape)
        else:
            values, present = np.full(shape, np.nan), np.zeros(shape, dtype=bool)
            values[row, cols] = vals
            present[row, cols] = valid
        depth = self._layer_depths(names)
        for arr in (values, present):
            arr.flags.writeable = False  # shared by every detector: nobody may change it in place
        result = LayerMatrix(steps=steps, layers=names, depth=depth, values=values, present=present)
        self._cache[key] = result
        return result

    def layer_grid(self) -> tuple[np.ndarray, tuple[str, ...], np.ndarray] | None:
        """``(steps, names, depth)`` every ``layer_matrix`` shares, without building a column."""
        t = self.layers
        if t is None or t.num_rows == 0 or "layer" not in t.column_names:
            return None
        names = self.layer_names()
        return self._layer_placement()[0], names, self._layer_depths(names)

    def _layer_depths(self, names: tuple[str, ...]) -> np.ndarray:
        depth_of = {e["name"]: _int_or(e.get("index"), -1) for e in self.layer_info}
        return np.array([depth_of.get(n, len(depth_of) + j) for j, n in enumerate(names)], dtype=np.int64)

    def _layer_placement(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """Where each layers row goes in the dense matrix: (steps, row, col, kept rows or None).

        ``row`` and ``col`` are None for a regular grid (every step holds
        every layer, in depth order): a reshape places it.

        Computed once and shared by every ``layer_matrix`` column. The loader
        sorts layers by step, so unique steps come from one linear pass; a
        hand-built unsorted table falls back to ``np.unique``.
        """
        if "layer_placement" in self._cache:
            return self._cache["layer_placement"]
        index = {n: j for j, n in enumerate(self.layer_names())}
        assert self.layers is not None, "layer_names() is empty without a layers table"
        layer_col = self.layers.column("layer").combine_chunks()
        if pa.types.is_dictionary(layer_col.type):
            dict_names = layer_col.dictionary.to_pylist()
            lut = np.array([index.get(n, -1) if n is not None else -1 for n in dict_names] or [-1],
                           dtype=np.int32)
            codes = layer_col.indices.to_numpy(zero_copy_only=False)
            if layer_col.null_count:
                null = layer_col.is_null().to_numpy(zero_copy_only=False)
                cols = np.where(null, -1, lut[np.where(null, 0, codes).astype(np.int64)])
            else:
                cols = lut[codes]
        else:
            cols = np.array([index.get(n, -1) if n is not None else -1 for n in layer_col.to_pylist()])
        step = self.steps("layers")
        ok = None if bool((cols >= 0).all()) else cols >= 0
        if ok is not None:
            step, cols = step[ok], cols[ok]
        n = len(self.layer_names())
        grid = _regular_grid(step, cols, n)
        if grid is not None:
            # A regular grid is placed by a reshape: the row/column indices need not be kept.
            self._cache["layer_regular"] = True
            self._cache["layer_placement"] = (grid, None, None, ok)
            return self._cache["layer_placement"]
        steps: np.ndarray
        row: np.ndarray
        if len(step) and bool(np.all(step[1:] >= step[:-1])):
            change = np.empty(len(step), dtype=bool)
            change[0] = True
            np.not_equal(step[1:], step[:-1], out=change[1:])
            # int32 indices halve what the cache holds for a 10M-row table.
            steps, row = step[change], (np.cumsum(change) - 1).astype(np.int32)
        else:
            steps, row = np.unique(step, return_inverse=True)
        self._cache["layer_regular"] = False
        self._cache["layer_placement"] = (steps, row, cols, ok)
        return self._cache["layer_placement"]


def _regular_grid(step: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray | None:
    """The steps of a table in which every step holds every layer once, in depth order
    (the recorder's layout), or None: checked without building any row index."""
    if n == 0 or len(cols) == 0 or len(cols) % n:
        return None
    c2, s2 = cols.reshape(-1, n), step.reshape(-1, n)
    if not (c2 == np.arange(n, dtype=c2.dtype)).all():
        return None
    steps = s2[:, 0]
    if not ((s2 == steps[:, None]).all() and (len(steps) < 2 or bool(np.all(steps[1:] > steps[:-1])))):
        return None
    return steps.copy()


def _used_names(col: pa.ChunkedArray, known: set[str]) -> list[str | None]:
    """Distinct layer names, in the order rows first meet them.

    When every name a dictionary chunk's rows use is ``known`` (run.json
    lists it, so its place is decided there) a count over the indices is
    enough; otherwise ``pc.unique`` gives the first-appearance order.
    """
    out: list[str | None] = []
    for chunk in col.chunks:
        names = None
        if pa.types.is_dictionary(chunk.type):
            idx = chunk.indices.to_numpy(zero_copy_only=False)
            if chunk.null_count:
                idx = idx[~chunk.is_null().to_numpy(zero_copy_only=False)]
            used = np.flatnonzero(np.bincount(idx.astype(np.int64, copy=False), minlength=len(chunk.dictionary)))
            names = [chunk.dictionary[int(i)].as_py() for i in used]
            if not set(names) <= known:
                names = None
        if names is None:
            uniq = pc.unique(chunk)
            if pa.types.is_dictionary(uniq.type):
                uniq = uniq.cast(uniq.type.value_type)
            names = uniq.to_pylist()
        out.extend(names)
    return list(dict.fromkeys(out))


def _as_float64(col: pa.ChunkedArray) -> np.ndarray:
    """A numeric column as one float64 array, nulls as NaN, filled chunk by chunk.

    Casting the whole column in Arrow first would hold a second full copy
    of a 10M-row column for a moment, the analysis's largest temporary.
    """
    out = np.empty(len(col), dtype=np.float64)
    pos = 0
    for chunk in col.chunks:
        if not pa.types.is_floating(chunk.type):
            chunk = pc.cast(chunk, pa.float64())
        out[pos:pos + len(chunk)] = chunk.to_numpy(zero_copy_only=False)
        pos += len(chunk)
    return out


def _basename(path: str) -> str:
    parts = [p for p in str(path).replace("\\", "/").split("/") if p]
    return parts[-1] if parts else str(path)


def _int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def wanted_columns(want: list[str], names: list[str], keys: tuple[str, ...] = ()) -> list[str]:
    """The columns of ``names`` a projection asks for, in their order: ``keys`` always, each of
    ``want`` in any case (a console log keeps its names as printed, ``Train_acc``; a detector asks
    in lower case), a trailing ``*`` as a prefix (``val_loss@*``) and ``*`` on both sides as a part of
    the name in any case (``*acc*``: an accuracy under whatever name its library gives it)."""
    exact = {*keys, *(w.lower() for w in want if "*" not in w)}
    parts = tuple(w[1:-1].lower() for w in want if len(w) > 2 and w.startswith("*") and w.endswith("*"))
    prefixes = tuple(w[:-1] for w in want if w.endswith("*") and not w.startswith("*")) + (("",) if "*" in want else ())
    return [c for c in names if c in exact or c.lower() in exact or (prefixes and c.startswith(prefixes))
            or any(p in c.lower() for p in parts)]
