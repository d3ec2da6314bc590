"""Isolated upward spikes of the training loss that recover."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, register
from runlens.detectors._require import finite_loss
from runlens.diagnosis import Finding
from runlens.stats.spikes import short_spikes

if TYPE_CHECKING:
    from runlens.io.run import Run


@register
class LossSpikes(Detector):
    """The training loss jumps far above its running level for a few steps and comes back.

    What it detects:
        Short upward excursions of the per-step training loss: a few steps
        far above the loss's own rolling median, after which the loss returns
        to where it was. A jump that does not come back is a level shift
        (the ``unstable`` or ``diverged`` curve), not a spike.

    Why it matters:
        Each spike is an optimizer step that threw the model backwards: a
        bad or mislabeled batch, a learning rate too high for a sharp region,
        an attention-logit or loss-scale blow-up. They waste the progress of
        the steps that recover from them, and are often the warning before a
        divergence.

    How it decides:
        Robust z-scores of the loss (of its logarithm when it is positive:
        minibatch noise is multiplicative and right-skewed, nearly symmetric
        on the log scale) against its centred rolling median (window
        ``n/200`` steps, 11 to 201) and rolling MAD (4x that window), the
        MAD at least half the noise that second differences show (pseudo-residuals,
        which a local trend does not hide: where a log printed every 50
        steps falls further within a window than its noise, most residuals
        from a centred median are exactly 0 and their MAD says the series has
        no noise at all). A step
        is spiking when ``z >= z_min``; when z also stands out from the
        run's own upper tail, by its scale (``tail_factor`` times the 95th
        percentile of z: where the noise is heavy-tailed, e.g. a few hard
        examples in a small batch, big scores are routine) and by the run's
        length (beyond the largest z an exponential tail fitted to the top
        5% of z by its median excess predicts at level ``alpha``, peaks
        over threshold: a long run, or a loss near zero read on the log
        scale, has larger routine maxima); and when the
        jump is material: at least ``min_rise`` of the local level and
        ``min_progress`` of the progress made so far (start level minus
        local level), so that the spread of an almost converged loss is not
        called a spike. Consecutive spiking steps (gaps up to 2) form one
        spike of at most ``max_width`` steps; it counts when, within the
        next ``recovery`` steps, the loss's median is back below half of the
        jump. Fires when at least ``min_spikes`` spikes count. Severity
        warning: the run still trains; info when every spike is one batch's
        loss: one logged step, logged at the steps right before and after
        it, back below the jump's middle at the next step and under
        ``ONE_BATCH_RATIO`` (2x) its level (a step's loss is measured
        before its update, so a loss back at the next step says the weights
        were not thrown backwards: a hard or corrupt batch; ``one_batch``
        in the evidence).

        Short logs (``short_points`` to ``min_points`` finite losses, e.g. a
        dozen lines pasted into an issue) are judged point by point: each
        loss against the median of its (up to 4) neighbours on the log
        scale, the scale being the robust sd of those residuals (at least
        1% of a decade); a spike reaches ``z_min``, is ``short_ratio`` times
        its neighbours and a later point is back below the middle of the
        jump. Three points carry no noise scale: the middle one is a spike
        when it is at least 10x (and ``short_ratio`` times) both neighbours,
        which agree within ``short_ratio`` of each other. The evidence says
        ``short_log`` and how many points there were. In a log that starts
        at the start of training (step 0 or 1), a spike at one of its first
        ``FIRST_UPDATES`` (2) steps under ``FIRST_RATIO`` (10x) its level is
        info (``first_updates``), as the long test leaves out its first
        half-window: Adam's first updates move every weight by about the
        learning rate. Fewer than ``short_points``: skipped.

    What to try:
        Look at the batches at the spike steps (corrupt or mislabeled
        samples, empty sequences); lower the learning rate or lengthen the
        warmup; clip gradients (``clip_grad_norm_``); with mixed precision
        check the loss scaler; for transformers, QK-norm or a lower Adam
        beta2 / larger eps.

    Parameters:
        z_min: robust z-score a spike must reach (6.0). tail_factor: how far
        beyond the 95th percentile of z it must also be (3.6, which is 6 sd
        for Gaussian noise). alpha: the run-wide significance level of the
        tail's bound (0.01). min_rise: jump relative to the local loss level
        (0.25). min_progress: jump relative to the progress made so far
        (0.05). max_width: longest spike in steps (10). recovery: steps
        within which the loss must come back (20). min_spikes: spikes needed
        to fire (1). min_points: finite losses below which the short-log
        test is used (50). short_points: finite losses needed at all (3).
        short_ratio: how many times its neighbours a spike in a short log
        must be (3.0).
    """

    code = "loss_spikes"
    severity = "warning"
    title = "Loss spikes"
    needs = Needs(scalars=("loss", "step_skipped"), requires=("scalars.loss",))

    constraints: ClassVar[dict[str, Interval]] = {
        "z_min": Interval(float, 0, None, closed="neither"), "tail_factor": Interval(float, 0, None),
        "alpha": Interval(float, 0, 1, closed="neither"),
        "min_rise": Interval(float, 0, None), "min_progress": Interval(float, 0, None),
        "max_width": Interval(int, 1, None), "recovery": Interval(int, 1, None),
        "min_spikes": Interval(int, 1, None), "min_points": Interval(int, 20, None),
        "short_points": Interval(int, 3, "min_points"), "short_ratio": Interval(float, 1, None),
    }

    def __init__(self, *, z_min: float = 6.0, tail_factor: float = 3.6, alpha: float = 0.01, min_rise: float = 0.25,
                 min_progress: float = 0.05, max_width: int = 10, recovery: int = 20, min_spikes: int = 1,
                 min_points: int = 50, short_points: int = 3, short_ratio: float = 3.0) -> None:
        self.z_min = z_min
        self.tail_factor = tail_factor
        self.alpha = alpha
        self.min_rise = min_rise
        self.min_progress = min_progress
        self.max_width = max_width
        self.recovery = recovery
        self.min_spikes = min_spikes
        self.min_points = min_points
        self.short_points = short_points
        self.short_ratio = short_ratio

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        steps, x = finite_loss(run, ctx, self.short_points)
        short = x.size < self.min_points
        if short:
            spikes = short_spikes(x, z_min=self.z_min, min_ratio=self.short_ratio)
        else:
            spikes = ctx.signals_of(run).loss_spikes(
                z_min=self.z_min, tail_factor=self.tail_factor, alpha=self.alpha, min_rise=self.min_rise,
                min_progress=self.min_progress, max_width=self.max_width, recovery=self.recovery)
        if len(spikes) < self.min_spikes:
            return []
        top = sorted(spikes, key=lambda s: -s["z"])[:20]
        top.sort(key=lambda s: s["index"])
        first = spikes[0]
        evidence = {
            "count": len(spikes),
            "steps": [int(steps[int(s["index"])]) for s in top],
            "z_scores": [s["z"] for s in top],
            "values": [s["value"] for s in top],
            "local_levels": [s["level"] for s in top],
            "z_min": self.z_min,
        }
        if short:
            evidence.update(short_log=True, points=int(x.size), n_points=int(x.size), min_ratio=self.short_ratio)
        ratios = [s["value"] / s["level"] for s in spikes if s["level"] > 0]
        biggest = f"up to {max(ratios):.3g}x the running level, " if ratios else ""
        where = f" in a short log of {x.size} points" if short else ""
        title = (f"{len(spikes)} loss spike{'s' if len(spikes) > 1 else ''}{where} ({biggest}"
                 f"robust z up to {max(s['z'] for s in spikes):.1f} >= {self.z_min:g})")
        if first.get("three_points"):
            evidence["three_points"] = True
            title = (f"1 loss spike in a log of 3 points: {first['value']:.4g} between {x[0]:.4g} and {x[2]:.4g} "
                     f"({ratios[0]:.3g}x their level, >= 10x both; too few points for a noise scale)")
        severity = None
        early = [_first_updates(sp, steps) for sp in spikes]
        if all(_one_batch(sp, steps, x) or e for sp, e in zip(spikes, early, strict=True)):
            # The loss of a step is measured before its update: back at the next step, the weights
            # were not thrown backwards, one batch was hard (or corrupt) to score. The long test
            # leaves out its first half-window; a short one keeps the first updates, as info.
            severity = "info"
            evidence["one_batch"] = not any(early)
            evidence["first_updates"] = any(early)
            title += (f": at the first {FIRST_UPDATES} updates of training, under {FIRST_RATIO:g}x its level "
                      "(Adam's first steps move every weight by about the learning rate; a warmup smooths them)"
                      if any(early) else f": each one batch's loss under {ONE_BATCH_RATIO:g}x its level, back at "
                      "the next step (the weights unharmed)")
        return [self.finding(title, severity=severity, step=int(steps[int(first["index"])]), evidence=evidence)]


#: Optimizer steps from the start of training whose spikes under ``FIRST_RATIO`` are info.
FIRST_UPDATES = 2
#: An order of magnitude: the first updates overshoot, they do not multiply the loss tenfold.
FIRST_RATIO = 10.0


def _first_updates(spike: dict[str, float], steps: np.ndarray) -> bool:
    """A spike at one of the first ``FIRST_UPDATES`` steps of a log that starts with training
    (step 0 or 1), under ``FIRST_RATIO`` times its level."""
    i, level = int(spike["index"]), spike["level"]
    return bool(steps[0] <= 1 and steps[i] <= FIRST_UPDATES and 0 < level and spike["value"] < FIRST_RATIO * level)
#: Below this many times its level, a spike of one logged step that is back at the next is one batch's
#: loss (info); at or above it, a batch that bad is worth a look whatever the weights did.
ONE_BATCH_RATIO = 2.0


def _one_batch(spike: dict[str, float], steps: np.ndarray, x: np.ndarray) -> bool:
    """One step's loss, logged at consecutive steps around it, back below the jump's middle at the
    next step, and under ``ONE_BATCH_RATIO`` times its level."""
    i, level, value = int(spike["index"]), spike["level"], spike["value"]
    if spike.get("width", 1) != 1 or i == 0 or i + 1 >= x.size or not 0 < level < value < ONE_BATCH_RATIO * level:
        return False
    consecutive = steps[i] - steps[i - 1] == 1 and steps[i + 1] - steps[i] == 1
    return bool(consecutive and x[i + 1] <= level + 0.5 * (value - level))
