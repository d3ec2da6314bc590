"""The checks of a baseline comparison, and the findings they lead to.

Each check takes the two runs and the thresholds and returns plain numbers
(the dataclasses of ``runlens.compare``); ``findings_for`` turns those into
findings with codes ``baseline_regression_loss``,
``baseline_regression_val_loss``, ``baseline_slower_convergence``,
``baseline_new_nonfinite``, ``baseline_new_spikes`` and
``baseline_gradient_shift``. The methods are described in
``runlens.compare``'s docstring.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats as sps

from runlens.codes import advice, severity
from runlens.compare.model import (
    Comparison,
    Convergence,
    GradientShift,
    LevelTest,
    SpikeTest,
    Thresholds,
    binom_more,
    cliffs_delta,
    smooth,
    spike_steps,
)
from runlens.diagnosis import Finding
from runlens.io.run import LayerMatrix, Run

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def _series(run: Run, table: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, values)`` of a compared series as the run's signals define it, the reading
    ``analyze`` uses: the counted training loss (a null is not logged; a scaler-skipped step is
    left out), a validation series, the global gradient norm on the steps the optimizer took."""
    from runlens.signals import signals_of

    sig = signals_of(run)
    if table == "evals":
        series = sig.validation.get(column)
    elif column == "loss":
        series = sig.loss_logged
    elif column == "grad_norm":
        series = sig.grad_norm
    else:
        series = sig.scalar(column)
    if series is None:
        return np.empty(0, np.int64), np.empty(0)
    return series.steps, series.values


def check_levels(run: Run, base: Run, table: str, column: str, th: Thresholds) -> LevelTest | None:
    """Last-window comparison of ``column``: is the run's level above the baseline's?"""
    rs, rv = _series(run, table, column)
    bs, bv = _series(base, table, column)
    last = min(rs.max(initial=-1), bs.max(initial=-1))
    if last < 0:
        return None
    shared = np.intersect1d(rs[rs <= last], bs[bs <= last])
    # Evals are sparse and may fall on different steps: then each run's own last points.
    pool = shared if len(shared) >= 3 else None
    if pool is None:
        r_idx, b_idx = _tail(rs <= last, th), _tail(bs <= last, th)
    else:
        # Evals are few: a wider window, so that a clear shift can reach significance at all.
        n = (max(th.min_window, int(np.ceil(th.window * len(pool)))) if table == "scalars"
             else max(5, int(np.ceil(2.5 * th.window * len(pool)))))
        window = pool[-n:]
        r_idx, b_idx = np.isin(rs, window), np.isin(bs, window)
    a, b = rv[r_idx], bv[b_idx]
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 3 or len(b) < 3:
        return None
    used = np.concatenate([rs[r_idx], bs[b_idx]])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        mw = sps.mannwhitneyu(a, b, alternative="greater")
        # Exact Mann-Whitney from 5 points a side (p can reach 0.004); below that, Welch's t.
        if len(a) >= 5 and len(b) >= 5:
            test, p = "mann-whitney", float(mw.pvalue)
            p_less = float(sps.mannwhitneyu(a, b, alternative="less").pvalue)
        else:
            test, p = "welch", float(sps.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)
            p_less = float(sps.ttest_ind(a, b, equal_var=False, alternative="less").pvalue)
    p = 1.0 if not np.isfinite(p) else p
    p_less = 1.0 if not np.isfinite(p_less) else p_less
    delta = cliffs_delta(float(mw.statistic), len(a), len(b))
    ra, rb = float(np.median(a)), float(np.median(b))
    change = (ra - rb) / abs(rb) if rb != 0 else (np.inf if ra > rb else 0.0)
    improvement = _improvement(bv)
    big_enough = change >= th.min_change and (improvement is None
                                               or ra - rb >= th.min_range_change * improvement)
    worse = bool(p < th.alpha and delta >= th.min_effect and big_enough)
    better = bool(p_less < th.alpha and delta <= -th.min_effect and -change >= th.min_change)
    return LevelTest(metric=column, run_median=ra, baseline_median=rb, relative_change=float(change),
                     test=test, p_value=p, effect_size=float(delta), n_run=len(a), n_baseline=len(b),
                     first_step=int(used.min()), last_step=int(used.max()), worse=worse, better=better)


def _tail(mask: np.ndarray, th: Thresholds) -> np.ndarray:
    idx = np.flatnonzero(mask)
    keep = idx[-max(5, int(np.ceil(2.5 * th.window * len(idx)))):]
    out = np.zeros(len(mask), bool)
    out[keep] = True
    return out


def _improvement(values: np.ndarray) -> float | None:
    """How far the baseline's smoothed curve fell from its start to its best."""
    ok = np.isfinite(values)
    if ok.sum() < 10:
        return None
    s = smooth(values[ok])
    gain = float(s[0] - s.min())
    return gain if gain > 0 else None


def check_convergence(run: Run, base: Run, th: Thresholds, notes: list[str]) -> Convergence | None:
    """Steps each run needs to reach the loss where the baseline made ``fraction`` of its progress."""
    rs, rv = _series(run, "scalars", "loss")
    bs, bv = _series(base, "scalars", "loss")
    rok, bok = np.isfinite(rv), np.isfinite(bv)
    if rok.sum() < 10 or bok.sum() < 10:
        return None
    b_smooth, r_smooth = smooth(bv[bok]), smooth(rv[rok])
    start, best = float(b_smooth[0]), float(b_smooth.min())
    if not start > best:
        notes.append("the baseline's loss never fell: convergence speed not compared")
        return None
    target = start - th.fraction * (start - best)
    b_step = int(bs[bok][np.argmax(b_smooth <= target)])
    reached = r_smooth <= target
    r_step = int(rs[rok][np.argmax(reached)]) if reached.any() else None
    base_len = max(1, b_step - int(bs[0]))
    if r_step is None:
        ratio = None
        # Never reaching it counts only if the run went on long enough to be called slow.
        slower = bool(rs[rok].max() - rs[0] >= th.slow_ratio * base_len)
    else:
        ratio = (r_step - int(rs[0])) / base_len
        slower = ratio >= th.slow_ratio
    return Convergence(target_loss=target, fraction=th.fraction, baseline_step=b_step,
                       run_step=r_step, ratio=ratio, slower=slower)


def first_nonfinite(run: Run) -> tuple[int | None, int | None]:
    """``(loss step, gradient step)``: the first counted NaN/Inf training loss and the first
    NaN/Inf gradient norm on a step the optimizer took, read from the run's signals (the reading
    ``analyze`` uses: a null is not logged, not NaN; a scaler-skipped step is mixed precision
    working as designed)."""
    from runlens.signals import signals_of

    sig = signals_of(run)
    grad = sig.grad_norm
    bad = np.flatnonzero(~np.isfinite(grad.values)) if grad is not None else np.empty(0, dtype=np.int64)
    grad_step = int(grad.steps[bad[0]]) if grad is not None and len(bad) else None
    return sig.first_nonfinite_step, grad_step


def check_nonfinite(run: Run, base: Run) -> dict[str, int | None]:
    (r_loss, r_grad), (b_loss, b_grad) = first_nonfinite(run), first_nonfinite(base)
    return {"run_nonfinite_step": r_loss, "baseline_nonfinite_step": b_loss,
            "run_nonfinite_grad_step": r_grad, "baseline_nonfinite_grad_step": b_grad}


def check_spikes(run: Run, base: Run, th: Thresholds) -> SpikeTest | None:
    rs, rv = _series(run, "scalars", "loss")
    bs, bv = _series(base, "scalars", "loss")
    if len(rv) < 30 or len(bv) < 30:
        return None
    last = min(rs.max(), bs.max())
    r_steps = spike_steps(rs[rs <= last], rv[rs <= last], th.spike_z)
    b_steps = spike_steps(bs[bs <= last], bv[bs <= last], th.spike_z)
    p = binom_more(len(r_steps), len(b_steps), int((rs <= last).sum()), int((bs <= last).sum()))
    more = len(r_steps) >= th.min_spikes and p < th.alpha
    return SpikeTest(run_count=len(r_steps), baseline_count=len(b_steps), run_steps=tuple(r_steps),
                     p_value=p, more=bool(more))


def check_gradients(run: Run, base: Run, th: Thresholds) -> tuple[GradientShift, ...]:
    """Layers whose median gradient norm moved by ``gradient_orders`` decades or more."""
    last = min(run.steps("scalars").max(initial=0), base.steps("scalars").max(initial=0))
    rm, bm = run.layer_matrix("grad_norm"), base.layer_matrix("grad_norm")
    if rm is not None and bm is not None:
        pairs = [(name, _col(rm, name, last), _col(bm, name, last))
                 for name in rm.layers if name in bm.layers]
    else:
        pairs = [("(global)", _masked(*_series(run, "scalars", "grad_norm"), last),
                  _masked(*_series(base, "scalars", "grad_norm"), last))]
    shifts = []
    for name, a, b in pairs:
        a, b = a[np.isfinite(a) & (a > 0)], b[np.isfinite(b) & (b > 0)]
        if len(a) < 5 or len(b) < 5:
            continue
        ma, mb = float(np.median(a)), float(np.median(b))
        ratio = float(np.log10(ma / mb))
        if abs(ratio) >= th.gradient_orders:
            shifts.append(GradientShift(layer=name, run_median=ma, baseline_median=mb, log10_ratio=ratio))
    return tuple(sorted(shifts, key=lambda s: (-abs(s.log10_ratio), s.layer)))


def _col(matrix: LayerMatrix, name: str, last: int) -> np.ndarray:
    j = matrix.layers.index(name)
    return matrix.values[matrix.steps <= last, j]


def _masked(steps: np.ndarray, values: np.ndarray, last: int) -> np.ndarray:
    return values[steps <= last]


# -- findings ---------------------------------------------------------------

def findings_for(c: Comparison) -> list[Finding]:
    """The findings a comparison leads to (none when the run is as good as its baseline)."""
    th, out = c.thresholds, []
    for level in (c.loss, c.val_loss):
        if level is not None and level.worse:
            out.append(_level_finding(level, th))
    conv = c.convergence
    if conv is not None and conv.slower:
        got = (f"reaches it at step {conv.run_step:,} ({conv.ratio:.2f}x)" if conv.run_step is not None
               else "never reaches it")
        out.append(Finding(
            code="baseline_slower_convergence", severity=severity("baseline_slower_convergence"), step=conv.run_step,
            title=f"converges slower than the baseline: the baseline reaches loss {conv.target_loss:.4g} "
                  f"({conv.fraction:.0%} of its improvement) at step {conv.baseline_step:,}, this run {got}",
            evidence={**_fields(conv), "slow_ratio": th.slow_ratio},
            advice=advice("baseline_slower_convergence")))
    new = _new_nonfinite(c)
    if new is not None:
        out.append(new)
    sp = c.spikes
    if sp is not None and sp.more:
        out.append(Finding(
            code="baseline_new_spikes", severity=severity("baseline_new_spikes"), step=sp.run_steps[0],
            title=f"{sp.run_count} loss spikes against {sp.baseline_count} in the baseline "
                  f"(binomial test p={sp.p_value:.2g})",
            evidence={**_fields(sp), "run_steps": list(sp.run_steps[:20]), "spike_z": th.spike_z},
            advice=advice("baseline_new_spikes")))
    if c.gradient_shifts:
        top = c.gradient_shifts[0]
        # A run whose loss ends lower than its baseline's beyond noise has changed, not regressed.
        better = _improved(c)
        out.append(Finding(
            code="baseline_gradient_shift", severity="info" if better else severity("baseline_gradient_shift"),
            layers=tuple(g.layer for g in c.gradient_shifts),
            title=f"gradient norms moved by {th.gradient_orders:g}+ orders of magnitude in "
                  f"{len(c.gradient_shifts)} layer(s); largest: {top.layer} "
                  f"{top.run_median:.3g} vs {top.baseline_median:.3g} (10^{top.log10_ratio:+.1f})"
                  + ("; the run's loss is lower than the baseline's: a change, not a regression"
                     if better else ""),
            evidence={"log10_ratio": {g.layer: g.log10_ratio for g in c.gradient_shifts[:20]},
                      "gradient_orders": th.gradient_orders},
            advice=advice("baseline_gradient_shift")))
    return out


def _improved(c: Comparison) -> bool:
    levels = [lv for lv in (c.loss, c.val_loss) if lv is not None]
    return any(lv.better for lv in levels) and not any(lv.worse for lv in levels)


def _new_nonfinite(c: Comparison) -> Finding | None:
    """NaN/Inf in the run's loss or gradient norm where the baseline's stayed finite."""
    loss = c.run_nonfinite_step if c.baseline_nonfinite_step is None else None
    grad = c.run_nonfinite_grad_step if c.baseline_nonfinite_grad_step is None else None
    if loss is None and grad is None:
        return None
    said = "; ".join(x for x in (
        f"the loss became NaN/Inf at step {loss:,}" if loss is not None else "",
        f"the gradient norm at step {grad:,}" if grad is not None else "") if x)
    return Finding(
        code="baseline_new_nonfinite", severity=severity("baseline_new_nonfinite"),
        step=min(s for s in (loss, grad) if s is not None),
        title=f"{said}; the baseline's stayed finite",
        evidence={"run_loss_step": loss, "run_grad_step": grad,
                  "baseline_loss_step": c.baseline_nonfinite_step,
                  "baseline_grad_step": c.baseline_nonfinite_grad_step},
        advice=advice("baseline_new_nonfinite"))


def _level_finding(level: LevelTest, th: Thresholds) -> Finding:
    what = "final training loss" if level.metric == "loss" else "final validation loss"
    code = f"baseline_regression_{level.metric}"
    # The catalog's severity, raised to an error from error_change on.
    level_severity = "error" if level.relative_change >= th.error_change else severity(code)
    return Finding(
        code=code, severity=level_severity, step=level.last_step,
        title=f"{what} {level.run_median:.4g} vs baseline {level.baseline_median:.4g} "
              f"({level.relative_change:+.1%}, {level.test} p={level.p_value:.2g}, "
              f"Cliff's delta {level.effect_size:.2f}) over steps {level.first_step:,}-{level.last_step:,}",
        evidence={**_fields(level), "alpha": th.alpha, "min_change": th.min_change,
                  "error_change": th.error_change},
        advice=advice(code))


def _fields(x: DataclassInstance) -> dict[str, Any]:
    return {k: getattr(x, k) for k in x.__dataclass_fields__}
