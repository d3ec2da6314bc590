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
        K is the config's count, or else the backward passes per optimizer
        step the recorder counted (``backward_passes``). With the recorder's
        ``ce_grad_scale`` (N times the largest entry of the gradient that
        reached the logits of a softmax cross-entropy, a lower bound on the
        factor the loss was multiplied by: 1 for a mean, 1/K for a mean
        divided by K; over ``loss_scale`` under a GradScaler), it fires when
        the largest reading exceeds ``margin / K``: proof that the loss was
        not divided, whatever the step sizes. Otherwise, from the steps:
        the per-step median over modules of ``update_norm / weight_norm``
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
        margin: how far above 1/K the recorder's bound must be, for float error and rows of padding (1.25).
    """

    code = "accumulation_unscaled"
    severity = "warning"
    title = "Gradient accumulation without loss scaling"
    needs = Needs(scalars=("lr", "ce_grad_scale", "backward_passes", "loss_scale"),
                  layers=("weight_norm", "update_norm"), requires=("layers.weight_norm",))
    constraints = {"min_update_ratio": Interval(float, 0, None, closed="neither"),
                   "margin": Interval(float, 1, None)}

    def __init__(self, *, min_update_ratio: float = 1e-2, margin: float = 1.25) -> None:
        self.min_update_ratio = min_update_ratio
        self.margin = margin

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        k, k_source = accumulation_count(run)
        if k is None or k <= 1:
            return []
        family, _ = optimizer_family(run.config)
        named = any(run.config.get(key) for key in ("optimizer", "optim", "optimizer_name", "opt"))
        if family == "adam" or (family is None and named):
            return []  # Adam-family, or an optimizer this reading cannot place: no claim
        readings = ctx.signals_of(run).logits
        bound = float(np.max(readings.factor.values)) if readings else None
        if bound is not None and bound > self.margin / k:
            ev = {"accumulation_steps": int(k), "accumulation_source": k_source, "loss_factor_at_least": bound,
                  "divided_loss_factor_at_most": 1 / k, "reading": "recorder: the logits' gradient",
                  "optimizer": family or "unknown"}
            return [self.finding(
                f"with {int(k)} micro-batches per optimizer step ({k_source}), the gradient reaching the logits "
                f"shows the loss multiplied by at least {bound:.2g}, where a loss divided by {int(k)} allows at "
                f"most {1 / k:.2g}: the loss is not divided by the accumulation count", evidence=ev)]
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


def accumulation_count(run: Run) -> tuple[float | None, str | None]:
    """K: the config's accumulation count, else the backward passes per optimizer step the recorder
    counted (their median over the steps it read them on)."""
    k, source = config_number(run.config, ACCUMULATION_KEYS)
    if k is not None:
        return k, source
    passes = run.column("scalars", "backward_passes")
    seen = passes[np.isfinite(passes)] if passes is not None else np.empty(0)
    if seen.size == 0:
        return None, None
    return float(np.median(seen)), "recorder: backward passes per optimizer step"

