"""The training loss and the steps a loss scaler skipped: one definition for everything.

- A **null** loss is a step whose loss was not logged: it is dropped, never
  read as NaN.
- A **non-finite** loss (NaN, +/-Inf) on a step the loss scaler skipped
  (``step_skipped == 1``) is mixed-precision training working as designed
  (the scaler found an overflow and did not apply the step): it is dropped
  too, and does not count as the run going non-finite.
- The **first non-finite step** is the first remaining step whose loss is
  NaN or +/-Inf. The curve, every detector and every renderer use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from runlens.signals.series import Series, empty, logged

if TYPE_CHECKING:
    from runlens.io.run import Run


@dataclass(frozen=True)
class LossSignals:
    """``logged``: every counted loss by step, non-finite ones included;
    ``loss``: its finite part before ``first_nonfinite_step``."""

    logged: Series
    loss: Series
    first_nonfinite_step: int | None
    first_nonfinite_value: float | None
    nonfinite_count: int


def flagged_skips(run: Run) -> np.ndarray:
    """Steps with ``step_skipped == 1`` (sorted, unique; empty without the column)."""
    flag = run.column("scalars", "step_skipped")
    if flag is None:
        return np.empty(0, dtype=np.int64)
    return np.unique(run.steps("scalars")[flag == 1])


def skipped_steps(run: Run) -> np.ndarray:
    """Steps whose optimizer step a loss scaler skipped (sorted, unique).

    ``step_skipped == 1`` when logged. Without that column a drop of
    ``loss_scale`` marks the skip: GradScaler halves the scale on exactly
    the steps it skips, and whether the logged scale is read before or
    after the update varies, so both the step with the lower scale and the
    one before it count.
    """
    if run.column("scalars", "step_skipped") is not None:
        return flagged_skips(run)
    found = logged(run, "scalars", "loss_scale")
    if found is None or len(found[0]) < 2:
        return np.empty(0, dtype=np.int64)
    s, scale = found[0].steps, found[0].values
    drop = np.flatnonzero(scale[1:] < scale[:-1])
    return np.unique(np.concatenate([s[drop], s[drop + 1]]))


def loss_signals(run: Run) -> LossSignals:
    """The training loss as every consumer reads it (see the module docstring)."""
    found = logged(run, "scalars", "loss")
    if found is None:
        series = empty("scalars.loss")
        return LossSignals(series, series, None, None, 0)
    series, _ = found
    bad = ~np.isfinite(series.values)
    if bad.any():
        skips = flagged_skips(run)
        if len(skips):
            drop = bad & np.isin(series.steps, skips)
            if drop.any():
                series = Series(series.steps[~drop], series.values[~drop], series.source)
                bad = bad[~drop]
    if not bad.any():
        return LossSignals(series, series, None, None, 0)
    i = int(bad.argmax())
    cut = Series(series.steps[:i], series.values[:i], series.source)
    return LossSignals(series, cut, int(series.steps[i]), float(series.values[i]), int(bad.sum()))
