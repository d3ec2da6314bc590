"""clipping_removes_updates: a clip norm so small that nearly all of every update is removed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import CLIP_KEYS, config_number
from runlens.detectors._require import at_least

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


@register
class ClippingRemovesUpdates(Detector):
    """Gradient clipping removes nearly all of every update: the clip norm is orders of magnitude below
    the gradients' norm.

    What it detects:
        ``clip_grad_norm_(params, max_norm)`` with a ``max_norm`` far below
        the gradient norms the model produces (1e-4 where the norms are
        ~1), so every step is scaled down by the same huge factor. The
        recorder logs the global gradient norm before clipping
        (``grad_norm``) and at ``optimizer.step`` (``grad_norm_applied``);
        without the latter, the clip norm from the config (``max_grad_norm``,
        ``gradient_clip_val``, ``clip_grad_norm``...) stands in for it.

    Why it matters:
        The run barely moves although its learning rate and gradients are
        healthy; it reads as a learning rate too low, or as an unstable run
        (batch noise large next to no progress), and raising the learning
        rate only fights the clip.

    How it decides:
        Per logged step, ``kept = applied norm / pre-clip norm`` (the clip
        norm over the pre-clip norm, capped at 1, from the config). It fires
        when the median of ``kept`` is at most ``max_kept`` and at least
        ``min_share`` of the steps keep less than ``10 x max_kept`` (clipping
        that bites on most steps, not on a spike). ``median_kept`` is the
        test statistic; ``decades_removed`` its -log10. Severity error.

    What to try:
        Raise the clip norm to the scale of the gradient norms (look at the
        logged pre-clip grad_norm: a clip around its median or a few times
        it clips only spikes; 1.0 is the usual choice for transformers), or
        remove clipping; check that the clip value is not a learning rate
        or a weight decay passed to the wrong argument.

    Parameters:
        max_kept: largest median share of the update kept that counts as removed (1e-2).
        min_share: least share of steps clipped to below 10x max_kept (0.9).
    """

    code = "clipping_removes_updates"
    severity = "error"
    title = "Gradient clipping removes nearly all of every update"
    needs = Needs(scalars=("grad_norm", "grad_norm_applied", "step_skipped"), requires=("scalars.grad_norm",))
    constraints = {"max_kept": Interval(float, 0, 1, closed="neither"),
                   "min_share": Interval(float, 0, 1, closed="right")}

    def __init__(self, *, max_kept: float = 1e-2, min_share: float = 0.9) -> None:
        self.max_kept = max_kept
        self.min_share = min_share

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        pre = at_least(ctx.signals_of(run).grad_norm, 10, "needs the pre-clip gradient norm on at least 10 steps")
        applied = run.column("scalars", "grad_norm_applied")
        clip, clip_source = config_number(run.config, CLIP_KEYS)
        if applied is not None and np.isfinite(applied).sum() >= 10:
            post = dict(zip(run.steps("scalars").tolist(), applied.tolist(), strict=True))
            a = np.array([post.get(int(s), np.nan) for s in pre.steps])
            source = "scalars.grad_norm_applied / scalars.grad_norm"
        elif clip is not None:
            a = np.full(len(pre), clip)
            source = f"{clip_source} / scalars.grad_norm"
        else:
            raise Skip("needs scalars.grad_norm_applied or a clip norm in the config")
        with np.errstate(all="ignore"):
            kept = np.minimum(a / pre.values, 1.0)
        ok = np.isfinite(kept) & (pre.values > 0)
        if ok.sum() < 10:
            raise Skip("needs at least 10 steps with a finite pre-clip and applied norm")
        kept = kept[ok]
        median = float(np.median(kept))
        share = float(np.mean(kept < 10 * self.max_kept))
        if median > self.max_kept or share < self.min_share:
            return []
        ev = {"median_kept": median, "decades_removed": float(-np.log10(median)) if median > 0 else None,
              "share_clipped": share, "median_grad_norm": float(np.median(pre.values[ok])),
              "clip_norm": clip, "source": source}
        return [self.finding(
            f"clipping keeps {median:.2g} of the gradient on the median step ({share:.0%} of steps keep under "
            f"{10 * self.max_kept:g}; pre-clip norm {ev['median_grad_norm']:.3g}"
            + (f", clip norm {clip:g}" if clip is not None else "") + ")",
            step=int(pre.steps[ok][0]), evidence=ev)]
