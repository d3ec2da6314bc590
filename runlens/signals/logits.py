"""What the recorder read off the loss's input (``recorders/_torch_outgrad.py``): one definition.

On the steps it records layers the recorder writes, when the gradient at the
model's output is a softmax cross-entropy's (its rows sum to zero):

- ``ce_grad_scale``: N times the largest entry of that gradient, a lower
  bound on what the loss was multiplied by. A GradScaler multiplies the loss
  by ``loss_scale`` before the backward, so the bound on the loss the user
  wrote is ``ce_grad_scale / loss_scale``: that division happens here, once,
  for every reader.
- ``backward_passes``: backward passes per optimizer step (K micro-batches).
- ``logits_in_unit_interval``: 1 when every checked entry of the output lay
  in [0, 1]; ``logits_sum_to_one``: 1 when, besides, every checked row
  summed to 1 (a softmax's output: probabilities, not logits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from runlens.signals.series import Series, logged

if TYPE_CHECKING:
    from runlens.io.run import Run


@dataclass(frozen=True)
class LogitsReadings:
    """``factor``: the bound on the loss's multiplier per read step (loss scale divided out);
    ``per_pass``: the same times that step's backward passes (the multiplier of one micro-batch's
    loss before a division by K, 1 for a plain mean); ``bounded``: ``logits_in_unit_interval``;
    ``simplex``: ``logits_sum_to_one`` (None when the recorder did not write it)."""

    factor: Series
    per_pass: Series
    bounded: Series | None
    simplex: Series | None

    def __bool__(self) -> bool:
        return len(self.factor) > 0


def logits_readings(run: Run) -> LogitsReadings | None:
    """The recorder's readings of the loss's input; None when it wrote none."""
    found = logged(run, "scalars", "ce_grad_scale")
    if found is None:
        return None
    scale, rows = found
    amp = run.column("scalars", "loss_scale")
    if amp is not None:
        a = amp[rows]
        scale = Series(scale.steps, scale.values / np.where(np.isfinite(a) & (a > 0), a, 1.0), scale.source)
    ok = np.isfinite(scale.values) & (scale.values > 0)
    factor = Series(scale.steps[ok], scale.values[ok], scale.source)
    passes = run.column("scalars", "backward_passes")
    k = passes[rows][ok] if passes is not None else np.ones(int(ok.sum()))
    k = np.where(np.isfinite(k) & (k >= 1), k, 1.0)
    per_pass = Series(factor.steps, factor.values * k, "scalars.ce_grad_scale x backward_passes")
    bounded, simplex = (logged(run, "scalars", name) for name in ("logits_in_unit_interval", "logits_sum_to_one"))
    return LogitsReadings(factor, per_pass, bounded[0].finite() if bounded is not None else None,
                          simplex[0].finite() if simplex is not None else None)
