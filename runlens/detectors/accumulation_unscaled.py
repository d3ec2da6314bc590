"""accumulation_unscaled: gradient accumulation without dividing the loss by the accumulation count."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import ACCUMULATION_KEYS, config_number
from runlens.detectors._updates import optimizer_family, step_ratios

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


@register
class AccumulationUnscaled(Detector):
    """Gradient accumulation over K micro-batches without dividing each loss by K: every update is K
    times the intended one.

    What it detects:
        A run whose config states an accumulation count K > 1
        (``gradient_accumulation_steps``, ``accumulate_grad_batches``,
        ``accum_steps``...), trained with a non-adaptive optimizer (SGD, with
        or without momentum: Adam's update does not depend on the
        gradient's scale), whose updates are too large relative to the
        weights while the same updates divided by K would be of a healthy
        size. Summing K micro-batch gradients without ``loss / K`` makes the
        gradient, and so the SGD step, grow with K.

    Why it matters:
        The effective learning rate is K times the configured one: the run
        is unstable or diverges, and changing K (to fit memory) changes the
        training dynamics although it should not. Lowering the learning rate
        hides it until K changes again.

    How it decides:
        The per-step median over modules of ``update_norm / weight_norm``
        (measured, or a lower bound from the weight norms' changes), its
        median over the first half of the recorded rows: ``update_ratio``.
        It fires when K > 1 is stated, the optimizer is not Adam-family
        (from the config; unknown counts as SGD only when the config names
        no optimizer), ``update_ratio`` is at least ``min_update_ratio`` and
        ``update_ratio / K`` is below it (the K-fold excess is what makes
        the steps too large). Severity warning.

    What to try:
        Divide each micro-batch's loss by the accumulation count before
        backward (loss = loss / K; the last, shorter group of an epoch by its
        own size), or average the accumulated gradients before the
        optimizer step; keep the learning rate that works without
        accumulation.

    Parameters:
        min_update_ratio: least update/weight ratio that counts as too large (1e-2).
    """

    code = "accumulation_unscaled"
    severity = "warning"
    title = "Gradient accumulation without loss scaling"
    needs = Needs(scalars=("lr",), layers=("weight_norm", "update_norm"), requires=("layers.weight_norm",))
    constraints = {"min_update_ratio": Interval(float, 0, None, closed="neither")}

    def __init__(self, *, min_update_ratio: float = 1e-2) -> None:
        self.min_update_ratio = min_update_ratio

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        k, k_source = config_number(run.config, ACCUMULATION_KEYS)
        if k is None or k <= 1:
            return []
        family, _ = optimizer_family(run.config)
        named = any(run.config.get(key) for key in ("optimizer", "optim", "optimizer_name", "opt"))
        if family == "adam" or (family is None and named):
            return []  # Adam-family, or an optimizer this reading cannot place: no claim
        ratio, source, _ = step_ratios(ctx.signals_of(run))
        with np.errstate(all="ignore"):
            ratio = np.where(np.isfinite(ratio) & (ratio > 0), ratio, np.nan)
        first = ratio[: max(1, ratio.shape[0] // 2)]
        rows = np.isfinite(first).any(axis=1)
        if rows.sum() < 3:
            raise Skip("needs at least 3 recorded rows with update/weight ratios")
        r = float(np.median(np.nanmedian(first[rows], axis=1)))
        if r < self.min_update_ratio or r / k >= self.min_update_ratio:
            return []
        ev = {"accumulation_steps": int(k), "accumulation_source": k_source, "update_ratio": r,
              "update_ratio_over_k": r / k, "update_source": source, "optimizer": family or "unknown"}
        return [self.finding(
            f"with {int(k)} accumulation steps ({k_source}) the updates are {r:.2g} of the weights, "
            f"{r / k:.2g} if divided by {int(k)}: the loss is likely not divided by the accumulation count",
            evidence=ev)]
