"""The ``gradients_accumulate`` detector: gradients summed over steps by mistake (a missing ``zero_grad``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, TypeGuard

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, Skip, register
from runlens.diagnosis import Finding
from runlens.stats.progress import LinearGrowth, linear_growth, progress_test

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Signals


@register
class GradientsAccumulate(Detector):
    """The gradient norm grows in proportion to the steps since the last reset while the loss does not improve.

    What it detects:
        The signature of gradients that are never cleared (``zero_grad``
        missing, or called once per epoch instead of once per step): each
        ``backward`` adds the new gradient to the old ones, so the norm the
        optimizer sees grows with the number of steps since the gradients
        were last cleared (linearly while the per-step gradients agree, as
        the square root when they are independent), and the optimizer
        steps along a stale sum, so the loss stops improving or blows up.

    Why it matters:
        The run trains on a running sum of every gradient since the start:
        with SGD it diverges within a few hundred steps, with Adam it crawls
        or stalls; the usual fixes for those symptoms (lower learning rate,
        clipping) hide the bug instead of fixing it.

    How it decides:
        When the recorder watched ``.grad`` itself (scalars
        ``grad_not_cleared``, at least 3 checked steps), its reading decides:
        it fires when at least half the checked steps (and 3) found the
        backward adding onto the previous step's gradient and the gradient
        norm over the first 20 such steps grew at least twofold (median of
        the later half over the first two: a sum of n independent gradients
        is sqrt(n) times one; ``p.grad.data.zero_()``, which the recorder
        cannot see, keeps a steady norm); otherwise it stays silent, the
        fit below being a guess at what the recorder saw. Without the
        column: on the global gradient norm (scalars ``grad_norm``, else the norm
        over the layers table; over the updated layers only when the layers
        table shows some that never move: a parameter left out of the
        optimizer keeps its gradient through ``zero_grad``, harmlessly) up to
        the first non-finite loss, and the
        loss up to the point where it left ten times its start (past it the
        norm grows with the explosion, not the sum). A reset is a fall of
        the norm to a third of the value before it or less (a sawtooth with
        one tooth per clearing); the norm is regressed on the steps since
        the last reset (OLS). It fires when the fit explains the norm
        (``R^2 >= min_r2``, and no lower than the R^2 of log norm on those
        steps: a steady factor per step is an explosion's feedback, which
        ``exploding_gradients`` reads), the slope is positive (one-sided p <
        ``alpha``), the norm grew over the stretch by ``min_growth`` or
        more (3: the sum of 10 independent gradients is already sqrt(10)
        times one), and the loss made no progress (no downward
        Mann-Kendall trend at ``alpha``, or a fall below ``min_drop`` of
        its start, or not ``min_effect`` noise sd). A sum of gradients acts
        as momentum without decay and can train for a while, so with a loss
        that improved it fires only when the growth is the sum's own law:
        log norm on log steps since the reset with a slope between 0.4 and
        1.5 (1/2 for independent gradients, 1 for agreeing ones; a norm
        that does not grow with the steps has ~0), ``R^2 >= min_power_r2``,
        and an observed growth (last fifth over the first 3 norms) of
        ``min_summed_growth``. When the whole stretch fails the linear
        fit, its onset is read: the longest prefix of 2, 4, 8... times
        ``min_points`` norms from the run's first step, without a reset,
        that passes both the linear fit and the sum's law above (an
        adaptive optimizer moves the weights along the stale sum and the
        norm levels off after its first tens of steps; ``onset_only`` in the
        evidence). ``n_points`` in the evidence
        says how many norms it was decided on. Severity error.

    What to try:
        Call ``optimizer.zero_grad()`` (or ``model.zero_grad()``) once per
        optimizer step, before ``loss.backward()``; with deliberate
        gradient accumulation, clear after every ``optimizer.step()`` and
        divide the loss by the number of accumulated micro-batches.

    Parameters:
        alpha: significance level of the slope and the loss trend (0.01).
        min_r2: share of the norm's variance the linear growth must explain
        (0.8). min_growth: growth of the fitted norm over the stretch (3.0).
        min_drop: relative fall of the loss below which it made no progress
        (0.1). min_effect: fall of the loss, in noise sd, below which it
        made no progress (3.0). min_points: gradient norms needed (8).
        min_power_r2: R^2 of the log-log fit when the loss improved (0.9).
        min_summed_growth: observed growth of the norm when the loss improved
        (10.0: an order of magnitude).
    """

    code = "gradients_accumulate"
    severity = "error"
    title = "Gradients accumulate across steps"
    needs = Needs(scalars=("loss", "grad_norm", "step_skipped", "grad_not_cleared"), layers=("grad_norm",), requires=("scalars.loss",))
    constraints: ClassVar[dict[str, Interval]] = {
        "alpha": Interval(float, 0, 1, closed="neither"), "min_r2": Interval(float, 0, 1),
        "min_growth": Interval(float, 1, None), "min_drop": Interval(float, 0, 1),
        "min_effect": Interval(float, 0, None), "min_points": Interval(int, 5, None),
        "min_power_r2": Interval(float, 0, 1), "min_summed_growth": Interval(float, 1, None)}

    def __init__(self, *, alpha: float = 0.01, min_r2: float = 0.8, min_growth: float = 3.0,
                 min_drop: float = 0.1, min_effect: float = 3.0, min_points: int = 8,
                 min_power_r2: float = 0.9, min_summed_growth: float = 10.0) -> None:
        self.min_power_r2 = min_power_r2
        self.min_summed_growth = min_summed_growth
        self.alpha = alpha
        self.min_r2 = min_r2
        self.min_growth = min_growth
        self.min_drop = min_drop
        self.min_effect = min_effect
        self.min_points = min_points

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        g = sig.grad_norm
        if g is None:
            raise Skip("no gradient norm logged (scalars.grad_norm or layers.grad_norm)")
        seen = recorder_saw(run, sig)
        if seen is not None:  # the recorder watched .grad itself: its reading replaces the fit's guess
            return [self._recorded(seen)] if seen["fires"] else []
        steps, x = sig.loss.steps, sig.loss.values
        if x.size < self.min_points:
            raise Skip(f"only {x.size} finite training losses (< {self.min_points})")
        start = float(np.median(x[:3]))
        out = np.flatnonzero(np.abs(x) > 10 * abs(start)) if start != 0 else np.empty(0, int)
        end = int(steps[out[0]]) if out.size else int(steps[-1]) + 1
        if sig.first_nonfinite_step is not None:
            end = min(end, sig.first_nonfinite_step)
        gsteps, gvalues, source = _updated_layers_norm(sig) or (g.steps, g.values, g.source)
        keep = (gsteps < end) & np.isfinite(gvalues)
        gs, gv = gsteps[keep], gvalues[keep]
        if gv.size < self.min_points:
            raise Skip(f"only {gv.size} finite gradient norms before the loss left its scale (< {self.min_points})")
        fit, onset = linear_growth(gs, gv), False
        if not self._grows(fit):
            fit, onset = self._onset(gs, gv, int(steps[0])), True
            if fit is None:
                return []
            gs, gv = gs[:fit.n], gv[:fit.n]
        lx = x[steps < end] if (steps < end).sum() >= 5 else x
        prog = progress_test(lx)
        # A loss that improves does not clear it: the sum acts as momentum without decay and trains
        # for a while. Then the growth itself must be the sum's: a power law of the steps since
        # the reset from the first step on, at least an order of magnitude.
        summed = self._summed(fit)
        if prog.made_progress(self.alpha, self.min_effect, self.min_drop) and not summed:
            return []
        resets = f" since the last of {fit.resets} resets" if fit.resets else " since the first step"
        loss = (f"the loss does not improve ({prog.relative_drop:.0%} fall)" if not summed else
                f"it grows as steps^{fit.power:.2f}, a sum's law (the loss fell {prog.relative_drop:.0%})")
        return [self.finding(
            f"The gradient norm grows linearly with the steps{resets} (R^2={fit.r2:.2f}, "
            f"{fit.growth if math.isfinite(fit.growth) else fit.observed_growth:.3g}x over "
            f"{gv.size} points) and {loss}: gradients are summed across steps, zero_grad is missing",
            step=int(gs[0]),
            evidence={**fit.to_dict(), "n_points": int(gv.size), "grad_norm_source": source,
                      "loss_progress": prog.to_dict(), "last_step_tested": int(gs[-1]), "onset_only": onset})]

    def _recorded(self, seen: dict) -> Finding:
        return self.finding(
            f"On {seen['not_cleared']} of {seen['checked']} steps the recorder saw the backward add onto the "
            f"previous step's gradient (.grad never cleared, first at step {seen['first_step']}), and the "
            f"gradient norm grew {seen['growth']:.3g}x over those steps: zero_grad is missing",
            step=seen["first_step"], evidence={k: v for k, v in seen.items() if k != "fires"})

    def _grows(self, fit: LinearGrowth | None) -> TypeGuard[LinearGrowth]:
        # A norm multiplied by a steady factor per step (log-linear fits better than the line) is an
        # explosion's feedback, not a sum: n summed gradients are at most n times the largest.
        return fit is not None and fit.r2 >= self.min_r2 and fit.p_positive < self.alpha \
            and fit.growth >= self.min_growth and not fit.exp_r2 > fit.r2

    def _summed(self, fit: LinearGrowth) -> bool:
        return (0.4 <= fit.power <= 1.5 and fit.power_r2 >= self.min_power_r2
                and fit.observed_growth >= self.min_summed_growth)

    def _onset(self, gs: np.ndarray, gv: np.ndarray, first_step: int) -> LinearGrowth | None:
        """The longest prefix (2, 4, 8... times ``min_points`` norms) that grows by the sum's law, or None.

        A sum of gradients grows by its law only while the model is near where the sum began:
        with an adaptive optimizer the weights then move along the stale sum and the norm levels
        off, so a run-long fit misses it. The prefix must start at the run's first step and
        carry no reset (a cleared gradient is not a sum from the start)."""
        if gs.size == 0 or gs[0] > first_step + max(1, int(np.diff(gs[:2]).min()) if gs.size > 1 else 1):
            return None
        found, m = None, 2 * self.min_points
        while m <= gv.size:
            fit = linear_growth(gs[:m], gv[:m])
            if fit is not None and fit.resets == 0 and self._grows(fit) and self._summed(fit):
                found = fit
            m *= 2
        return found


#: Least share of checked steps the recorder saw not cleared, and least growth of the gradient
#: norm over them: a sum of n independent gradients is sqrt(n) times one, so twice the start
#: within 20 steps; a loop that clears with ``p.grad.data.zero_()`` (which the recorder cannot
#: see) keeps a steady norm.
RECORDED_SHARE, RECORDED_GROWTH, RECORDED_WINDOW = 0.5, 2.0, 20


def recorder_saw(run: Run, sig: Signals) -> dict | None:
    """The recorder's ``grad_not_cleared`` reading (None without the column or with under 3 checks)."""
    flag = run.column("scalars", "grad_not_cleared")
    if flag is None:
        return None
    steps = run.steps("scalars")
    ok = np.isfinite(flag)
    if ok.sum() < 3:
        return None
    kept = ok & (flag == 1)
    out: dict = {"source": "scalars.grad_not_cleared", "checked": int(ok.sum()), "not_cleared": int(kept.sum()),
                 "first_step": int(steps[kept][0]) if kept.any() else None, "growth": None, "fires": False}
    g = sig.grad_norm
    if kept.sum() < max(3, RECORDED_SHARE * ok.sum()) or g is None:
        return out
    end = sig.first_nonfinite_step if sig.first_nonfinite_step is not None else int(g.steps[-1]) + 1
    w = g.values[(g.steps >= out["first_step"] - 1) & (g.steps < end) & np.isfinite(g.values)][:RECORDED_WINDOW]
    if w.size < 4 or np.median(w[:2]) <= 0:
        return out
    out["growth"] = float(np.median(w[w.size // 2:]) / np.median(w[:2]))
    out["growth_points"] = int(w.size)
    out["fires"] = out["growth"] >= RECORDED_GROWTH
    return out


def _updated_layers_norm(sig: Signals) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The gradient norm over the layers the optimizer updates, when some are never updated.

    ``zero_grad`` clears only the optimizer's parameters: the gradient of a layer
    left out of it (or frozen after its gradient was computed) piles up harmlessly
    while the others are cleared. Such a layer (no recorded update, weights that
    never change) is the business of ``dead_layers``, not a missing ``zero_grad``.
    None when every layer moves or the layers table cannot tell.
    """
    layers = sig.layers
    if not layers or layers.grad_norm is None:
        return None
    if layers.update_norm is not None:
        moved = np.nanmax(np.where(np.isfinite(layers.update_norm), layers.update_norm, 0.0), axis=0) > 0
    elif layers.weight_norm is not None:
        w = np.where(np.isfinite(layers.weight_norm), layers.weight_norm, np.nan)
        moved = np.nan_to_num(np.nanmax(w, axis=0) - np.nanmin(w, axis=0)) > 0
    else:
        return None
    if moved.all() or not moved.any():
        return None
    g = np.where(np.isfinite(layers.grad_norm), layers.grad_norm, np.nan)[:, moved]
    rows = np.isfinite(g).any(axis=1)
    total = np.sqrt(np.nansum(g[rows] ** 2, axis=1))
    return layers.steps[rows], total, f"layers.grad_norm over the {int(moved.sum())} updated layers"
