"""grad_norm_spike: one gradient norm far above its running median, then back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.stats.spikes import log10_spikes

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run

MAX_LISTED = 10  # spikes the evidence lists one by one


@register
class GradNormSpike(Detector):
    """Isolated gradient-norm spikes: a step whose gradient norm is orders of
    magnitude above its neighbours', after which the norm is back to normal.

    What it detects:
        Single steps (at most ``max_width`` recorded points in a row) whose
        global gradient norm is at least ``min_ratio`` times the running
        median around them, with the points after the spike back at the
        usual level. Works on logs of a dozen lines as well as on long runs.

    Why it matters:
        One huge gradient applied by the optimizer throws the weights far
        from where they were: the loss often jumps at the same step, Adam's
        second-moment estimate is inflated for thousands of steps, and a
        run that survives it has lost progress. It points at a bad batch
        (an outlier sample, a corrupt label), a numerically fragile
        operation, or a learning rate close to the edge of stability.

    How it decides:
        The series is the global gradient norm (``scalars.grad_norm``, else
        the L2 norm over the layers; steps a loss scaler skipped are left
        out), finite and positive, before any non-finite loss, in log10.
        Its running level is a centred rolling median (window 2% of the
        points, at least 5 and at most 101, odd), which a spike cannot move. A point is
        spiking when it is at least ``log10(min_ratio)`` decades above that
        level (the effect size, scale-free) and at least ``min_z`` robust
        standard deviations above it (the series' own noise: normal-scaled
        MAD of the residuals, so a naturally jumpy norm needs a larger
        jump). A spike has at least two points before it and one after it,
        lasts at most ``max_width`` points, and the points just before and
        after it are within one decade of the level (a rise that stays is
        ``exploding_gradients``', a steep fall at the start is no spike). The log's last point alone
        counts too, by the same tests (``at_end`` in the evidence): the log ends on it, so whether it
        came back is not known, but a jump of ``min_ratio`` over the level is seen either way (one that
        reached the loss there too is also ``exploding_gradients``').
        The evidence gives the ratio, robust z, the spike's steps and how many points the log has.

    What to try:
        Clip the gradient norm (``torch.nn.utils.clip_grad_norm_``) so one
        batch cannot move the weights far; look at the batch of the spiking
        step for outliers or corrupt labels; add warm-up or lower the
        learning rate if spikes recur; under mixed precision keep a
        GradScaler so overflowing steps are skipped.

    Parameters:
        min_ratio: smallest gradient norm over its running median that counts as a spike (100.0).
        min_z: smallest robust z-score of the spike's log10 residual (6.0).
        max_width: most consecutive points a spike may last (3).
    """

    code = "grad_norm_spike"
    severity = "warning"
    title = "Gradient norm spike"
    needs = Needs(scalars=("grad_norm", "step_skipped", "loss_scale", "loss"), layers=("grad_norm",))
    constraints = {"min_ratio": Interval(float, 1, None, closed="neither"), "min_z": Interval(float, 0, None),
                   "max_width": Interval(int, 1, None)}

    def __init__(self, *, min_ratio: float = 100.0, min_z: float = 6.0, max_width: int = 3) -> None:
        self.min_ratio = min_ratio
        self.min_z = min_z
        self.max_width = max_width

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        gn = sig.grad_norm
        if gn is None:
            raise Skip("no gradient norm logged (scalars.grad_norm or layers.grad_norm)")
        gn = gn.before(sig.first_nonfinite_step)
        ok = np.isfinite(gn.values) & (gn.values > 0)
        steps, norms = gn.steps[ok], gn.values[ok]
        if len(norms) < 4:
            raise Skip(f"needs at least 4 finite gradient norms (has {len(norms)})")
        # The last point is the log's end only when no blow-up cut the series there (one that did is
        # ``exploding_gradients``' or ``nonfinite_loss``'s).
        spikes = log10_spikes(norms, min_ratio=self.min_ratio, z_min=self.min_z, max_width=self.max_width,
                              at_end=sig.first_nonfinite_step is None)
        if not spikes:
            return []
        peak = max(spikes, key=lambda s: s["excess"])
        i = peak["index"]
        ratio = peak["ratio"]
        listed = [{"step": int(steps[s["index"]]), "ratio": s["ratio"]} for s in spikes[:MAX_LISTED]]
        few = f" in a log of only {len(norms)} points" if len(norms) < 50 else ""
        back = ("; it is the log's last line, so whether it came back is not logged" if peak["at_end"]
                else " and came back")
        return [self.finding(
            f"gradient norm spiked to {ratio:.3g}x its running median at step {int(steps[i]):,}{few}{back} "
            f"({len(spikes)} spike(s) >= {self.min_ratio:g}x)",
            step=int(steps[i]),
            evidence={"ratio": ratio, "robust_z": peak["z"], "at_end": peak["at_end"],
                      "spike_value": peak["value"], "running_median": peak["level"],
                      "spikes": len(spikes), "listed": listed, "points": len(norms),
                      "source": gn.source, "step_range": [int(steps[0]), int(steps[-1])]})]
