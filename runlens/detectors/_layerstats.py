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

from runlens.stats.depth import group_norms

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.io.run import LayerMatrix, Run

MIN_MODULES = 3  # below this a depth profile has no shape to test
MAX_ROWS = 2000  # evenly spaced recorded steps that profile medians are taken over
MAX_NAMED = 20  # layers a finding names; the count of the rest goes in its evidence


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
        if not isinstance(module, str) or not module:
            # Absent or empty (a writer that does not know the owner, or the root
            # module): PyTorch-style names still tell the owner.
            module = _owner(e["name"])
        out[e["name"]] = (module or e["name"], ndim)
    return out


def _owner(name: str) -> str:
    # Writers that do not say which module owns a parameter still name it
    # PyTorch-style ("encoder.0.weight"): the owner is what precedes the last dot.
    return name.rsplit(".", 1)[0] if "." in name else name


def module_matrix(run: Run, column: str, ctx: Context, *, weights_only: bool = True,
                  max_rows: int | None = None, with_next: bool = False) -> ModuleMatrix | None:
    """``column`` combined per module, rows cut at the first non-finite loss.

    With ``weights_only`` the matrices (ndim >= 2) are used when at least
    ``MIN_MODULES`` modules have one; otherwise every parameter counts.
    ``max_rows`` keeps that many evenly spaced rows: medians over a run's
    profile need a systematic sample, not all 100,000 recorded steps.
    """
    lm = run.layer_matrix(column)
    if lm is None or lm.values.size == 0:
        return None
    rows = np.flatnonzero(usable_rows(lm, ctx))
    if max_rows is not None and len(rows) > max_rows:
        pick = np.linspace(0, len(rows) - 1, max_rows).round().astype(np.int64)
        if with_next:
            pick = np.unique(np.concatenate([pick, np.minimum(pick + 1, len(rows) - 1)]))
        rows = rows[pick]
    info = layer_shapes(run)
    module = [info.get(n, (_owner(n), -1))[0] for n in lm.layers]
    keep = np.ones(len(lm.layers), dtype=bool)
    if weights_only:
        matrices = np.array([info.get(n, (n, -1))[1] >= 2 for n in lm.layers])
        if len({m for m, w in zip(module, matrices, strict=True) if w}) >= MIN_MODULES:
            keep = matrices
    cols = np.flatnonzero(keep)
    values = np.where(lm.present[rows][:, cols], lm.values[rows][:, cols], np.nan)
    labels = [module[j] for j in cols]
    combined, order = group_norms(values, labels)
    by_module: dict[str, list[str]] = {}
    for j in cols:
        by_module.setdefault(module[j], []).append(lm.layers[j])
    members = tuple(tuple(by_module[g]) for g in order)
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
