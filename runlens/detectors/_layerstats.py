"""Small helpers the gradient and weight detectors share; the matrices come from
:mod:`runlens.signals.layers` (``ctx.signals_of(run).layers``)."""

from __future__ import annotations

import warnings

import numpy as np

from runlens.signals.layers import MAX_ROWS, MIN_MODULES, ModuleMatrix

MAX_NAMED = 20  # layers a finding names; the count of the rest goes in its evidence

__all__ = ["MAX_NAMED", "MAX_ROWS", "MIN_MODULES", "ModuleMatrix", "column_medians", "fmt_p", "log10_positive"]


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
