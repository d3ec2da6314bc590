"""The step-to-step variance of the loss does not shrink late in training."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, register
from runlens.detectors._require import finite_loss
from runlens.diagnosis import Finding
from runlens.stats.robust import bucket_edges, mad_sd
from runlens.stats.trend import trend
from runlens.stats.variance import levene_compare

if TYPE_CHECKING:
    from runlens.io.run import Run


@register
class LateLossVariance(Detector):
    """The loss keeps jumping from step to step late in training, as much as early on.

    What it detects:
        Step-to-step fluctuations of the training loss that do not shrink as
        training goes on: in the last stretch of the run the loss still
        jumps between consecutive steps as much as (or more than) it did
        early, although its level fell.

    Why it matters:
        In a healthy run the minibatch noise of the loss shrinks with the
        loss itself, and a decaying learning rate shrinks it further. Noise
        that stays large means the optimizer is still bouncing around the
        minimum instead of settling into it: the learning rate is too high
        for this stage (no decay), the batch too small, or the data order is
        broken. The final weights then depend on which step training stopped.

    How it decides:
        The loss is differenced (which removes its trend) and cut into 8
        windows. The reference is the mid-run window (the 2nd to the 6th)
        whose differences spread the most (robust sd): the noisiest stretch
        of mid-run, so that a quiet stretch (on a plateau) does not make
        everything after it look noisy, and the initial fall (large noise
        at a level the loss has left) does not hide late noise. The last
        quarter (windows 7-8) is compared with it by a median-centred
        Levene test. Minibatch noise of a loss shrinks at least like the
        square root of its level (a mean over a batch of losses that fall),
        so the reference variance is first scaled by ``late level / reference
        level`` (capped at 1). That scaling is a model, and a classifier
        that grows confident breaks it benignly: its per-sample losses grow
        heavier-tailed as their mean falls (most near 0, the misclassified
        ones large), so the batch mean's variance per unit of level rises;
        healthy runs with batches of 4 reach 2.6-3.1x. So it fires when the
        late variance exceeds that expectation by ``min_ratio`` (4: as if
        the batch had shrunk fourfold) or more, significantly (one-sided Levene
        p < ``alpha``), and the late noise is material: its sd is at least
        ``min_cv`` of the late loss level. A run still falling fast in its
        last quarter (a significant Kendall fall, one-sided p < 0.05, of more
        than ``max_late_fall`` of its total fall) whose late level is below
        every earlier window's median is not judged: its noise grows while
        the model separates easy samples from hard ones, and it has not
        reached "late" yet (a late fall from above a level reached before is
        a recovery from a jump, and is judged). Severity warning.

    What to try:
        Decay the learning rate (cosine, step or linear decay to ~0), or
        lower it; increase the batch size (or accumulate gradients); check
        that the data is shuffled every epoch.

    Parameters:
        min_ratio: late variance over its expected value that counts as not
        shrinking (4.0). alpha: significance level of the Levene test
        (0.001). min_cv: late noise sd relative to the late loss level
        (0.02). max_late_fall: how much of its total fall (start level minus
        late level) the loss may still make over the last quarter, along its
        Theil-Sen line, for the run to count as late (0.1). min_points:
        finite losses needed (100).
    """

    code = "late_loss_variance"
    severity = "warning"
    title = "Loss variance does not shrink late in training"
    needs = Needs(scalars=("loss", "step_skipped"), requires=("scalars.loss",))

    constraints: ClassVar[dict[str, Interval]] = {
        "min_ratio": Interval(float, 1, None), "alpha": Interval(float, 0, 1, closed="neither"),
        "min_cv": Interval(float, 0, None), "max_late_fall": Interval(float, 0, 1),
        "min_points": Interval(int, 50, None),
    }

    def __init__(self, *, min_ratio: float = 4.0, alpha: float = 0.001, min_cv: float = 0.02,
                 max_late_fall: float = 0.1, min_points: int = 100) -> None:
        self.min_ratio = min_ratio
        self.alpha = alpha
        self.min_cv = min_cv
        self.max_late_fall = max_late_fall
        self.min_points = min_points

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        steps, x = finite_loss(run, ctx, self.min_points)
        edges = bucket_edges(x.size, 8)
        windows = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]
        d = np.diff(x)
        # Not the first eighth: it holds the initial fall, whose noise is
        # large in absolute terms at a level the late loss left long ago.
        spread = [_sd(d[a:b - 1]) for a, b in windows[1:6]]
        r = 1 + int(np.argmax(spread))
        (ra, rb), (la, lb) = windows[r], (windows[6][0], windows[7][1])
        ref_level, late_level = float(np.median(x[ra:rb])), float(np.median(x[la:lb]))
        # A run still learning fast at its end has not reached "late": its
        # noise grows while the model separates easy samples from hard ones.
        t = trend(x[la:lb], steps[la:lb].astype(float))
        # Only a significant fall counts: with late noise this large a
        # Theil-Sen slope of pure noise can look like a fall.
        late_fall = abs(t.slope) * float(steps[lb - 1] - steps[la]) if t.p_decreasing < 0.05 else 0.0
        # A fall back from a jump is no learning: the late level must be below every earlier
        # window's for the fall to be the model still improving.
        learning = late_level <= min(float(np.median(x[a:b])) for a, b in windows[:6])
        if learning and not late_fall <= self.max_late_fall * abs(float(np.median(x[:5])) - late_level):
            return []
        shrink = 1.0
        if ref_level > 0 and late_level > 0:
            shrink = min(1.0, late_level / ref_level)
        ref = d[ra:rb - 1] * np.sqrt(shrink)
        late = d[la:lb - 1]
        cmp = levene_compare(ref, late)
        late_sd = _sd(late) / np.sqrt(2.0)  # a difference of two steps has twice the variance
        cv = late_sd / abs(late_level) if late_level != 0 else np.inf
        if not (cmp.ratio >= self.min_ratio and cmp.p_smaller > 1 - self.alpha and cv >= self.min_cv):
            return []
        p_larger = 1.0 - cmp.p_smaller
        return [self.finding(
            f"late step-to-step loss variance is {cmp.ratio:.1f}x what its level predicts "
            f"(>= {self.min_ratio:g}; Levene W={cmp.statistic:.1f}, p={p_larger:.1e}); "
            f"late noise sd {late_sd:.3g} = {cv:.0%} of the loss",
            step=int(steps[la]),
            evidence={"reference_steps": [int(steps[ra]), int(steps[rb - 1])],
                      "late_steps": [int(steps[la]), int(steps[lb - 1])],
                      "variance_ratio": cmp.ratio, "levene_statistic": cmp.statistic, "levene_p": p_larger,
                      "reference_level": ref_level, "late_level": late_level, "level_shrink": shrink,
                      "late_noise_sd": late_sd, "late_noise_relative": cv},
            advice="Decay the learning rate (cosine or step decay), or lower it; use a larger batch or "
                   "gradient accumulation; check that the data is reshuffled every epoch.")]


def _sd(x: np.ndarray) -> float:
    return mad_sd(x) if np.isfinite(x).any() else 0.0
