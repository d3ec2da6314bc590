"""Per-layer signals: recorded steps x layers matrices, in depth order, built once per run.

Every matrix is ``(len(steps), len(names))`` float64 with NaN where the
layer was not recorded at that step or the value was null; ``present``
tells those apart from a recorded NaN. Columns are materialised on first
use (one vectorised placement of the layers table, shared by every
column: see ``Run.layer_matrix``) and then shared by every detector.

A recorded "layer" is one parameter tensor. Biases and norm gains are
small vectors whose norms sit far below their module's weight matrix, so
:meth:`LayerSignals.modules` combines a module's weight matrices (ndim >= 2,
from run.json ``shape``) into one L2 norm per module.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.stats.depth import group_norms

if TYPE_CHECKING:
    from collections.abc import Mapping

    from runlens.io.run import LayerMatrix, Run

COLUMNS = ("grad_norm", "weight_norm", "update_norm", "grad_abs_max", "grad_zero_frac", "nonfinite")
MIN_MODULES = 3  # below this a depth profile has no shape to test
MAX_ROWS = 2000  # evenly spaced recorded steps that profile medians are taken over


@dataclass(frozen=True)
class ModuleMatrix:
    """One norm column combined per module: (steps x modules), input -> loss."""

    steps: np.ndarray
    modules: tuple[str, ...]
    members: tuple[tuple[str, ...], ...]
    values: np.ndarray


class LayerSignals:
    """The layers table as matrices. ``steps``: recorded steps (ascending);
    ``names``: layers in depth order (``depth[j]`` is run.json ``index``);
    ``module``/``ndim``/``numel``: per layer, from run.json (``ndim`` -1 and
    ``numel`` NaN when unknown); ``usable``: rows before the first
    non-finite loss."""

    def __init__(self, run: Run, first_nonfinite_step: int | None) -> None:
        self._run = run
        self._cut = first_nonfinite_step
        self._modules: dict[tuple, ModuleMatrix | None] = {}
        grid = run.layer_grid() if any(run.has("layers", c) for c in COLUMNS) else None
        self._grid = grid
        self.steps = grid[0] if grid is not None else np.empty(0, dtype=np.int64)
        self.names = grid[1] if grid is not None else ()
        self.depth = grid[2] if grid is not None else np.empty(0, dtype=np.int64)
        info = {e["name"]: e for e in run.layer_info}
        self.module = tuple(_module_of(info.get(n), n) for n in self.names)
        self.ndim = np.array([_ndim(info.get(n)) for n in self.names], dtype=np.int64)
        self.numel = np.array([_numel(info.get(n)) for n in self.names], dtype=np.float64)

    def __bool__(self) -> bool:
        return self._grid is not None and len(self.steps) > 0

    def has(self, column: str) -> bool:
        return self._matrix(column) is not None

    def _matrix(self, column: str) -> LayerMatrix | None:
        lm = self._run.layer_matrix(column)
        if lm is None or lm.values.shape != (len(self.steps), len(self.names)):
            return None
        return lm

    def values(self, column: str) -> np.ndarray | None:
        """``column`` as a steps x layers float64 matrix (NaN: not recorded or null)."""
        lm = self._matrix(column)
        return None if lm is None else lm.values

    def present(self, column: str) -> np.ndarray | None:
        """Where ``column`` holds a recorded value (a recorded NaN included)."""
        lm = self._matrix(column)
        return None if lm is None else lm.present

    grad_norm = property(lambda self: self.values("grad_norm"))
    weight_norm = property(lambda self: self.values("weight_norm"))
    update_norm = property(lambda self: self.values("update_norm"))
    grad_abs_max = property(lambda self: self.values("grad_abs_max"))
    grad_zero_frac = property(lambda self: self.values("grad_zero_frac"))
    nonfinite = property(lambda self: self.values("nonfinite"))

    @cached_property
    def update_ratio(self) -> np.ndarray | None:
        """``update_norm / weight_norm`` per layer and step (NaN where the weight is not positive)."""
        u, w = self.update_norm, self.weight_norm
        if u is None or w is None:
            return None
        with np.errstate(all="ignore"):
            return np.where(w > 0, u / w, np.nan)

    @cached_property
    def usable(self) -> np.ndarray:
        """Rows recorded before the first non-finite loss."""
        if self._cut is None:
            return np.ones(len(self.steps), dtype=bool)
        return self.steps < self._cut

    def modules(self, column: str, *, max_rows: int | None = None, with_next: bool = False,
                weights_only: bool = True) -> ModuleMatrix | None:
        """``column`` combined per module over the usable rows (cached).

        With ``weights_only`` the matrices (ndim >= 2) are used when at least
        ``MIN_MODULES`` modules have one; otherwise every parameter counts.
        ``max_rows`` keeps that many evenly spaced rows (``with_next``: and
        the row after each, for differences): medians over a run's profile
        need a systematic sample, not all 100,000 recorded steps.
        """
        key = (column, max_rows, with_next, weights_only)
        if key not in self._modules:
            self._modules[key] = self._combine(column, max_rows, with_next, weights_only)
        return self._modules[key]

    def _combine(self, column: str, max_rows: int | None, with_next: bool,
                 weights_only: bool) -> ModuleMatrix | None:
        lm = self._matrix(column)
        if lm is None or lm.values.size == 0:
            return None
        rows = np.flatnonzero(self.usable)
        if max_rows is not None and len(rows) > max_rows:
            pick = np.linspace(0, len(rows) - 1, max_rows).round().astype(np.int64)
            if with_next:
                pick = np.unique(np.concatenate([pick, np.minimum(pick + 1, len(rows) - 1)]))
            rows = rows[pick]
        keep = np.ones(len(self.names), dtype=bool)
        if weights_only:
            matrices = self.ndim >= 2
            if len({m for m, w in zip(self.module, matrices, strict=True) if w}) >= MIN_MODULES:
                keep = matrices
        cols = np.flatnonzero(keep)
        values = np.where(lm.present[rows][:, cols], lm.values[rows][:, cols], np.nan)
        combined, order = group_norms(values, [self.module[j] for j in cols])
        by_module: dict[str, list[str]] = {}
        for j in cols:
            by_module.setdefault(self.module[j], []).append(self.names[j])
        members = tuple(tuple(by_module[g]) for g in order)
        return ModuleMatrix(steps=self.steps[rows], modules=tuple(order), members=members, values=combined)

    def total(self, column: str) -> np.ndarray | None:
        """Per step, the L2 norm over every recorded layer (Inf where one is non-finite)."""
        lm = self._matrix(column)
        if lm is None:
            return None
        vals = np.where(lm.present, lm.values, 0.0)
        with np.errstate(all="ignore"):
            total = np.sqrt(np.einsum("ij,ij->i", vals, vals))
            bad = ~np.isfinite(vals).all(axis=1)
        total[bad] = np.inf
        total[~lm.present.any(axis=1)] = np.nan
        return total


def _owner(name: str) -> str:
    # Writers that do not say which module owns a parameter still name it
    # PyTorch-style ("encoder.0.weight"): the owner is what precedes the last dot.
    return name.rsplit(".", 1)[0] if "." in name else name


def _module_of(entry: Mapping[str, Any] | None, name: str) -> str:
    module = entry.get("module") if entry is not None else None
    if not isinstance(module, str) or not module:
        module = _owner(name)
    return module or name


def _ndim(entry: Mapping[str, Any] | None) -> int:
    shape = entry.get("shape") if entry is not None else None
    return len(shape) if isinstance(shape, list) else -1


def _numel(entry: Mapping[str, Any] | None) -> float:
    if entry is None:
        return float("nan")
    n, shape = entry.get("numel"), entry.get("shape")
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return float(n)
    if isinstance(shape, list) and shape and all(isinstance(d, int) and d > 0 for d in shape):
        return float(np.prod(shape))
    return float("nan")
