"""The data a detector cannot decide without: the series, or a Skip that says what is missing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runlens.detectors._base import Skip

if TYPE_CHECKING:
    import numpy as np

    from runlens.detectors._base import Context
    from runlens.io.run import Run
    from runlens.signals import Series


def at_least(series: Series | None, points: int, why: str) -> Series:
    """``series`` when it has ``points`` values or more; else :class:`Skip` with ``why``."""
    if series is None or len(series) < points:
        raise Skip(why)
    return series


def finite_loss(run: Run, ctx: Context, points: int) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of the finite training loss; :class:`Skip` when it has fewer than ``points``."""
    loss = ctx.signals_of(run).loss
    if loss.values.size < points:
        raise Skip(f"only {loss.values.size} finite training losses (< {points})")
    return loss.steps, loss.values
