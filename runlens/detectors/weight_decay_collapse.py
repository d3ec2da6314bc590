"""weight_decay_collapse: the weights shrink toward zero under a weight decay too strong for the rate."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import config_number
from runlens.detectors._updates import COLLAPSE, lr_at, weight_norm_ratio

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


@register
class WeightDecayCollapse(Detector):
    """The weights collapse toward zero, pulled by a weight decay whose total pull over the run removes
    more than an order of magnitude by itself.

    What it detects:
        A run whose weight matrices end at a small fraction of their first
        norm (the median over modules of last/first weight norm, the curve's
        ``weight_norm_ratio``, at most 0.1) while the config's
        ``weight_decay`` and the learning rate are large enough to explain
        it: decay alone multiplies the weights by ``exp(-wd x sum(lr))``
        over the run (decoupled or L2 decay with SGD), and that ``decay
        budget`` ``wd x sum(lr)`` is at least ``min_budget`` (ln 10: an
        order of magnitude).

    Why it matters:
        Collapsed weights make every layer's output tiny: the gradients,
        the loss and the per-layer ratios measured against the weights all
        look broken (the loss stuck at chance, dead or vanishing layers, an
        update ratio that reads as a learning rate too high, a curve called
        unstable). Each of those is a symptom; the decay is the cause.

    How it decides:
        ``weight_norm_ratio`` at most ``max_ratio`` (at least 2 recorded
        rows of weight norms); ``weight_decay`` (or ``wd``) in the config,
        at its top level or one level down; the sum of the learning rate
        over the steps (``scalars.lr`` integrated over the steps, else the
        config's rate times the steps); fires when ``decay_budget`` is at
        least ``min_budget``. Severity error.

    What to try:
        Lower weight_decay to the usual range (1e-4 to 1e-2 with SGD, 0.01
        to 0.1 with AdamW); check that it is not a learning rate or a
        dropout passed to the wrong argument, and that decay is not applied
        twice (in the optimizer and as an L2 term in the loss).

    Parameters:
        max_ratio: largest last/first weight-norm ratio that counts as collapsed (0.1).
        min_budget: least wd x sum(lr) that can explain the collapse (2.303, ln 10).
    """

    code = "weight_decay_collapse"
    severity = "error"
    title = "Weights collapsed by weight decay"
    needs = Needs(scalars=("lr",), layers=("weight_norm",), requires=("layers.weight_norm",))
    constraints = {"max_ratio": Interval(float, 0, 1, closed="neither"),
                   "min_budget": Interval(float, 0, None, closed="neither")}

    def __init__(self, *, max_ratio: float = COLLAPSE, min_budget: float = float(np.log(10))) -> None:
        self.max_ratio = max_ratio
        self.min_budget = min_budget

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        wd, wd_source = config_number(run.config, ("weight_decay", "wd"))
        if wd is None:
            return []
        ratio = weight_norm_ratio(ctx.signals_of(run))
        if ratio is None:
            raise Skip("needs weight norms at two recorded steps")
        if ratio > self.max_ratio:
            return []
        steps = run.steps("scalars")
        if len(steps) < 2:
            raise Skip("needs at least 2 logged steps")
        grid = np.arange(steps[0], steps[-1] + 1)
        lr, lr_source = lr_at(run, grid)
        if lr is None:
            raise Skip("needs a learning rate (scalars.lr or config lr) to tell the decay's pull")
        budget = float(wd * np.sum(lr))
        if budget < self.min_budget:
            return []
        ev = {"weight_norm_ratio": ratio, "weight_decay": wd, "weight_decay_source": wd_source,
              "lr_sum": float(np.sum(lr)), "lr_source": lr_source, "decay_budget": budget,
              "decay_only_ratio": float(np.exp(-budget))}
        return [self.finding(
            f"the weights shrank to {ratio:.2g} of their first norm; weight_decay {wd:g} over the run's learning "
            f"rates alone multiplies them by exp(-{budget:.3g}) = {np.exp(-budget):.2g}", evidence=ev)]
