"""exploding_gradients: gradient norms grow by orders of magnitude or blow up."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._layerstats import fmt_p
from runlens.stats.growth import bucket_medians, geometric, growth, level_change, rolling_median
from runlens.stats.progress import progress_test
from runlens.stats.robust import mad_sd

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run
    from runlens.signals import Signals


#: Robust sd of the norms before it that a held surge must clear, as ``grad_norm_spike``'s ``min_z``.
SURGE_Z = 6.0


@register
class ExplodingGradients(Detector):
    """Gradient norms grow by orders of magnitude, or grow and then blow up.

    What it detects:
        A global gradient norm that climbs decades above its own early
        level and keeps climbing, or that rises well above its usual level
        in the steps right before it (or the loss) turns Inf/NaN.

    Why it matters:
        When the per-layer Jacobians (or the step size against the loss
        curvature) are above one, each step makes the next gradient larger;
        the updates then throw the weights far from where they were, and the
        run ends in Inf/NaN or in a loss that never recovers.

    How it decides:
        The series is the ``grad_norm`` scalar (steps that a loss scaler
        skipped are left out, their Inf is normal mixed-precision behaviour),
        or the root sum of squares of the per-layer gradient norms when the
        scalar was not logged. Everything is in log10, so only growth
        relative to the run's own history counts: a model whose gradient is
        large but steady does not fire. It fires in two cases.
        Growth: the median of the last 10% of the finite series is at least
        ``min_decades`` above the median of the first 10%, and Kendall's test
        on (at most 500 bucket medians of) the series finds an increasing
        trend at ``alpha`` with a Theil-Sen 95% interval above zero; the
        gradient of the parameters that are actually updated must have grown
        as much (a layer left out of the optimizer can grow a gradient that
        is never applied): updated means a non-zero ``update_norm`` or,
        without it, a weight norm that changed since the previous record.
        Jump: a rolling median of the series (at most 2,000 bucket medians,
        window 2% of them and at least 5, so three elevated steps in a row)
        reaches ``min_jump_decades`` above the first recorded gradient norm;
        this catches a run whose first updates threw the weights out (the
        rise happens before any early window exists), while a brief spike
        cannot move a rolling median; the updated parameters' gradient must
        have jumped as much, as for growth.
        Surge: the run ends while the gradient norm explodes, within a few
        steps and without (yet) a NaN: the last finite norm is at least
        ``min_surge_decades`` above the median of the history before the
        final ``tail`` points, and the one before it already
        ``min_blowup_decades`` above (two points in a row: one lone spike is
        ``grad_norm_spike``'s), or, when only the very last point is, the
        loss at that same last step is ``min_blowup_decades`` above its median
        before (the explosion reached the loss and the log ends on it: no
        later step can show it recovered). A log of fewer than ``tail + 3``
        norms (a few pasted lines) has no history before a tail: its last norm
        is measured against the median of the ones before, and only the
        second reading (the loss jumping on that same last line) counts.
        Held surge: the last 2 to ``tail`` norms (a third of the log at most) each at least
        ``min_blowup_decades`` above the median of the 4 or more before them and 6 robust sd (the
        normal-scaled MAD of those) above it, the norm just before them within ``min_blowup_decades`` of that
        median: a run that ends inside a new surge its own noise cannot make.
        Steady: (8 norms or more) log10 of the norm climbs on the steps in a
        straight line (OLS slope > 0, one-sided p < ``alpha``, R^2 >=
        ``min_steady_r2`` and above the R^2 of the norm itself on the steps:
        multiplied by a factor each step, the feedback of an explosion,
        where a sum of gradients grows in a straight line) by at least
        ``min_blowup_decades``, while the loss made no progress (no fall of
        10% that is a significant Kendall trend at ``alpha`` and 3 noise sd).
        Blow-up: the gradient norm or the loss becomes non-finite, and the
        last finite gradient norm before that is at least
        ``min_blowup_decades`` above the median of the history before the
        final ``tail`` steps, or (when the run blew up too soon to have a
        history) it was at least ``max_grad_to_weight`` times the total
        weight norm, or the measured update of that last step (``update_norm``)
        was as large as the weights themselves: steps no optimizer survives. A NaN that arrives while
        the gradients were at their usual size is a numerical fault, not an
        explosion, and is left to ``nonfinite_loss`` / ``nonfinite_gradient``.

    What to try:
        Clip the gradient norm (``torch.nn.utils.clip_grad_norm_``, max_norm
        around 1); lower the learning rate or add warm-up; use the
        initialization made for the activation and add normalization layers;
        for recurrent networks, clip and shorten the backpropagation window.

    Parameters:
        min_decades: smallest sustained growth, in decades, from the early level (2.0).
        alpha: significance level of the Kendall trend test (0.01).
        min_blowup_decades: smallest rise above the usual level before a blow-up (1.0).
        tail: how many final finite points may hold the rise before a blow-up (5).
        max_grad_to_weight: gradient/weight norm ratio before a blow-up that counts as exploded
            even without a visible rise, e.g. on the first step (100.0: one SGD step at lr 0.01
            would move the weights by their own size).
        min_jump_decades: smallest jump of the held level above the first recorded gradient (3.0).
        min_surge_decades: smallest rise of the final gradient norm above its usual level when
            the run ends without a NaN (3.0).
        min_steady_r2: R^2 of log10 norm on the steps that a steady growth needs (0.9).
    """

    code = "exploding_gradients"
    severity = "error"
    title = "Exploding gradients"
    needs = Needs(scalars=("grad_norm", "step_skipped", "loss", "loss_scale"),
                  layers=("grad_norm", "weight_norm", "update_norm"))
    constraints = {"min_decades": Interval(float, 0, None, closed="neither"),
                   "alpha": Interval(float, 0, 1, closed="neither"),
                   "min_blowup_decades": Interval(float, 0, None), "tail": Interval(int, 1, None),
                   "max_grad_to_weight": Interval(float, 0, None, closed="neither"),
                   "min_jump_decades": Interval(float, 0, None, closed="neither"),
                   "min_surge_decades": Interval(float, "min_blowup_decades", None),
                   "min_steady_r2": Interval(float, 0, 1)}

    def __init__(self, *, min_decades: float = 2.0, alpha: float = 0.01, min_blowup_decades: float = 1.0,
                 tail: int = 5, max_grad_to_weight: float = 100.0, min_jump_decades: float = 3.0,
                 min_surge_decades: float = 3.0, min_steady_r2: float = 0.9) -> None:
        self.min_steady_r2 = min_steady_r2
        self.min_decades = min_decades
        self.alpha = alpha
        self.min_blowup_decades = min_blowup_decades
        self.tail = tail
        self.max_grad_to_weight = max_grad_to_weight
        self.min_jump_decades = min_jump_decades
        self.min_surge_decades = min_surge_decades

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        gn = sig.grad_norm
        if gn is None:
            raise Skip("no gradient norm logged (scalars.grad_norm or layers.grad_norm)")
        steps, norms = gn.steps, gn.values
        blowup = _first_nonfinite(steps, norms, sig.first_nonfinite_step)
        usable = np.isfinite(norms) & (norms > 0) & (steps < (np.inf if blowup is None else blowup))
        steps, logn = steps[usable], np.log10(norms[usable])
        if len(logn) == 0 or (len(logn) < 2 and blowup is None):
            raise Skip(f"needs at least 2 finite, positive gradient norms (has {len(logn)})")
        evidence = {"source": gn.source.split(" ")[0], "steps": len(logn),
                    "step_range": [int(steps[0]), int(steps[-1])]}
        for test in (self._blowup, self._surge, self._held_surge, self._growth, self._steady, self._jump):
            found = test(sig, steps, logn, blowup, evidence)
            if found is not None:
                return [found]
        return []

    def _blowup(self, sig: Signals, steps: np.ndarray, logn: np.ndarray, blowup: int | None,
                   evidence: dict[str, Any]) -> Finding | None:
        if blowup is None:
            return None
        base = logn[:-self.tail] if len(logn) > self.tail else logn[:1]
        rise = float(logn[-1] - np.median(base))
        evidence |= {"blowup_step": int(blowup), "rise_decades": rise,
                     "usual_log10": float(np.median(base)), "last_log10": float(logn[-1])}
        if rise >= self.min_blowup_decades:
            return self.finding(
                f"gradient norm rose {rise:.1f} decades above its usual level (>= "
                f"{self.min_blowup_decades:g}) and then blew up at step {blowup}", step=blowup, evidence=evidence)
        ratio = _grad_to_weight(sig, steps[-1], 10 ** logn[-1])
        if ratio is not None and ratio >= self.max_grad_to_weight:
            evidence["grad_to_weight"] = ratio
            return self.finding(
                f"gradient norm was {ratio:.2g}x the weight norm (>= {self.max_grad_to_weight:g}) just "
                f"before it blew up at step {blowup}", step=blowup, evidence=evidence)
        moved = _update_to_weight(sig, steps[-1])
        if moved is not None and moved >= 1.0:
            evidence["update_to_weight"] = moved
            return self.finding(
                f"the last step before the blow-up at step {blowup} moved the weights by {moved:.3g}x their own "
                f"norm (>= 1): the gradient threw them out", step=blowup, evidence=evidence)
        return None

    def _surge(self, sig: Signals, steps: np.ndarray, logn: np.ndarray, blowup: int | None,
                  evidence: dict[str, Any]) -> Finding | None:
        """The run ends inside an explosion: the last two finite norms far above the usual level."""
        if blowup is not None or len(logn) < 2:
            return None
        if len(logn) < self.tail + 3:
            # A paste of a few lines has no history before a tail: the last line against the lines
            # before it, and only with the loss jumping on that same line (mmengine's grad_norm
            # 3.46 -> 3.1e7 with the loss 1.50 -> 63.1): the one corroborates the other.
            base = float(np.median(logn[:-1]))
            if logn[-1] - base < self.min_surge_decades or not self._loss_blew_up_last(sig, int(steps[-1]), 2):
                return None
            rise, start = float(logn[-1] - base), len(logn) - 1
        else:
            base = float(np.median(logn[:-self.tail][-200:]))
            rise, before = float(logn[-1] - base), float(logn[-2] - base)
            if rise < self.min_surge_decades or (before < self.min_blowup_decades
                                                 and not self._loss_blew_up_last(sig, int(steps[-1]))):
                return None
            start = len(logn) - self.tail + int(np.argmax(logn[-self.tail:] - base >= self.min_blowup_decades))
        evidence |= {"surge_decades": rise, "usual_log10": base, "last_log10": float(logn[-1]),
                     "surge_from_step": int(steps[start]), "points_in_surge": len(logn) - start}
        return self.finding(
            f"gradient norm rose {rise:.1f} decades above its usual level (>= {self.min_surge_decades:g}) in the "
            + (f"last {len(logn) - start} recorded steps" if len(logn) - start > 1 else "last recorded step")
            + ", where the run ends", step=int(steps[start]),
            evidence=evidence)

    def _held_surge(self, sig: Signals, steps: np.ndarray, logn: np.ndarray, blowup: int | None,
                    evidence: dict[str, Any]) -> Finding | None:
        """The run ends inside a surge its own noise cannot make: each of its last 2 to ``tail`` norms (a
        third of the log at most) ``min_blowup_decades`` above the median of the 4 or more before them and
        ``SURGE_Z`` robust sd of those above it, the one just before them at the usual level: new at the end
        (fairseq's grad_norm 0.788 six times, then 11.5, 13.5)."""
        if blowup is not None:
            return None
        for k in range(min(self.tail, len(logn) // 3), 1, -1):
            before, last = logn[:-k], logn[-k:]
            base, sd = float(np.median(before)), float(mad_sd(before))
            rise = last - base
            # New at the end: the norm just before it is at its usual level (a level held since earlier in
            # the run is the jump's or the growth's to judge, as after a spike that threw the weights out).
            if (before.size >= 4 and before[-1] - base < self.min_blowup_decades
                    and bool(np.all(rise >= self.min_blowup_decades)) and bool(np.all(rise >= SURGE_Z * sd))):
                evidence |= {"surge_decades": float(np.min(rise)), "usual_log10": base, "usual_sd_log10": sd,
                             "last_log10": float(logn[-1]), "surge_from_step": int(steps[-k]), "points_in_surge": k,
                             "surge_z": SURGE_Z, "kind": "held_surge"}
                return self.finding(
                    f"gradient norm stood {float(np.min(rise)):.1f} decades or more above its usual level (>= "
                    f"{self.min_blowup_decades:g}, and {SURGE_Z:g} robust sd of its own noise) at each of the last {k} "
                    "recorded steps, where the run ends", step=int(steps[-k]), evidence=evidence)
        return None

    def _loss_blew_up_last(self, sig: Signals, step: int, least: int | None = None) -> bool:
        """The log ends at ``step`` with the loss there ``min_blowup_decades`` above its
        median before: a lone last point, but the explosion reached the loss and the run
        ended on it (no later step shows a spike that recovered). ``least``: the losses
        needed (``tail + 3``)."""
        steps, x = sig.loss.steps, sig.loss.values
        if x.size < (least or self.tail + 3) or int(steps[-1]) != step or not (x[-1] > 0 and np.all(x[:-1] > 0)):
            return False
        return bool(np.log10(x[-1]) - np.median(np.log10(x[:-1][-200:])) >= self.min_blowup_decades)

    def _growth(self, sig: Signals, steps: np.ndarray, logn: np.ndarray, blowup: int | None,
                   evidence: dict[str, Any]) -> Finding | None:
        trend = growth(steps, logn)
        decades = level_change(logn, 0.1)
        if trend is None or decades < self.min_decades or trend.p > self.alpha or trend.slope_low <= 0 \
                or _applied_growth(sig, steps[-1])[0] < self.min_decades:
            return None
        evidence |= {"growth_decades": decades, "theil_sen_decades_per_step": trend.slope,
                     "slope_ci95": [trend.slope_low, trend.slope_high], "kendall_tau": trend.tau,
                     "kendall_p": trend.p, "points_tested": trend.n}
        first = steps[np.flatnonzero(logn >= np.median(logn[: max(1, len(logn) // 10)]) + 1)[0]]
        return self.finding(
            f"gradient norm grew {decades:.1f} decades over the run (>= {self.min_decades:g}; Theil-Sen "
            f"{trend.slope * 1000:.2g} decades/1k steps, Kendall tau={trend.tau:.2f}, p={fmt_p(trend.p)})",
            step=int(first), evidence=evidence)

    def _steady(self, sig: Signals, steps: np.ndarray, logn: np.ndarray, blowup: int | None,
                evidence: dict[str, Any]) -> Finding | None:
        """A norm multiplied by a steady factor at each step while the loss does not improve: the
        feedback of an explosion under way, before it reaches ``min_decades`` (a paste of ten lines
        of HF's grad_norm 3.8e12 -> 1.4e14, x1.5 per line, at a loss of 11.3)."""
        if len(logn) < 8:
            return None
        g = geometric(steps, logn)
        if g is None or not (g["p"] < self.alpha and g["decades"] >= self.min_blowup_decades
                             and g["r2"] >= self.min_steady_r2 and g["r2"] > g["r2_linear"]):
            return None
        x = sig.loss.values[sig.loss.steps <= steps[-1]]
        prog = progress_test(x[np.isfinite(x)])
        if prog.made_progress(self.alpha, 3.0, 0.1) or _applied_growth(sig, steps[-1])[0] < self.min_blowup_decades:
            return None
        evidence |= {"geometric": g, "loss_progress": prog.to_dict()}
        return self.finding(
            f"gradient norm grew by a steady factor, x{10 ** g['slope']:.3g} per step ({g['decades']:.1f} decades "
            f"over {g['n']} points; log-linear R^2={g['r2']:.2f} against {g['r2_linear']:.2f} for a straight line, "
            f"p={fmt_p(g['p'])}) while the loss did not improve ({prog.relative_drop:.0%} fall)",
            step=int(steps[0]), evidence=evidence)

    def _jump(self, sig: Signals, steps: np.ndarray, logn: np.ndarray, blowup: int | None,
                 evidence: dict[str, Any]) -> Finding | None:
        # A jump right after the first updates leaves no early window to
        # compare with: the first recorded gradient is the yardstick, and
        # the level is a rolling median so that a lone spike cannot count.
        if len(logn) < 3:
            return None
        xs, level = held_level(steps, logn)
        peak = int(np.nanargmax(level)) if np.isfinite(level).any() else 0
        jump = float(level[peak] - logn[0])
        if jump < self.min_jump_decades or _applied_growth(sig, steps[-1])[1] < self.min_jump_decades:
            return None
        at = int(xs[peak])
        evidence |= {"jump_decades": jump, "first_log10": float(logn[0]), "peak_log10": float(level[peak]),
                     "peak_step": at}
        return self.finding(
            f"gradient norm jumped {jump:.1f} decades above its first value (>= {self.min_jump_decades:g}) "
            f"and held there (rolling median, peak at step {at})", step=at, evidence=evidence)


def held_level(steps: np.ndarray, logn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most 2,000 bucket medians and their rolling median (window 2% of them, at least 5)."""
    xs, ys = bucket_medians(steps, logn, 2000)
    return xs, rolling_median(ys, max(5, len(ys) // 50))


def _applied_growth(sig: Signals, last_step: int) -> tuple[float, float]:
    """Growth and jump, in decades, of the gradient of the parameters that are updated.

    A layer left out of the optimizer can see its gradient grow without
    bound while training is fine (the layers after it grow and nothing ever
    applies its gradient); such growth is a dead layer, not an explosion.
    Without ``update_norm`` a parameter counts as updated where its weight
    norm changed since the previous record (an unchanged float32 norm at
    most records means it was not updated). ``inf`` (no objection) when
    neither was recorded, and for the jump when every parameter is updated
    (the whole series was measured already). The growth is
    ``level_change`` of the updated parameters' total norm, the jump the
    peak of its rolling median above its first value, as for the whole.
    """
    none = (float("inf"), float("inf"))
    lay = sig.layers
    if not lay or lay.grad_norm is None:
        return none
    rows = lay.steps <= last_step
    if lay.update_norm is not None:
        moved = lay.update_norm[rows]
    elif lay.weight_norm is not None and len(lay.steps) >= 2:
        moved = np.abs(np.diff(lay.weight_norm[rows], axis=0, prepend=np.nan))
    else:
        return none
    with np.errstate(invalid="ignore"):
        applied = np.nanmean(np.where(np.isnan(moved), np.nan, moved > 0), axis=0) >= 0.5
    if not applied.any() or rows.sum() < 3:
        return none
    g = lay.grad_norm[rows][:, applied]
    total = np.sqrt(np.nansum(g * g, axis=1))
    with np.errstate(divide="ignore"):
        logt = np.log10(total)
    ok = np.isfinite(logt)
    change = level_change(np.where(ok, logt, np.nan), 0.1)
    if ok.sum() < 3 or applied.all():  # the whole is the updated part: its jump was measured already
        return (float("inf") if np.isnan(change) else change), float("inf")
    _, level = held_level(lay.steps[rows][ok], logt[ok])
    jump = float(np.nanmax(level) - logt[ok][0]) if np.isfinite(level).any() else float("inf")
    return (float("inf") if np.isnan(change) else change), jump


def _grad_to_weight(sig: Signals, last_step: int, grad: float) -> float | None:
    """Gradient norm over the total weight norm recorded at or before ``last_step``."""
    lay = sig.layers
    if not lay or lay.weight_norm is None:
        return None
    weights = lay.total("weight_norm")
    if weights is None:
        return None
    total = weights[lay.steps <= last_step]
    total = total[np.isfinite(total) & (total > 0)]
    return float(grad / np.median(total)) if len(total) else None


def _update_to_weight(sig: Signals, last_step: int) -> float | None:
    """Measured total update over total weight norm at the last record at or before ``last_step``."""
    lay = sig.layers
    if not lay or lay.update_norm is None or lay.weight_norm is None:
        return None
    rows = np.flatnonzero(lay.steps <= last_step)
    if not len(rows):
        return None
    updates, weights = lay.total("update_norm"), lay.total("weight_norm")
    if updates is None or weights is None:
        return None
    u, w = updates[rows[-1]], weights[rows[-1]]
    return float(u / w) if np.isfinite(u) and np.isfinite(w) and w > 0 else None


def _first_nonfinite(steps: np.ndarray, norms: np.ndarray, loss_step: int | None) -> int | None:
    # NaN cannot be told from a null (no gradient) here, so only Inf and a
    # non-finite loss (one step after a NaN gradient) mark the blow-up.
    candidates = [int(steps[np.flatnonzero(np.isinf(norms))[0]])] if np.isinf(norms).any() else []
    if loss_step is not None:
        candidates.append(int(loss_step))
    return min(candidates) if candidates else None
