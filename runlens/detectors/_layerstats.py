"""Per-layer views shared by the gradient and weight detectors.

A recorded "layer" is one parameter tensor. Biases and norm gains are small
vectors whose norms sit far below their module's weight matrix, so a depth
profile over raw parameters zig-zags by decades in a perfectly healthy
network. These helpers combine a module's weight matrices (ndim >= 2, from
run.json ``shape``) into one L2 norm per module, in depth order, and cut
every series at the first non-finite loss, after which nothing means much.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..stats.depth import group_norms

if TYPE_CHECKING:
    from ..run import LayerMatrix, Run
    from ._base import Context

MIN_MODULES = 3  # below this a depth profile has no shape to test


@dataclass(frozen=True)
class ModuleMatrix:
    """One norm column combined per module: (steps x modules), input -> loss."""

    steps: np.ndarray
    modules: tuple[str, ...]
    members: tuple[tuple[str, ...], ...]
    values: np.ndarray


def usable_rows(lm: LayerMatrix, ctx: Context) -> np.ndarray:
    """Rows recorded before the first non-finite loss."""
    if ctx.first_nonfinite_step is None:
        return np.ones(len(lm.steps), dtype=bool)
    return lm.steps < ctx.first_nonfinite_step


def layer_shapes(run: Run) -> dict[str, tuple[str, int]]:
    """``name -> (module, ndim)`` from run.json; ndim -1 when unknown."""
    out = {}
    for e in run.layer_info:
        shape = e.get("shape")
        ndim = len(shape) if isinstance(shape, list) else -1
        module = e.get("module")
        out[e["name"]] = (module if isinstance(module, str) and module else e["name"], ndim)
    return out


def module_matrix(run: Run, column: str, ctx: Context, *, weights_only: bool = True) -> ModuleMatrix | None:
    """``column`` combined per module, rows cut at the first non-finite loss.

    With ``weights_only`` the matrices (ndim >= 2) are used when at least
    ``MIN_MODULES`` modules have one; otherwise every parameter counts.
    """
    lm = run.layer_matrix(column)
    if lm is None or lm.values.size == 0:
        return None
    rows = usable_rows(lm, ctx)
    info = layer_shapes(run)
    module = [info.get(n, (n, -1))[0] for n in lm.layers]
    keep = np.ones(len(lm.layers), dtype=bool)
    if weights_only:
        matrices = np.array([info.get(n, (n, -1))[1] >= 2 for n in lm.layers])
        if len({m for m, w in zip(module, matrices) if w}) >= MIN_MODULES:
            keep = matrices
    cols = np.flatnonzero(keep)
    values = np.where(lm.present[rows][:, cols], lm.values[rows][:, cols], np.nan)
    labels = [module[j] for j in cols]
    combined, order = group_norms(values, labels)
    members = tuple(tuple(lm.layers[j] for j in cols if module[j] == g) for g in order)
    return ModuleMatrix(steps=lm.steps[rows], modules=tuple(order), members=members, values=combined)


def log10_positive(values: np.ndarray) -> np.ndarray:
    """log10 of the finite positive entries, NaN elsewhere (zeros included)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log10(values)
    return np.where(np.isfinite(out), out, np.nan)


def column_medians(values: np.ndarray) -> np.ndarray:
    """Median of each column over its finite rows (NaN for an empty column)."""
    values = np.where(np.isfinite(values), values, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an empty column is NaN, as documented
        return np.nanmedian(values, axis=0) if values.shape[0] else np.full(values.shape[1], np.nan)


def fmt_p(p: float) -> str:
    """A p-value as a message shows it: two significant digits."""
    return f"{p:.2g}"
