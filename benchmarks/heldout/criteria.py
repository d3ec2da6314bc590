"""What the probe's measurements must show for a run to carry its fault's label.

Fixed before any run was scored, and never derived from a runlens detector:
the numbers below are wide margins around what each fault does by
construction, chosen so a confirmed label is not a judgement call. All
statistics come from :class:`benchmarks.heldout.probe.Probe` (torch, during
training). ``head`` is the mean loss of the first 5% of steps (at least 3),
``tail`` of the last 10%.

- healthy: finite; the loss falls by >= 20% (tail <= 0.8 head); validation
  ends within 10% of its minimum; the gradient norm stays under 1000x its
  early median (the exploding criterion's bound); no parameter left frozen; the late step-to-step noise is
  < 2x the mid-run noise.
- overfitting: validation reaches its minimum before 75% of the evaluations,
  ends >= 25% above it, with a rising trend after the minimum (least-squares
  slope t >= 3), while the training loss ends <= 0.7x its level at the
  validation minimum.
- underfitting: finite, and the loss falls by < 10%.
- chance: the tail sits within 3% of ln K (K classes, or the batch size for
  InfoNCE), in training and in validation.
- lr_too_high: finite; the same run at its optimizer's ordinary learning
  rate (its twin, trained beside it; ``generate.ORDINARY_LR``) ends with a validation loss <= 0.8x this run's;
  the second half's validation losses scatter around their own linear trend
  by >= 5% of their mean (the validation set is fixed, so the scatter is the
  weights jumping, not batch noise). The update-to-weight ratio is reported,
  not used: it is what a detector would read.
- diverged: the loss becomes non-finite, or reaches >= 1000x its head.
- vanishing: the first weight matrix's gradient norm is <= 1e-3 of the last
  one's (median over steps), never exactly zero, and the loss falls < 10%.
- exploding: the largest finite gradient norm is >= 1000x the median of the
  first 10 steps.
- dead_layer: some weight matrix receives gradients but never moves (every
  update exactly zero) while the others move, and the loss still falls >= 20%.
- lr_too_low: the loss moves < 5%, while the twin at the optimizer's
  ordinary learning rate falls >= 20%.
- plateau: before the schedule's change the loss moves < 5%; the tail ends
  <= 0.7x the plateau's level.
- late_variance: the median |step-to-step change| of the last 20% is >= 3x
  that of the middle half.
- spikes: >= 2 steps above 2x the median of the previous 20 steps and
  > 10 robust sd (MAD) above it, each back under 1.5x within 10 steps.
- crash: the training step raised at the injected step (the generator's own
  record of the exception class; the message is not decoded).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

Result = tuple[bool, dict]
M = Mapping[str, np.ndarray]


def _ok(cond: bool, **detail) -> Result:
    return bool(cond), {k: (float(f"{v:.6g}") if isinstance(v, float) and math.isfinite(v) else v)
                        for k, v in detail.items()}


# -- measurements -------------------------------------------------------------------------------


def head_tail(loss: np.ndarray) -> tuple[float, float]:
    x = loss[np.isfinite(loss)]
    if x.size == 0:
        return math.nan, math.nan
    n_head, n_tail = max(3, x.size // 20), max(1, x.size // 10)
    return float(np.mean(x[:n_head])), float(np.mean(x[-n_tail:]))


def relative_fall(loss: np.ndarray) -> float:
    head, tail = head_tail(loss)
    return 1.0 - tail / head if head and math.isfinite(head) else math.nan


def first_nonfinite(loss: np.ndarray) -> int | None:
    bad = np.flatnonzero(~np.isfinite(loss))
    return int(bad[0]) if bad.size else None


def growth(grad: np.ndarray) -> float:
    """Largest finite gradient norm over the median of the first 10 steps."""
    g = grad[np.isfinite(grad)]
    if g.size < 2:
        return math.nan
    early = float(np.median(grad[:10][np.isfinite(grad[:10])])) if np.isfinite(grad[:10]).any() else math.nan
    return float(g.max()) / early if early > 0 else math.inf


def depth_ratio(first: np.ndarray, last: np.ndarray) -> float:
    """Median over steps of the first matrix's gradient norm over the last's."""
    ok = np.isfinite(first) & np.isfinite(last) & (last > 0)
    return float(np.median(first[ok] / last[ok])) if ok.any() else math.nan


def frozen(names: np.ndarray, max_update: np.ndarray, max_grad: np.ndarray, is_matrix: np.ndarray) -> list[str]:
    """Weight matrices that received a gradient but never moved."""
    return [str(n) for n, u, g, m in zip(names, max_update, max_grad, is_matrix, strict=True)
            if m and u == 0 and g > 0]


def noise_ratio(loss: np.ndarray) -> float:
    """Median |step change| of the last 20% over that of the middle half."""
    d = np.abs(np.diff(loss[np.isfinite(loss)]))
    n = d.size
    if n < 40:
        return math.nan
    middle, late = d[n // 4: 3 * n // 4 - n // 20], d[n - n // 5:]
    return float(np.median(late) / max(float(np.median(middle)), 1e-30))


def detrended_cv(v: np.ndarray) -> float:
    """Scatter of ``v`` around its own least-squares line, relative to its mean."""
    if v.size < 4:
        return math.nan
    x = np.arange(v.size, dtype=float)
    resid = v - np.polyval(np.polyfit(x, v, 1), x)
    return float(np.std(resid) / abs(np.mean(v)))


def slope_t(v: np.ndarray) -> float:
    """t statistic of the least-squares slope of ``v`` against its index."""
    if v.size < 4:
        return math.nan
    x = np.arange(v.size, dtype=float)
    coef = np.polyfit(x, v, 1)
    resid = v - np.polyval(coef, x)
    se = math.sqrt(float(np.sum(resid**2)) / (v.size - 2) / float(np.sum((x - x.mean()) ** 2)))
    return float(coef[0] / se) if se > 0 else math.inf


def spike_steps(loss: np.ndarray) -> tuple[list[int], int]:
    found, recovered = [], 0
    for i in range(20, loss.size):
        window = loss[i - 20:i]
        base = float(np.median(window))
        sd = 1.4826 * float(np.median(np.abs(window - base)))
        if loss[i] > 2 * base and loss[i] - base > 10 * sd:
            found.append(i)
            after = loss[i + 1:i + 11]
            recovered += int(after.size > 0 and float(np.min(after)) < 1.5 * base)
    return found, recovered


# -- criteria, one per fault ----------------------------------------------------------------------


def healthy(m: M, ctx: dict) -> Result:
    loss, v = m["loss"], m["val_loss"]
    fall = relative_fall(loss)
    val_end = float(v[-1] / v.min()) if v.size else math.nan
    grow = growth(m["grad_norm"])
    fz = frozen(m["param_names"], m["param_max_update"], m["param_max_grad"], m["param_is_matrix"])
    nr = noise_ratio(loss)
    return _ok(bool(np.isfinite(loss).all()) and fall >= 0.2 and val_end <= 1.10 and grow < 1e3 and not fz
               and not nr >= 2, relative_fall=fall, val_end_over_min=val_end, grad_growth=grow, frozen=fz,
               late_noise_ratio=nr)


def overfitting(m: M, ctx: dict) -> Result:
    v, vs, loss = m["val_loss"], m["val_step"], m["loss"]
    if v.size < 6:
        return _ok(False, evals=int(v.size))
    i = int(np.argmin(v))
    at_min = float(np.mean(loss[max(0, vs[i] - 20): vs[i] + 1]))
    _, tail = head_tail(loss)
    t = slope_t(v[i:]) if v.size - i >= 4 else math.nan
    return _ok(0 < i < 0.75 * v.size and v[-1] >= 1.25 * v[i] and t >= 3 and tail <= 0.7 * at_min,
               val_min_eval=i, evals=int(v.size), val_rise=float(v[-1] / v[i]), slope_t_after_min=t,
               train_at_val_min=at_min, train_tail=tail)


def underfitting(m: M, ctx: dict) -> Result:
    fall = relative_fall(m["loss"])
    return _ok(bool(np.isfinite(m["loss"]).all()) and fall < 0.10, relative_fall=fall)


def chance(m: M, ctx: dict) -> Result:
    k = ctx["chance_k"]
    _, tail = head_tail(m["loss"])
    v = m["val_loss"]
    val_tail = float(np.mean(v[-max(1, v.size // 5):])) if v.size else math.nan
    ln_k = math.log(k)
    return _ok(abs(tail - ln_k) <= 0.03 * ln_k and abs(val_tail - ln_k) <= 0.03 * ln_k, tail=tail,
               val_tail=val_tail, ln_k=ln_k)


def _val_end(v: np.ndarray) -> float:
    return float(np.mean(v[-3:])) if v.size else math.nan


def lr_too_high(m: M, ctx: dict) -> Result:
    r = m["update_ratio"][np.isfinite(m["update_ratio"])]
    v, twin = m["val_loss"], ctx.get("twin")
    cv = detrended_cv(v[v.size // 2:])
    mine, theirs = _val_end(v), _val_end(twin["val_loss"]) if twin else math.nan
    return _ok(bool(np.isfinite(m["loss"]).all()) and theirs <= 0.8 * mine and cv >= 0.05, val_end=mine,
               twin_val_end=theirs, late_val_detrended_cv=cv,
               median_update_ratio=float(np.median(r)) if r.size else math.nan)


def diverged(m: M, ctx: dict) -> Result:
    loss = m["loss"]
    head, _ = head_tail(loss)
    bad = first_nonfinite(loss)
    peak = float(np.max(loss[np.isfinite(loss)])) if np.isfinite(loss).any() else math.nan
    return _ok(bad is not None or peak >= 1e3 * head, first_nonfinite_step=bad, peak_over_head=peak / head)


def vanishing(m: M, ctx: dict) -> Result:
    ratio = depth_ratio(m["grad_first"], m["grad_last"])
    nonzero = bool(np.all(m["grad_first"][np.isfinite(m["grad_first"])] > 0))
    fall = relative_fall(m["loss"])
    return _ok(ratio <= 1e-3 and nonzero and fall < 0.10, first_over_last=ratio, first_never_zero=nonzero,
               relative_fall=fall)


def exploding(m: M, ctx: dict) -> Result:
    g = growth(m["grad_norm"])
    return _ok(g >= 1e3, grad_growth=g)


def dead_layer(m: M, ctx: dict) -> Result:
    fz = frozen(m["param_names"], m["param_max_update"], m["param_max_grad"], m["param_is_matrix"])
    moving = int(np.sum(m["param_is_matrix"] & (m["param_max_update"] > 0)))
    fall = relative_fall(m["loss"])
    return _ok(bool(fz) and moving > 0 and fall >= 0.2, frozen=fz, moving_matrices=moving, relative_fall=fall)


def lr_too_low(m: M, ctx: dict) -> Result:
    r = m["update_ratio"][np.isfinite(m["update_ratio"])]
    twin = ctx.get("twin")
    fall, twin_fall = relative_fall(m["loss"]), relative_fall(twin["loss"]) if twin else math.nan
    return _ok(abs(fall) < 0.05 and twin_fall >= 0.2, relative_fall=fall, twin_fall=twin_fall,
               median_update_ratio=float(np.median(r)) if r.size else math.nan)


def plateau(m: M, ctx: dict) -> Result:
    loss = m["loss"]
    change = int(ctx["change_step"])
    before = loss[:change]
    q = max(3, before.size // 10)
    start, level = float(np.mean(before[:q])), float(np.mean(before[-q:]))
    _, tail = head_tail(loss)
    return _ok(abs(level - start) / start < 0.05 and tail <= 0.7 * level, start=start, plateau=level, tail=tail)


def late_variance(m: M, ctx: dict) -> Result:
    nr = noise_ratio(m["loss"])
    return _ok(bool(np.isfinite(m["loss"]).all()) and nr >= 3, late_noise_ratio=nr)


def spikes(m: M, ctx: dict) -> Result:
    found, recovered = spike_steps(m["loss"])
    return _ok(len(found) >= 2 and recovered == len(found), spike_steps=found[:20], recovered=recovered)


def crash(m: M, ctx: dict) -> Result:
    raised = ctx.get("raised") or {}
    return _ok(raised.get("step") == ctx.get("crash_at") and bool(raised.get("type")), **raised)


CRITERIA: dict[str, Callable[[M, dict], Result]] = {
    "healthy": healthy, "overfitting": overfitting, "underfitting": underfitting, "chance": chance,
    "lr_too_high": lr_too_high, "diverged": diverged, "vanishing": vanishing, "exploding": exploding,
    "dead_layer": dead_layer, "lr_too_low": lr_too_low, "plateau": plateau, "late_variance": late_variance,
    "spikes": spikes, "crash": crash,
}
