"""grad_norm_spike: one gradient norm far above its running median, then back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import median_abs_deviation

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.stats.robust import rolling_median

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run

MAX_LISTED = 10  # spikes the evidence lists one by one
MAX_WINDOW = 101  # a level 50 points either side is robust; a wider median only costs time


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
        ``exploding_gradients``', a steep fall at the start is no spike). The evidence gives the ratio, robust z,
        the spike's steps and how many points the log has.

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
        steps, logn = gn.steps[ok], np.log10(gn.values[ok])
        if len(logn) < 4:
            raise Skip(f"needs at least 4 finite gradient norms (has {len(logn)})")
        spikes, level, scale = self._spikes(logn)
        if not spikes:
            return []
        peak = max(spikes, key=lambda ab: logn[ab[0]:ab[1]].max() - level[ab[0]:ab[1]].max())
        i = peak[0] + int(np.argmax(logn[peak[0]:peak[1]]))
        ratio = float(10 ** (logn[i] - level[i]))
        listed = [{"step": int(steps[a + int(np.argmax(logn[a:b]))]),
                   "ratio": float(10 ** (logn[a:b].max() - level[a + int(np.argmax(logn[a:b]))]))}
                  for a, b in spikes[:MAX_LISTED]]
        few = f" in a log of only {len(logn)} points" if len(logn) < 50 else ""
        return [self.finding(
            f"gradient norm spiked to {ratio:.3g}x its running median at step {int(steps[i]):,} and came back"
            f"{few} ({len(spikes)} spike(s) >= {self.min_ratio:g}x)",
            step=int(steps[i]),
            evidence={"ratio": ratio, "robust_z": float((logn[i] - level[i]) / scale),
                      "spike_value": float(10 ** logn[i]), "running_median": float(10 ** level[i]),
                      "spikes": len(spikes), "listed": listed, "points": len(logn),
                      "source": gn.source, "step_range": [int(steps[0]), int(steps[-1])]})]

    def _spikes(self, logn: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray, float]:
        n = len(logn)
        window = int(np.clip(n // 50, 5, MAX_WINDOW)) | 1
        level = rolling_median(logn, window)
        resid = logn - level
        # Floor the scale at float32 resolution: a constant norm has no noise to measure against.
        scale = max(float(median_abs_deviation(resid, scale="normal")), 1e-6)
        hot = (resid >= np.log10(self.min_ratio)) & (resid >= self.min_z * scale)
        out = []
        for a, b in _runs(hot):
            if a < 2 or b >= n or b - a > self.max_width:
                continue
            # Isolated: the points either side sit within a decade of the level (a steep early
            # fall, or a rise that stays, has neighbours far from it too).
            if logn[b] - level[b] >= 1.0 or logn[a - 1] - level[a - 1] >= 1.0:
                continue
            out.append((a, b))
        return out, level, scale


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    d = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist(), strict=True))
