"""A short log whose training and held-out loss both ended an order of magnitude up: the weights blew up.

One training loss ten times its lowest may be one bad batch (a spike, ``loss_spikes``' call); a
held-out loss is measured on fixed data, so it rises tenfold only when the weights changed that much.
Both at once, at the end of the log, is a divergence however few the points (RAT-SQL's train loss
0.92 -> 2.30 -> 95.8 with its validation loss 3.54 -> 4.65 -> 112.6).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.diagnosis import CurveVerdict

#: How far above its own minimum each loss must end: an order of magnitude, beyond minibatch noise.
BOTH_HIGH = 10.0


def both_high(steps: np.ndarray, x: np.ndarray, sets: dict[str, tuple[np.ndarray, np.ndarray]],
              base: dict[str, Any]) -> CurveVerdict | None:
    """The last training loss ``BOTH_HIGH`` times the lowest before it, and a held-out loss's last
    evaluation (at or after the training loss's lowest point) ``BOTH_HIGH`` times its own lowest before
    it (2 points each at least)."""
    if x.size < 2:
        return None
    low = float(np.min(x[:-1]))
    if not (low > 0 and float(x[-1]) >= BOTH_HIGH * low):
        return None
    at_low = int(steps[int(np.argmin(x[:-1]))])
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if vl.size < 2 or int(vs[-1]) < at_low:
            continue
        vlow = float(np.min(vl[:-1]))
        if vlow > 0 and float(vl[-1]) >= BOTH_HIGH * vlow:
            return CurveVerdict(
                "diverged", f"the training loss ended at {x[-1]:.4g}, {x[-1] / low:.3g}x its lowest ({low:.4g}), and "
                f"the validation loss{'' if name == 'val_loss' else f' ({name})'} at {vl[-1]:.4g}, "
                f"{vl[-1] / vlow:.3g}x its lowest ({vlow:.4g}): a held-out loss rises that far only when the "
                "weights blew up, in a short log",
                {**base, "kind": "short_both_high", "both_high": BOTH_HIGH, "eval_set": name,
                 "orders_of_magnitude": math.log10(float(x[-1]) / low),
                 "val_orders_of_magnitude": math.log10(float(vl[-1]) / vlow), "step": int(steps[-1])})
    return None
