"""The training loss as detectors read it: ordered, finite, cut at the first NaN.

Shared by the curve classifier (``runlens.detectors.curve``) and the loss detectors;
it lives here, not in ``curve``, so that importing a detector never imports
the classifier (which imports the detector package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from runlens.io.run import Run


def training_loss(run: Run) -> tuple[np.ndarray, np.ndarray, int | None]:
    """``(steps, loss, first_bad_step)``: the training loss ordered by step, up to
    (not including) its first non-finite value; skipped optimizer steps whose
    loss is non-finite are left out, as mixed-precision training makes them."""
    loss = run.column("scalars", "loss")
    if loss is None:
        return np.empty(0, np.int64), np.empty(0), None
    steps = run.steps("scalars")
    skipped = run.column("scalars", "step_skipped")
    raw = run.scalars.column("loss")
    if raw.null_count:
        # a null loss is a step whose loss was not logged, not a NaN: nonfinite_loss agrees
        logged = ~raw.is_null().to_numpy(zero_copy_only=False)
        steps, loss = steps[logged], loss[logged]
        skipped = None if skipped is None else skipped[logged]
    if steps.size > 1 and np.any(np.diff(steps) < 0):
        order = np.argsort(steps, kind="stable")
        steps, loss = steps[order], loss[order]
    else:
        order = None
    bad = ~np.isfinite(loss)
    if skipped is not None and bad.any():
        skipped = skipped if order is None else skipped[order]
        drop = bad & (skipped == 1)
        steps, loss, bad = steps[~drop], loss[~drop], bad[~drop]
    if bad.any():
        i = int(bad.argmax())
        return steps[:i], loss[:i], int(steps[i])
    return steps, loss, None
