"""The curve verdict: one label for the shape of the training (and validation) loss.

What it detects:
    Which of the spec's shapes the loss curve has: ``diverged`` (the loss
    became NaN/Inf, or grew without bound), ``unstable`` (it oscillates or
    keeps spiking without settling, but stays finite), ``overfitting`` (the
    training loss keeps falling while the validation loss passed a minimum
    and rose again), ``underfitting`` (the loss barely moved from where it
    started), ``healthy`` (it fell and settled), or ``insufficient_data``
    (fewer than ``min_points`` finite losses: too few to say anything,
    unless they already grew tenfold, steadily: diverged).
    Labels are checked in that order of precedence: a NaN makes every other
    signal meaningless, and an unstable curve's train/val gap means nothing.

Why it matters:
    The shape of the curve is the first thing an engineer looks at and the
    frame for every finding: a vanishing gradient in a diverged run is a
    symptom, in an underfitting run a cause.

How it decides:
    The loss is read up to the first non-finite value (a step the loss
    scaler skipped does not count). Levels are medians: the start level
    ``S`` over the first 5 steps, or the very first loss if lower (a
    learning rate too high throws the loss up within a step or two; a long
    run falls a long way in its first 5%),
    the end level ``E`` over the last 10%, the minimum ``m`` of the curve
    downsampled to bucket medians. The late spread ``D`` is the robust sd
    (1.4826 MAD) of the last third.

    - diverged: a non-finite loss; or, after its minimum, a significant
      upward Mann-Kendall trend (one-sided p < ``alpha_strong``) that ends
      far above it, the final level ``F`` (median of the last 2%) meeting
      ``F - m >= max(S - m, growth * |S|)`` (it gave back all its progress
      and more), or ``F > S`` and ``F >= 10 m`` for a positive loss (an
      order of magnitude above its best).
    - unstable: the validation loss (6 late evaluations at least) jumps
      between evaluations by ``val_jumps`` of its level or more (RMS of the
      residuals of the later half from a rolling median of 5, which a
      monotone fall or rise does not have; evaluations right after a
      training-loss spike are left out, their jump is the spike's). A
      validation set is fixed, so its loss only moves when the weights do:
      jumps of several percent between evaluations mean the weights are
      thrown around (healthy runs of the labeled set stay below 3.2%); or the late third of the training loss does not
      settle (the variance of its step-to-step differences is not both
      significantly smaller than the middle third's, Levene median-centred
      one-sided p < ``alpha``, and below ``settle_ratio`` of it) and either
      its fluctuations dwarf the progress (``(S - E) / D < min_progress``
      while ``D >= dispersion * |S|``), or its level wanders far beyond what
      independent minibatch noise allows (variance ratio of 20 bucket
      means of the detrended loss, chi-square p < ``alpha_strong`` and
      < ``alpha`` in each half, ratio >= ``wander_ratio``, and a wandering
      amplitude of at least ``dispersion`` of the progress ``S - E`` and 2%
      of the level ``E``).
    - overfitting (needs at least 5 evals): the validation loss has a
      minimum followed by at least ``min_evals_after`` evaluations that rise
      (Mann-Kendall on the evals after the minimum, one-sided p < ``alpha``),
      by at least 3 noise sd of the validation curve and ``min_val_rise``
      of its minimum, while the training loss at the end is no higher than
      at the validation minimum.
    - underfitting: the relative drop ``(S - E) / |S|`` is below
      ``min_drop``. The evidence says when the loss started within 10% of
      ln K and ends within 2% of ln K (ln 2 = 0.693), K the config's number
      of classes, else any K in 2..1000 that matches unambiguously (within
      a quarter of the gap to ln(K +- 1)): a classifier predicting chance.
      A curve that fell by more and then flattened is a plateau after
      progress, i.e. healthy.
    - healthy: none of the above.

What to try:
    diverged: lower the learning rate, add warmup and gradient clipping,
    look for log(0), division by zero or fp16 overflow. unstable: lower the
    learning rate or raise the batch size, add a decay schedule. overfitting:
    stop early at the validation minimum, add regularisation (weight decay,
    dropout, augmentation) or data. underfitting: raise the learning rate,
    check that labels and inputs reach the model, grow the model.

Parameters:
    min_points: finite training losses below which the verdict is
    ``insufficient_data`` (20). alpha: significance level of the trend and
    variance tests (0.05). alpha_strong: level for the tests that alone
    change the label to diverged or unstable (0.001). growth: rise above the
    start, relative to it, that counts as unbounded when the curve made no
    progress first (0.5). min_progress: progress over late spread below
    which a noisy curve has not settled (2.0). dispersion: late spread
    relative to the start level, or wandering relative to the progress,
    that counts as large (0.1). wander_ratio: variance ratio of the
    wandering test (3.0). min_drop: relative drop below which the curve is
    underfitting (0.1). min_evals_after: evaluations after the validation
    minimum needed to call overfitting (4). min_val_rise: rise of the
    validation loss relative to its minimum (0.1). settle_ratio: late over
    middle variance of the differenced loss below which (if significant)
    the curve is settling (0.5). val_jumps: jumps of the validation loss,
    relative to its level, that make it unstable (0.035).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._base import Context, Needs
from runlens.detectors._loss import training_loss
from runlens.diagnosis import CurveVerdict
from runlens.stats.robust import bucket_medians, find_spikes, mad_sd, rolling_median
from runlens.stats.trend import trend
from runlens.stats.variance import levene_compare, wander_test

if TYPE_CHECKING:
    from runlens.io.run import Run

NEEDS = Needs(scalars=("loss", "lr", "step_skipped"), evals=("val_loss",))

#: Number of classes searched for a loss pinned at chance level, ln K.
MAX_CLASSES = 1000


def chance_level(value: float, *, classes: int | None = None,
                 rel_tol: float = 0.02) -> dict[str, Any] | None:
    """The K whose ln K is ``value`` (within ``rel_tol``), if it is unambiguous.

    With ``classes`` known (from the run's config) only that K is tried.
    Otherwise K = 2..1000 are, and ``value`` must also be within a quarter
    of the gap to the neighbours' ln(K +- 1): beyond K ~ 12 the ln K are
    closer together than 2%, and a wider tolerance would match anything.
    """
    if not math.isfinite(value) or value <= 0:
        return None
    if classes is not None:
        best, tol = classes, rel_tol * math.log(classes)
    else:
        k = int(round(math.exp(value)))
        best = min((kk for kk in (k - 1, k, k + 1) if 2 <= kk <= MAX_CLASSES),
                   key=lambda kk: abs(value - math.log(kk)), default=None)
        if best is None:
            return None
        tol = min(rel_tol * math.log(best), 0.25 * (math.log(best + 1) - math.log(best)))
    if abs(value - math.log(best)) > tol:
        return None
    return {"chance_classes": best, "chance_loss": math.log(best)}


def config_classes(config: Any) -> int | None:
    """The number of classes the run's config states, if any."""
    for key in ("classes", "num_classes", "n_classes", "num_labels"):
        v = config.get(key) if hasattr(config, "get") else None
        if isinstance(v, int) and not isinstance(v, bool) and 2 <= v <= 10**6:
            return v
    return None


class CurveClassifier:
    """Thresholds of the curve verdict; see the module docstring."""

    def __init__(self, *, min_points: int = 20, alpha: float = 0.05, alpha_strong: float = 0.001,
                 growth: float = 0.5, min_progress: float = 2.0, dispersion: float = 0.1,
                 wander_ratio: float = 3.0, min_drop: float = 0.1, min_evals_after: int = 4,
                 min_val_rise: float = 0.1, settle_ratio: float = 0.5, val_jumps: float = 0.035) -> None:
        self.min_points = min_points
        self.alpha = alpha
        self.alpha_strong = alpha_strong
        self.growth = growth
        self.min_progress = min_progress
        self.dispersion = dispersion
        self.wander_ratio = wander_ratio
        self.min_drop = min_drop
        self.min_evals_after = min_evals_after
        self.min_val_rise = min_val_rise
        self.settle_ratio = settle_ratio
        self.val_jumps = val_jumps

    def classify(self, run: Run, ctx: Context | None = None) -> CurveVerdict:
        steps, x, bad_step = training_loss(run)
        if bad_step is not None:
            return CurveVerdict("diverged", f"the training loss became non-finite at step {bad_step}",
                                {"first_nonfinite_step": bad_step, "finite_points_before": int(x.size)})
        if x.size < self.min_points:
            if x.size >= 5:
                t = trend(x, steps.astype(float))
                first, last = float(np.median(x[:3])), float(x[-1])
                # Too short to judge a shape, not an explosion: an order of
                # magnitude up, steadily, before the run was stopped.
                if first > 0 and last >= 10 * first and t.p_increasing < self.alpha_strong:
                    return CurveVerdict(
                        "diverged", f"the loss grew from {first:.4g} to {last:.4g} in {x.size} steps "
                        f"(Kendall tau={t.tau:.2f}, p={t.p_increasing:.1e})",
                        {"points": int(x.size), "start_level": first, "final_level": last,
                         "trend": t.to_dict()})
            return CurveVerdict("insufficient_data",
                                f"only {x.size} finite training losses (< {self.min_points})",
                                {"finite_points": int(x.size), "min_points": self.min_points})
        vs, vl = validation_loss(run, steps)
        f = curve_features(steps, x, vs, vl)
        for check in (self._diverged, self._unstable):
            verdict = check(f)
            if verdict is not None:
                return verdict
        verdict = self._overfitting(steps, x, vs, vl, f)
        if verdict is not None:
            return verdict
        return self._underfitting(f, config_classes(run.config)) or CurveVerdict(
            "healthy", f"the loss fell by {f['relative_drop']:.0%} and settled", _ev(f))

    # -- labels, in precedence order -------------------------------------------
    def _diverged(self, f: dict[str, Any]) -> CurveVerdict | None:
        # The last 2%, not 10%: a blow-up often takes only the final steps
        # before the run is stopped.
        S, E, m = f["start_level"], f["final_level"], f["min_level"]
        t = f["after_min_trend"]
        if t is None or not t.p_increasing < self.alpha_strong:
            return None
        gave_back = E - m >= max(S - m, self.growth * f["scale"])
        magnitude = m > 0 and E > S and E >= 10 * m
        if not (gave_back or magnitude):
            return None
        return CurveVerdict(
            "diverged", f"the loss grows after step {f['min_step']}: from {m:.4g} to {E:.4g} "
            f"(start {S:.4g}; Kendall tau={t.tau:.2f}, p={t.p_increasing:.1e})",
            _ev(f, after_min_trend=t.to_dict()))

    def _unstable(self, f: dict[str, Any]) -> CurveVerdict | None:
        if f["val_jumps"] >= self.val_jumps:
            return CurveVerdict(
                "unstable", f"the validation loss jumps by {f['val_jumps']:.1%} of its level between "
                f"evaluations late in training (>= {self.val_jumps:.1%})", _ev(f))
        lev = f["late_vs_early"]
        # Settling needs both significance and an effect: with 10^5 steps a
        # 5% smaller late variance is "significant" and means nothing.
        if lev.p_smaller < self.alpha and lev.ratio < self.settle_ratio:
            return None
        S, E, D, scale = f["start_level"], f["end_level"], f["late_spread"], f["scale"]
        progress = (S - E) / D if D > 0 else math.inf
        noisy = progress < self.min_progress and D >= self.dispersion * scale
        w = f["wander"]
        # Wandering must undo a real share of the progress, be visible at the
        # loss's own level, and be present in both halves of the late third
        # (one step of a schedule is a single jump, not wandering).
        wandering = (w["p"] < self.alpha_strong and w["ratio"] >= self.wander_ratio
                     and w["halves_p"] < self.alpha
                     and w["excess"] >= self.dispersion * max(S - E, 0.0)
                     and w["excess"] >= 0.02 * abs(E))
        if not (noisy or wandering):
            return None
        what = ("fluctuates by more than it improved" if noisy
                else "keeps wandering far beyond minibatch noise")
        return CurveVerdict(
            "unstable", f"the loss {what}: late spread {D:.3g} vs drop {S - E:.3g} "
            f"(variance late/early {lev.ratio:.2f}, Levene p={lev.p_smaller:.2g})", _ev(f))

    def _overfitting(self, steps: np.ndarray, x: np.ndarray, vs: np.ndarray, vl: np.ndarray,
                     f: dict[str, Any]) -> CurveVerdict | None:
        if vl.size < 5:
            return None
        i = int(np.argmin(vl))
        after = vl[i + 1:]
        if after.size < self.min_evals_after:
            return None
        t = trend(after, vs[i + 1:].astype(float))
        noise = mad_sd(np.diff(vl)) / math.sqrt(2.0)
        rise = float(np.median(vl[-min(3, after.size):]) - vl[i])
        near = np.abs(steps - vs[i]) <= max(1, (steps[-1] - steps[0]) // 40)
        train_at_min = float(np.median(x[near]) if near.any() else x[np.argmin(np.abs(steps - vs[i]))])
        ev = _ev(f, val_min=float(vl[i]), val_min_step=int(vs[i]), val_rise=rise,
                 val_noise_sd=noise, val_trend=t.to_dict(), train_at_val_min=train_at_min)
        if not (t.p_increasing < self.alpha and rise >= 3 * noise
                and rise >= self.min_val_rise * abs(vl[i]) and f["end_level"] <= train_at_min):
            return None
        return CurveVerdict(
            "overfitting", f"validation loss rose from {vl[i]:.4g} at step {int(vs[i])} to "
            f"{vl[-1]:.4g} (Kendall p={t.p_increasing:.2g}) while the training loss kept falling", ev)

    def _underfitting(self, f: dict[str, Any], classes: int | None) -> CurveVerdict | None:
        if not f["relative_drop"] < self.min_drop:
            return None
        chance = chance_level(f["end_level"], classes=classes)
        # Pinned at chance: it also started there, as a fresh classifier does.
        if chance is not None and abs(f["start_level"] - chance["chance_loss"]) > 0.1 * chance["chance_loss"]:
            chance = None
        extra = {} if chance is None else chance
        reason = f"the loss barely moved: {f['relative_drop']:.1%} below its start {f['start_level']:.4g}"
        if chance is not None:
            reason += (f"; it sits at ln({chance['chance_classes']})={chance['chance_loss']:.3f}, "
                       f"chance level for {chance['chance_classes']} classes")
        return CurveVerdict("underfitting", reason, _ev(f, **extra))


def validation_loss(run: Run, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(steps, val_loss)``: finite validation losses by step, up to the last training step."""
    vs, vl = run.steps("evals"), run.column("evals", "val_loss")
    if vl is None or vs.size != vl.size:
        return np.empty(0, np.int64), np.empty(0)
    ok = np.isfinite(vl)
    if steps.size:
        ok &= vs <= steps[-1]
    vs, vl = vs[ok], vl[ok]
    order = np.argsort(vs, kind="stable")
    return vs[order], vl[order]


def val_jumps(vl: np.ndarray, min_evals: int = 6) -> float:
    """How much the late validation loss jumps between evaluations, relative to its level.

    RMS of the residuals of the last half of the evaluations from their
    rolling median of 5 (edges padded with the nearest value, so a monotone
    fall or rise leaves no residual at all), over the median level. 0 when
    there are fewer than ``min_evals`` late evaluations.
    """
    late = vl[vl.size // 2:]
    level = float(np.median(late)) if late.size else 0.0
    if late.size < min_evals or level == 0:
        return 0.0
    resid = late - rolling_median(late, 5, mode="nearest")
    return float(np.sqrt(np.mean(resid ** 2)) / abs(level))


def curve_features(steps: np.ndarray, x: np.ndarray, vs: np.ndarray | None = None,
                   vl: np.ndarray | None = None) -> dict[str, Any]:
    """The numbers every label reads, computed once (``x`` finite, ordered)."""
    vs = np.empty(0, np.int64) if vs is None else vs
    vl = np.empty(0) if vl is None else vl
    n = x.size
    # The first steps, not the first 5%: a long run falls a long way in its
    # first 5%, and a learning rate too high throws the loss far above its
    # initial value within a step or two (hence also the very first loss).
    S = min(float(x[0]), float(np.median(x[:5])))
    E = float(np.median(x[-max(5, n // 10):]))
    pos, med = bucket_medians(x, int(np.clip(n // 5, 10, 200)))
    j = int(np.argmin(med))
    i_min = int(round(pos[j]))
    m = float(med[j])
    tail = x[i_min:]
    after = trend(tail, steps[i_min:].astype(float)) if tail.size >= 10 else None
    third = max(3, n // 3)
    late = x[-third:]
    D = mad_sd(late)
    scale = max(abs(S), abs(E), 1e-12)
    return {
        "points": int(n), "start_level": S, "end_level": E, "min_level": m,
        "final_level": float(np.median(x[-max(5, n // 50):])),
        "min_step": int(steps[i_min]), "relative_drop": (S - E) / scale if S != 0 else 0.0,
        "late_spread": D, "scale": abs(S) if S != 0 else scale,
        "after_min_trend": after,
        # Differences remove the trend; what is left is the step-to-step noise.
        # The middle third is the reference: the first holds the initial
        # transient, which calms down even in a run that never settles.
        "late_vs_early": levene_compare(np.diff(x[third:2 * third]), np.diff(late)),
        "wander": wander_test(late),
        "val_jumps": val_jumps(_after_spikes_removed(steps, x, vs, vl)),
    }


def _after_spikes_removed(steps: np.ndarray, x: np.ndarray, vs: np.ndarray, vl: np.ndarray) -> np.ndarray:
    """The validation losses, less those evaluated right after a training-loss spike.

    A corrupt batch throws the model back for a moment: the evaluation that
    follows it jumps too, and that jump belongs to the spike, not to an
    unstable optimization.
    """
    if vl.size == 0 or x.size < 50:
        return vl
    spike_steps = steps[[s["index"] for s in find_spikes(x)]]
    if spike_steps.size == 0:
        return vl
    prev = np.concatenate(([np.iinfo(np.int64).min], vs[:-1]))
    hit = np.array([np.any((spike_steps > p) & (spike_steps <= v)) for p, v in zip(prev, vs, strict=True)])
    return vl[~hit]


def _ev(f: dict[str, Any], **extra: Any) -> dict[str, Any]:
    lev = f["late_vs_early"]
    ev = {k: f[k] for k in ("points", "start_level", "end_level", "min_level", "min_step",
                            "relative_drop", "late_spread")}
    ev.update(levene_late_vs_early=lev.statistic, levene_p_smaller=lev.p_smaller,
              variance_ratio_late_early=lev.ratio, wander_ratio=f["wander"]["ratio"],
              wander_p=f["wander"]["p"], wander_excess=f["wander"]["excess"],
              val_jumps=f["val_jumps"])
    ev.update(extra)
    return ev


_DEFAULT = CurveClassifier()


def classify(run: Run, ctx: Context | None = None) -> CurveVerdict:
    """The curve verdict for ``run`` with the default thresholds."""
    return _DEFAULT.classify(run, ctx)
