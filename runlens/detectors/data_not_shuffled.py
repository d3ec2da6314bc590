"""data_not_shuffled: the loss repeats with the epoch period (the batches come in the same order)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import steps_per_epoch

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


def _detrend(steps: np.ndarray, y: np.ndarray, period: int) -> tuple[np.ndarray, np.ndarray]:
    """(steps, y minus its centered moving mean over one period): a mean over exactly one period
    cancels the periodic part, so what is left is the pattern within the epoch plus batch noise."""
    grid = np.arange(steps[0], steps[-1] + 1)
    full = np.interp(grid, steps, y)
    c = np.r_[0.0, np.cumsum(full)]
    half = period // 2
    idx = np.arange(half, len(full) - (period - half))
    trend = (c[idx - half + period] - c[idx - half]) / period
    keep = np.isin(steps, grid[idx])
    pos = steps[keep] - steps[0]
    return steps[keep], y[keep] - trend[pos - half]


@register
class DataNotShuffled(Detector):
    """The loss repeats with the epoch: every epoch shows the batches in the same order (the data
    loader does not shuffle, and the data is sorted).

    What it detects:
        A training loss whose deviations from its trend depend on the
        position of the step within the epoch: the same batches are hard or
        easy in every epoch, in the same order. Class-sorted or
        source-sorted data without ``shuffle=True`` shows it strongly (the
        model chases one class after another, forgetting the last).

    Why it matters:
        Without shuffling, consecutive batches are correlated, the gradient
        is a biased estimate, and the model oscillates with the order of the
        data: it trains slower and ends worse, and the loss curve's noise is
        a pattern, not noise.

    How it decides:
        The steps per epoch come from the ``epoch`` column, else the config
        (``steps_per_epoch``...); at least ``min_epochs`` epochs are needed.
        The log loss (offset by a hundredth of its median: a sorted batch
        can be fitted to exactly 0) minus its trend is grouped by the step's
        position within the epoch; a Kruskal-Wallis test asks whether the
        positions differ, with its effect size (epsilon-squared: the share
        of the residual's rank variance the position explains). The trend is
        modelled twice, and the weaker result counts: as the centred moving
        mean over one epoch (a smooth fall; a loss that drops at each
        epoch's start leaves a sawtooth around it) and as each epoch's own
        mean (a staircase; a smooth fall leaves a ramp around it). The
        data's order shows under both. It fires when p is at most
        ``alpha`` and the effect size is at least ``min_effect``. The autocorrelation of the residual at one epoch's
        lag is in the evidence. A learning rate that itself repeats with the
        epoch (a cyclic or warm-restart schedule with a one-epoch period)
        explains such a pattern: then it does not fire. Severity warning.

    What to try:
        Shuffle the training data every epoch (DataLoader(shuffle=True), or a
        DistributedSampler with set_epoch(epoch) called each epoch); if the
        data is streamed, shuffle with a buffer larger than a class's run of
        samples.

    Parameters:
        alpha: significance level of the Kruskal-Wallis test (1e-3).
        min_effect: least epsilon-squared effect size (0.2, above the 0.14 read as a large effect).
        min_epochs: least complete epochs logged (3).
    """

    code = "data_not_shuffled"
    severity = "warning"
    title = "Loss repeats with the epoch (data not shuffled)"
    needs = Needs(scalars=("loss", "epoch", "lr"), requires=("scalars.loss",))
    constraints = {"alpha": Interval(float, 0, 1, closed="neither"),
                   "min_effect": Interval(float, 0, 1, closed="right"), "min_epochs": Interval(int, 2, None)}

    def __init__(self, *, alpha: float = 1e-3, min_effect: float = 0.2, min_epochs: int = 3) -> None:
        self.alpha = alpha
        self.min_effect = min_effect
        self.min_epochs = min_epochs

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        loss = sig.loss
        period, source = steps_per_epoch(run)
        if period is None:
            raise Skip("needs the steps per epoch (an epoch column or config steps_per_epoch)")
        # A log scale, so that a falling loss's pattern counts as much late as early; offset by a
        # hundredth of the median, since a batch of one sorted class can be fitted to a loss of exactly 0.
        ok = loss.values >= 0
        steps = loss.steps[ok]
        y = np.log(loss.values[ok] + 0.01 * max(float(np.median(loss.values[ok])), 1e-12)) if ok.any() else loss.values[ok]
        if len(steps) < 20 or (steps[-1] - steps[0]) < self.min_epochs * period:
            raise Skip(f"needs at least {self.min_epochs} logged epochs of {period} steps")
        effect, p, groups = self._position_effect(steps, y, period)
        if groups < 2:
            raise Skip("too few logged steps per position within the epoch")
        if p > self.alpha or effect < self.min_effect:
            return []
        # Only a loss that repeats with the epoch asks whether its schedule does too (and the lr's own
        # steps and period position make a grouping of their own, not the loss's).
        if sig.lr is not None and len(sig.lr) >= 20:
            lr_effect, lr_p, _ = self._position_effect(sig.lr.steps, np.log(np.maximum(sig.lr.values, 1e-300)),
                                                       period)
            if lr_p <= self.alpha and lr_effect >= self.min_effect:
                return []  # the schedule repeats with the epoch: it explains the loss's pattern
        rs, r = _detrend(steps, y, period)
        ac = _autocorr(rs, r, period)
        ev = {"steps_per_epoch": period, "steps_per_epoch_source": source, "kruskal_p": p,
              "position_effect": effect, "lag_epoch_autocorrelation": ac, "positions": groups}
        return [self.finding(
            f"the loss repeats with the epoch ({period} steps): the position within the epoch explains "
            f"{effect:.0%} of its detrended variation (Kruskal-Wallis p={p:.2g}"
            + (f", autocorrelation {ac:.2f} at one epoch's lag" if ac is not None else "") + ")",
            evidence=ev)]

    @staticmethod
    def _position_effect(steps: np.ndarray, y: np.ndarray, period: int) -> tuple[float, float, int]:
        """The position's effect under two models of the trend, the weaker of the two: a pattern
        of the data's order survives both, while each model's own misfit shows as a pattern in
        the other's residual. A smooth fall leaves a ramp within each epoch around the epoch's
        mean; a loss that drops at each epoch's start (the same samples again, a schedule stepped
        per epoch) leaves a sawtooth around the moving mean."""
        smooth = _kruskal(*_detrend(steps, y, period), steps[0], period)
        epoch = (steps - steps[0]) // period
        _, inverse, counts = np.unique(epoch, return_inverse=True, return_counts=True)
        means = np.bincount(inverse, weights=y) / counts
        # An epoch's mean needs most of its logged steps (a log may keep every k-th step).
        whole = counts[inverse] >= max(2.0, 0.5 * float(np.median(counts)))
        stair = _kruskal(steps[whole], (y - means[inverse])[whole], steps[0], period)
        return (min(smooth[0], stair[0]), max(smooth[1], stair[1]), min(smooth[2], stair[2]))


def _kruskal(rs: np.ndarray, r: np.ndarray, start: int, period: int) -> tuple[float, float, int]:
    """(epsilon-squared, p, groups) of a Kruskal-Wallis test of ``r`` grouped by position in the epoch."""
    pos = (rs - start) % period
    groups = [r[pos == k] for k in np.unique(pos)]
    groups = [g for g in groups if len(g) >= 2]
    if len(groups) < 2 or np.ptp(r) == 0:
        return 0.0, 1.0, len(groups)
    h, p = stats.kruskal(*groups)
    n = sum(len(g) for g in groups)
    return float(max(0.0, (h - len(groups) + 1) / (n - len(groups)))), float(p), len(groups)


def _autocorr(steps: np.ndarray, r: np.ndarray, lag: int) -> float | None:
    at = dict(zip(steps.tolist(), r.tolist(), strict=True))
    pairs = [(v, at[s + lag]) for s, v in at.items() if s + lag in at]
    if len(pairs) < 10:
        return None
    a, b = np.array(pairs).T
    return float(np.corrcoef(a, b)[0, 1])
