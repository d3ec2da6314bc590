"""The loss stays flat for a long stretch and later falls again."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, Skip, register
from runlens.diagnosis import Finding
from runlens.stats.robust import MAD_TO_SD, bucket_medians, rolling_median
from runlens.stats.trend import trend

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Series, Signals


@register
class Plateau(Detector):
    """The training loss was stuck on a flat stretch, then fell substantially.

    What it detects:
        A long stretch where the training loss does not move, followed later
        by a substantial fall: the run was stuck (a saddle point, a poor
        initialization, or a learning rate too low before a schedule change
        raised it) and wasted those steps. A converged tail that stays flat
        to the end is not a plateau, and neither is the normal drop of a
        step schedule when the learning rate is decayed.

    Why it matters:
        Every step on the plateau is compute spent learning nothing; a run
        stopped during one looks like underfitting. The cause is usually
        cheap to fix once seen.

    How it decides:
        The loss is reduced to bucket medians (at most 200, of 5 points or
        more) and lightly smoothed (rolling median of 5); ``R`` is the
        smoothed curve's range. A stretch is flat when it lasts at least
        ``min_length`` of the run, its smoothed level stays within a band of
        ``flat_band`` of ``R`` (or 4 local noise sd of the bucket medians,
        if larger), and its Theil-Sen line drifts, over the stretch, by less
        than ``flat_band`` of ``R`` at both ends of its 95% confidence
        interval: confidently flat, not merely too noisy to tell. It is a
        plateau when, within half as many steps as it lasted, the loss then
        falls at least ``min_fall`` of ``R`` (and 6 noise sd) below its
        level, i.e. 10 times faster than it drifted on the plateau, and the
        last 10% of the run stays at least half that fall below it. A short,
        noisy log cannot prove its Theil-Sen line lies inside that band; it
        is flat enough when the line's point estimate does and its interval
        lies within a quarter of the fall that followed. When the loss had
        already converged at this learning rate (it fell by ``min_fall`` of
        the range before the flat stretch) and the rate was cut by
        ``lr_cut`` or more between the plateau and the fall, the fall is a
        step schedule doing its job and nothing is reported; a loss flat
        from the start was stuck whatever change of the rate ended it. When
        the rate rose steadily during the flat stretch itself (a warmup: a
        significant upward trend, its last quarter ``1 / (1 - lr_cut)`` times
        its first or more), the loss was never stuck at one rate and nothing
        is reported; a rate held on the plateau and raised after it is.
        When a module that did not move from the flat stretch's start (its
        recorded update norm exactly 0 or absent on its first 3 layer
        records there, or more) began to move by the fall's step, the fall
        came with unfreezing it: a planned phase (a head trained before its
        backbone), and nothing is reported.
        Not judged on a ``diverged``, ``unstable`` or ``insufficient_data``
        curve. Severity warning: training was stuck, at a rate that could not
        learn when the logged rate at the fall is ``1 / (1 - lr_cut)`` times
        its median on the plateau or more. When the rate is logged and was
        not raised, the loss left the plateau on its own (a saddle, or the
        symmetry an attention or embedding layer starts in, broken at the
        same rate): severity info, the steps were spent but the run
        recovered without anyone's help; the evidence's ``lr_raised`` says
        which. So is a rate raised back to one the run had used before the
        flat stretch (at most ``1 / (1 - lr_cut)`` times the highest rate
        logged before it: a schedule's warm restart or cycle): the rate was
        not too low to learn (``lr_restored``). With no rate logged (a console
        log that prints only the loss) nothing says the rate could not learn:
        the run recovered, severity info.

    What to try:
        If the learning rate was small during the plateau (warmup too long,
        schedule starting too low), start higher or shorten the warmup. For a
        saddle or poor initialization: use a standard init (He/Xavier), add
        normalization, momentum, or a short learning-rate warmup to a larger
        peak.

    Parameters:
        min_length: shortest plateau, as a fraction of the run (0.1).
        flat_band: band the plateau stays in, relative to the curve's range
        (0.05). min_fall: fall after the plateau relative to the range
        (0.25). lr_cut: relative learning-rate decrease that explains the
        fall (0.2). min_points: finite losses needed (50).
    """

    code = "plateau"
    severity = "warning"
    severities = ("info", "warning")  # info when the loss escaped at the same learning rate
    title = "Loss plateau"
    needs = Needs(scalars=("loss", "lr", "step_skipped"), layers=("update_norm",), requires=("scalars.loss",))

    depends: ClassVar[tuple[str, ...]] = ("curve",)
    constraints: ClassVar[dict[str, Interval]] = {
        "min_length": Interval(float, 0, 1, closed="neither"), "flat_band": Interval(float, 0, 1, closed="neither"),
        "min_fall": Interval(float, 0, 1, closed="right"), "lr_cut": Interval(float, 0, 1, closed="neither"),
        "min_points": Interval(int, 20, None),
    }

    def __init__(self, *, min_length: float = 0.1, flat_band: float = 0.05, min_fall: float = 0.25,
                 lr_cut: float = 0.2, min_points: int = 50) -> None:
        self.min_length = min_length
        self.flat_band = flat_band
        self.min_fall = min_fall
        self.lr_cut = lr_cut
        self.min_points = min_points

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        label = ctx.curve.label if ctx.curve is not None else None
        if label in ("diverged", "unstable", "insufficient_data"):
            return []
        sig = ctx.signals_of(run)
        steps, x = sig.loss.steps, sig.loss.values
        if x.size < self.min_points:
            raise Skip(f"only {x.size} finite training losses (< {self.min_points})")
        found = self._find(steps, x)
        if found is None or self._schedule_cut(sig, x, found) or self._warmup(sig, found) or _unfrozen(sig, found):
            return []
        t = found["trend"]
        length = int(found["end_step"] - found["start_step"])
        raised = self._rate_raised(sig, found)
        restored = bool(raised) and self._rate_restored(sig, found)
        how = (" once the schedule brought the learning rate back to a rate it had used before the flat stretch "
               "(a restart: it escaped at a rate it already had)" if restored else
               {True: " once the learning rate was raised", False: " at the same learning rate (it escaped on its "
                "own)", None: ""}[raised])
        return [self.finding(
            f"loss flat for {length:,} steps from step {found['start_step']:,} at {found['level']:.4g} "
            f"(Theil-Sen slope {t.slope:.2g}/step, Kendall p={t.p:.2g}), then fell by "
            f"{found['fall']:.3g} ({found['fall_relative']:.0%} of its range){how}",
            step=found["start_step"], severity="warning" if raised and not restored else "info",
            evidence={"lr_raised": raised, "lr_restored": restored, "start_step": found["start_step"],
                      "end_step": found["end_step"], "length": length,
                      "level": found["level"], "fall": found["fall"], "fall_relative": found["fall_relative"],
                      "fall_step": found["fall_step"], "theil_sen_slope": t.slope, "kendall_tau": t.tau,
                      "kendall_p": t.p, "band": found["band"]},
            advice="If the learning rate was small during the plateau, start higher or shorten the warmup; "
                   "otherwise use a standard initialization, normalization or momentum to leave the saddle.")]

    def _find(self, steps: np.ndarray, x: np.ndarray) -> dict[str, Any] | None:
        # Buckets of 5 points at least: a median of one or two is just noise.
        pos, med = bucket_medians(x, int(np.clip(x.size // 5, 10, 200)))
        c = rolling_median(med, 5)
        k = c.size
        R = float(c.max() - c.min())
        if k < 10 or R <= 0:
            return None
        # 10 raw points at least: a shape, not a run of noise.
        min_len = max(3, int(np.ceil(self.min_length * k)), int(np.ceil(10 * k / x.size)))
        # Noise of the bucket medians, locally: it shrinks with the loss, and
        # a quiet tail must not make a noisy plateau look like it is moving.
        noise = rolling_median(np.abs(np.diff(med, prepend=med[0])), min_len) * MAD_TO_SD / np.sqrt(2.0)
        candidates = []
        for a in range(k - min_len):
            band = max(self.flat_band * R, 4 * float(noise[a + min_len // 2]))
            hi = np.maximum.accumulate(c[a:])
            lo = np.minimum.accumulate(c[a:])
            over = np.flatnonzero(hi - lo > band)
            b = a + (int(over[0]) if over.size else k - a)
            if b - a < min_len or b >= k:
                continue
            level = float(np.median(med[a:b]))
            need = max(self.min_fall * R, 6 * float(np.median(noise[a:b])))
            hit = np.flatnonzero(c[b:min(k, b + max(1, (b - a) // 2))] <= level - need)
            # The fall must hold: a series that dips and comes back (a random
            # walk, an oscillation) did not leave a plateau.
            if hit.size and float(np.median(c[-max(1, k // 10):])) <= level - 0.5 * need:
                candidates.append((b - a, a, b, level, b + int(hit[0]), band))
        ordered = sorted(candidates, key=lambda t: (-t[0], t[1]))
        # Strictly flat first (the Theil-Sen interval inside the band); only
        # when no stretch is, the looser test a short, noisy log can pass.
        for strict in (True, False):
            for _, a, b, level, f, band in ordered:
                ia, ib = int(pos[a]), int(pos[b - 1]) + 1
                t = trend(x[ia:ib], steps[ia:ib].astype(float))
                if not self._flat(t, steps[ib - 1] - steps[ia], R, level - float(c[b:].min()), strict):
                    continue
                fall = level - float(c[b:].min())
                return {"start_step": int(steps[ia]), "end_step": int(steps[ib - 1]),
                        "fall_step": int(steps[int(pos[f])]), "level": level, "fall": fall,
                        "fall_relative": fall / R, "band": band, "range": R, "trend": t}
        return None

    def _flat(self, t: Any, span: float, R: float, fall: float, strict: bool) -> bool:
        """The band allows for noise; the Theil-Sen line (robust to it) must be
        confidently flat too, or a slow start that keeps accelerating, or mere
        noise, passes: its 95% interval inside the band (``strict``), or, as a
        short noisy log cannot prove that much, its point estimate inside the
        band and its interval within a quarter of the fall that followed."""
        drift = max(abs(t.slope_low), abs(t.slope_high)) * span
        if strict:
            return drift <= self.flat_band * R
        return abs(t.slope) * span <= self.flat_band * R and drift <= 0.25 * fall

    def _warmup(self, sig: Signals, found: dict[str, Any]) -> bool:
        """Whether the flat stretch is a warmup's low-rate phase: the rate rose
        steadily *during* the stretch (Kendall trend up at p < 0.001, and its
        last quarter at least ``1 / (1 - lr_cut)`` times its first), so the
        loss was never stuck at one rate; it fell once the schedule brought
        the rate up, as the warmup intends. A rate held constant on the
        plateau and raised after it (a step) is still a plateau: the run sat
        at a rate that could not learn.
        """
        if sig.lr is None:
            return False
        during, at_steps, _ = _rates(sig.lr, found)
        if during.size < 8 or not np.all(np.isfinite(during)) or float(np.min(during)) <= 0:
            return False
        q = max(1, during.size // 4)
        if float(np.median(during[-q:])) < float(np.median(during[:q])) / (1 - self.lr_cut):
            return False
        return trend(during, at_steps.astype(float)).p_increasing < 1e-3

    def _rate_raised(self, sig: Signals, found: dict[str, Any]) -> bool | None:
        """Whether the logged rate at the fall was ``1 / (1 - lr_cut)`` times its
        median on the plateau or more (None: no rate logged around it)."""
        if sig.lr is None:
            return None
        during, _, at_fall = _rates(sig.lr, found)
        if during.size == 0 or at_fall.size == 0 or not np.isfinite(during).all():
            return None
        return bool(float(np.max(at_fall)) >= float(np.median(during)) / (1 - self.lr_cut))

    def _rate_restored(self, sig: Signals, found: dict[str, Any]) -> bool:
        """Whether the raised rate at the fall is one the run had already used before the flat stretch
        (at most ``1 / (1 - lr_cut)`` times the highest rate logged before it): a schedule that cycles
        (warm restarts, a cyclic rate) came back up, so the rate was not too low to learn, the loss was
        on a stretch it left at a rate it had had before."""
        if sig.lr is None:
            return False
        s, lr = sig.lr.steps, sig.lr.values
        before = lr[(s < found["start_step"]) & np.isfinite(lr)]
        _, _, at_fall = _rates(sig.lr, found)
        if before.size == 0 or at_fall.size == 0 or not np.isfinite(at_fall).all():
            return False
        return bool(float(np.max(at_fall)) <= float(np.max(before)) / (1 - self.lr_cut))

    def _schedule_cut(self, sig: Signals, x: np.ndarray, found: dict[str, Any]) -> bool:
        """Whether a step schedule explains the fall: the loss had converged at
        this learning rate (it fell by ``min_fall`` of the range before the
        flat stretch) and the rate was cut between the plateau and the fall.

        A loss flat from the start was stuck, whatever ended it: a cut then
        means the rate was too high to learn, a raise that it was too low.
        """
        if sig.lr is None:
            return False
        before = x[sig.loss.steps < found["start_step"]]
        if before.size == 0 or float(np.max(before)) - found["level"] < self.min_fall * found["range"]:
            return False
        during, _, at_fall = _rates(sig.lr, found)
        if during.size == 0 or at_fall.size == 0:
            return False
        return float(np.min(at_fall)) <= (1 - self.lr_cut) * float(np.median(during))


def _rates(rate: Series, found: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The logged learning rate on the plateau, the steps it was logged at, and the rate
    between the plateau's end and the fall."""
    s, lr = rate.steps, rate.values
    on = (s >= found["start_step"]) & (s <= found["end_step"])
    return lr[on], s[on], lr[(s > found["end_step"]) & (s <= found["fall_step"])]


def _unfrozen(sig: Signals, found: dict[str, Any]) -> bool:
    """Whether a module frozen from the plateau's start began to move by the fall: ``update_norm`` zero
    or absent on its first layer records from the flat stretch's start (3 at least, all in the
    stretch), then positive on one at or before the fall's step."""
    lay = sig.layers
    upd = lay.modules("update_norm") if lay else None
    if upd is None:
        return False
    keep = upd.steps >= found["start_step"]
    steps, moved = upd.steps[keep], np.nan_to_num(upd.values[keep], nan=0.0) > 0
    if steps.size < 4:
        return False
    first = np.where(moved.any(axis=0), np.argmax(moved, axis=0), steps.size)  # each module's first move
    began = (first >= 3) & (first < steps.size)
    at = steps[np.minimum(first, steps.size - 1)]
    return bool((began & (steps[np.minimum(2, steps.size - 1)] <= found["end_step"])
                 & (at <= found["fall_step"])).any())
