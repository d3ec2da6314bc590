"""exploding_gradients: gradient norms grow by orders of magnitude or blow up."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Needs, Skip, register
from runlens.detectors._layerstats import fmt_p
from runlens.stats.growth import bucket_medians, growth, level_change, rolling_median

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


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
        Blow-up: the gradient norm or the loss becomes non-finite, and the
        last finite gradient norm before that is at least
        ``min_blowup_decades`` above the median of the history before the
        final ``tail`` steps, or (when the run blew up too soon to have a
        history) it was at least ``max_grad_to_weight`` times the total
        weight norm, a step no optimizer survives. A NaN that arrives while
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
    """

    code = "exploding_gradients"
    severity = "error"
    title = "Exploding gradients"
    needs = Needs(scalars=("grad_norm", "step_skipped", "loss"), layers=("grad_norm", "weight_norm"))

    def __init__(self, *, min_decades: float = 2.0, alpha: float = 0.01, min_blowup_decades: float = 1.0,
                 tail: int = 5, max_grad_to_weight: float = 100.0, min_jump_decades: float = 3.0) -> None:
        self.min_decades = min_decades
        self.alpha = alpha
        self.min_blowup_decades = min_blowup_decades
        self.tail = tail
        self.max_grad_to_weight = max_grad_to_weight
        self.min_jump_decades = min_jump_decades

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        steps, norms, source = _global_grad_norm(run)
        blowup = _first_nonfinite(steps, norms, ctx.first_nonfinite_step)
        usable = np.isfinite(norms) & (norms > 0) & (steps < (np.inf if blowup is None else blowup))
        steps, logn = steps[usable], np.log10(norms[usable])
        if len(logn) == 0 or (len(logn) < 2 and blowup is None):
            return []
        evidence = {"source": source, "steps": len(logn), "step_range": [int(steps[0]), int(steps[-1])]}
        if blowup is not None:
            base = logn[:-self.tail] if len(logn) > self.tail else logn[:1]
            rise = float(logn[-1] - np.median(base))
            evidence |= {"blowup_step": int(blowup), "rise_decades": rise,
                         "usual_log10": float(np.median(base)), "last_log10": float(logn[-1])}
            if rise >= self.min_blowup_decades:
                return [self._finding(
                    f"gradient norm rose {rise:.1f} decades above its usual level (>= "
                    f"{self.min_blowup_decades:g}) and then blew up at step {blowup}", blowup, evidence)]
            ratio = _grad_to_weight(run, steps[-1], 10 ** logn[-1])
            if ratio is not None and ratio >= self.max_grad_to_weight:
                evidence["grad_to_weight"] = ratio
                return [self._finding(
                    f"gradient norm was {ratio:.2g}x the weight norm (>= {self.max_grad_to_weight:g}) just "
                    f"before it blew up at step {blowup}", blowup, evidence)]
        trend = growth(steps, logn)
        decades = level_change(logn, 0.1)
        if trend is not None and decades >= self.min_decades and trend.p <= self.alpha and trend.slope_low > 0 \
                and _applied_growth(run, steps[-1])[0] >= self.min_decades:
            evidence |= {"growth_decades": decades, "theil_sen_decades_per_step": trend.slope,
                         "slope_ci95": [trend.slope_low, trend.slope_high], "kendall_tau": trend.tau,
                         "kendall_p": trend.p, "points_tested": trend.n}
            first = steps[np.flatnonzero(logn >= np.median(logn[: max(1, len(logn) // 10)]) + 1)[0]]
            return [self._finding(
                f"gradient norm grew {decades:.1f} decades over the run (>= {self.min_decades:g}; Theil-Sen "
                f"{trend.slope * 1000:.2g} decades/1k steps, Kendall tau={trend.tau:.2f}, p={fmt_p(trend.p)})",
                int(first), evidence)]
        # A jump right after the first updates leaves no early window to
        # compare with: the first recorded gradient is the yardstick, and
        # the level is a rolling median so that a lone spike cannot count.
        xs, ys = bucket_medians(steps, logn, 2000)
        level = rolling_median(ys, max(5, len(ys) // 50))
        peak = int(np.nanargmax(level)) if np.isfinite(level).any() else 0
        jump = float(level[peak] - logn[0])
        if len(logn) >= 3 and jump >= self.min_jump_decades \
                and _applied_growth(run, steps[-1])[1] >= self.min_jump_decades:
            at = int(xs[peak])
            evidence |= {"jump_decades": jump, "first_log10": float(logn[0]), "peak_log10": float(level[peak]),
                         "peak_step": at}
            return [self._finding(
                f"gradient norm jumped {jump:.1f} decades above its first value (>= {self.min_jump_decades:g}) "
                f"and held there (rolling median, peak at step {at})", at, evidence)]
        return []

    def _finding(self, title: str, step: int, evidence: dict) -> Finding:
        return self.finding(
            title, step=step, evidence=evidence,
            advice="Clip the gradient norm (clip_grad_norm_, max_norm around 1); lower the learning rate or "
                   "add warm-up; use the initialization made for the activation and add normalization; for "
                   "recurrent networks, clip and shorten the backpropagation window.")


def _global_grad_norm(run: Run) -> tuple[np.ndarray, np.ndarray, str]:
    norms = run.column("scalars", "grad_norm")
    if norms is not None and (~np.isnan(norms)).any():
        steps = run.steps("scalars")
        skipped = run.column("scalars", "step_skipped")
        keep = np.ones(len(steps), dtype=bool) if skipped is None else ~(skipped == 1)
        order = np.argsort(steps[keep], kind="stable")
        return steps[keep][order], norms[keep][order], "scalars.grad_norm"
    lm = run.layer_matrix("grad_norm")
    if lm is None or lm.values.size == 0:
        raise Skip("no gradient norm logged (scalars.grad_norm or layers.grad_norm)")
    vals = np.where(lm.present, lm.values, np.nan)
    any_present = lm.present.any(axis=1)
    with np.errstate(all="ignore"):
        total = np.sqrt(np.nansum(vals.astype(np.float64) ** 2, axis=1))
        nonfinite = ~np.isfinite(vals).all(axis=1, where=lm.present)
    total = np.where(nonfinite, np.inf, total)
    total = np.where(any_present, total, np.nan)
    return lm.steps, total, "layers.grad_norm"


def _applied_growth(run: Run, last_step: int) -> tuple[float, float]:
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
    gm, um = run.layer_matrix("grad_norm"), run.layer_matrix("update_norm")
    if gm is None:
        return none
    if um is not None and um.values.shape == gm.values.shape:
        moved = um.values
    else:
        wm = run.layer_matrix("weight_norm")
        if wm is None or wm.values.shape != gm.values.shape or len(wm.steps) < 2:
            return none
        moved = np.abs(np.diff(wm.values, axis=0, prepend=np.nan))
    rows = gm.steps <= last_step
    with np.errstate(invalid="ignore"):
        applied = np.nanmean(np.where(np.isnan(moved[rows]), np.nan, moved[rows] > 0), axis=0) >= 0.5
    if not applied.any() or rows.sum() < 3:
        return none
    g = gm.values[rows][:, applied]
    total = np.sqrt(np.nansum(g * g, axis=1))
    with np.errstate(divide="ignore"):
        logt = np.log10(total)
    ok = np.isfinite(logt)
    change = level_change(np.where(ok, logt, np.nan), 0.1)
    if ok.sum() < 3 or applied.all():  # the whole is the updated part: its jump was measured already
        return (float("inf") if np.isnan(change) else change), float("inf")
    _, ys = bucket_medians(gm.steps[rows][ok], logt[ok], 2000)
    level = rolling_median(ys, max(5, len(ys) // 50))
    jump = float(np.nanmax(level) - logt[ok][0]) if np.isfinite(level).any() else float("inf")
    return (float("inf") if np.isnan(change) else change), jump


def _grad_to_weight(run: Run, last_step: int, grad: float) -> float | None:
    """Gradient norm over the total weight norm recorded at or before ``last_step``."""
    lm = run.layer_matrix("weight_norm")
    if lm is None or lm.values.size == 0:
        return None
    rows = lm.steps <= last_step
    if not rows.any():
        return None
    vals = np.where(lm.present[rows], lm.values[rows], 0.0)
    total = np.sqrt(np.nansum(vals ** 2, axis=1))
    total = total[np.isfinite(total) & (total > 0)]
    return float(grad / np.median(total)) if len(total) else None


def _first_nonfinite(steps: np.ndarray, norms: np.ndarray, loss_step: int | None) -> int | None:
    # NaN cannot be told from a null (no gradient) here, so only Inf and a
    # non-finite loss (one step after a NaN gradient) mark the blow-up.
    candidates = [int(steps[np.flatnonzero(np.isinf(norms))[0]])] if np.isinf(norms).any() else []
    if loss_step is not None:
        candidates.append(int(loss_step))
    return min(candidates) if candidates else None
