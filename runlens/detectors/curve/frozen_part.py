"""A short log whose loss is mostly one part that does not move: that part of the model learns nothing.

Trainers of several heads print each part of their loss (CenterNet's ``hm_loss``, ``wh_loss``,
``off_loss``; a GAN's ``G_encoder_loss``). A part measured on new batches at every line cannot
repeat to its last printed digit unless what it is computed from no longer depends on the batch: the
head's outputs are constant (saturated, zeroed, detached from the graph). When that part is most of
the training loss, the total cannot fall much whatever the other parts do: underfitting, told by the
part's own values, where a short log's total alone has too few points for a trend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors.curve.features import short_evidence
from runlens.detectors.curve.memorized import Column, alike_tail_length
from runlens.diagnosis import CurveVerdict
from runlens.io.reader.names import GRAD_WORDS, LOSS, SCALE, VAL, tokens

if TYPE_CHECKING:
    from runlens.io.run import Run

#: The fewest last points a part must repeat at: two equal values can be a coincidence of rounding.
FROZEN_POINTS = 3
#: The least share of the training loss the frozen part must hold over its frozen points.
MOST = 0.5
#: Words of a part computed from the weights alone (a weight-decay or prior term): it does not depend on
#: the batch by design, and moves too slowly to change its printed digits over a few steps.
WEIGHT_TERMS = frozenset({"reg", "regularization", "regularisation", "regularizer", "regulariser", "l2", "weight",
                          "weights", "decay", "wd", "norm", "penalty", "prior"})


def loss_parts(run: Run) -> dict[str, Column]:
    """The training columns named a loss besides ``loss`` itself (no validation, gradient or scale word,
    no term of the weights alone: ``RegLoss``): the parts a trainer prints beside its total."""
    t = getattr(run, "scalars", None)
    if t is None:
        return {}
    out = {}
    for c in t.column_names:
        words = set(tokens(c))
        if c == "loss" or not words & LOSS or words & (VAL | GRAD_WORDS | SCALE | WEIGHT_TERMS):
            continue
        v, steps = run.column("scalars", c), run.steps("scalars")
        if v is None or steps is None:
            continue
        ok = np.isfinite(v)
        if int(ok.sum()) >= FROZEN_POINTS:
            out[c] = (steps[ok], v[ok])
    return out


def frozen_part(steps: np.ndarray, x: np.ndarray, parts: dict[str, Column] | None) -> CurveVerdict | None:
    """Underfitting (``kind: short_frozen_part``) when a part of the loss is printed alike, to a
    hundredth's digit and finer (not a coarse ``0.50``), at each of its last ``FROZEN_POINTS`` points or
    more, above 0, and holds ``MOST`` of the training loss or more at those points."""
    for name, (ps, pv) in sorted((parts or {}).items()):
        order = np.argsort(ps, kind="stable")
        ps, pv = ps[order], pv[order]
        run, level = alike_tail_length(pv), float(pv[-1])
        if run < FROZEN_POINTS or not level > 0:
            continue
        span = (steps >= ps[-run]) & (steps <= ps[-1])
        total = x[span]
        if total.size < FROZEN_POINTS or not float(np.median(total)) > 0:
            continue
        share = level / float(np.median(total))
        if share < MOST or share > 1 + 1e-6:  # a part above its total is no part of it
            continue
        return CurveVerdict(
            "underfitting", f"the loss part {name!r} is {level:.7g} at each of its last {run} points (steps "
            f"{int(ps[-run])} to {int(ps[-1])}), to the last printed digit, and is {share:.0%} of the training "
            "loss: what it is computed from no longer depends on the batch (a head whose outputs are constant, "
            "saturated or cut from the graph), so most of the loss cannot fall, in a short log",
            {**short_evidence(x, "short_frozen_part"),
             "part": name, "part_level": level, "frozen_points": run, "share_of_loss": share,
             "min_frozen_points": FROZEN_POINTS, "min_share": MOST, "step": int(ps[-run])})
    return None
