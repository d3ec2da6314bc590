"""The curve verdict's progress checks: did the loss make progress, and the underfitting label.

Progress is decided before noise (issue 20): a loss that never moved and
jitters is underfitting, not unstable. Functions of the classifier's parameters (:class:`~runlens.detectors.curve.params.CurveParams`),
which :class:`~runlens.detectors.curve.CurveClassifier` documents in its docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._updates import StepRatioSummary, step_ratio_summary, weight_collapse
from runlens.detectors.curve import features as shape
from runlens.detectors.curve.params import CurveParams
from runlens.detectors.curve.short_level import from_start
from runlens.diagnosis import CurveVerdict
from runlens.stats.chance import chance_test, validation_at_chance

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Signals

_ev = shape.curve_evidence


#: How many sd of its step-to-step noise a loss that starts below zero must fall to have made
#: progress (with a downward trend at ``alpha``): such a loss (an ELBO's negative, a log-likelihood
#: with its constant) has no floor at zero, so a share of its start measures nothing.
SIGNED_EFFECT = 3.0


def signed(f: dict[str, Any]) -> bool:
    """Whether the loss starts below zero, where its start is no scale for its fall."""
    return bool(f["start_level"] < 0)


def fell_by(f: dict[str, Any]) -> str:
    """How far the loss fell, in words: a share of its start, or for a :func:`signed` loss its fall."""
    if signed(f):
        return (f"{f['start_level'] - f['end_level']:.4g} from {f['start_level']:.4g} "
                f"({f['progress'].effect:.0f} sd of its step-to-step noise; below zero, its start is no scale)")
    return f"{f['relative_drop']:.0%}"


def progressed(cfg: CurveParams, f: dict[str, Any]) -> bool:
    """Whether the loss made progress: a fall of ``min_drop`` of its start (or from its first
    fifth to its last), along a significant downward Mann-Kendall trend (``alpha``) of the whole
    curve; or a best level
    ``min_drop`` below the start reached along a downward trend at ``alpha_strong`` (a loss
    that fell and then jumped back or became noisy did progress first). A loss that starts below
    zero (:func:`signed`): a fall of ``SIGNED_EFFECT`` sd of its noise along the trend."""
    prog = f["progress"]
    if signed(f):
        return bool(prog.p_decreasing < cfg.alpha and prog.effect >= SIGNED_EFFECT)
    # The drop from the first steps, or (a noisy start level) from the first fifth's median.
    if max(f["relative_drop"], prog.relative_drop) >= cfg.min_drop and prog.p_decreasing < cfg.alpha:
        return True
    if (f["start_level"] - f["min_level"]) / f["scale"] < cfg.min_drop:
        return False
    return bool(f["fall_to_min_p"] < cfg.alpha_strong)


#: How many sd of the loss around its best level (``min_noise``) that level must stand below the end
#: level to be a level of its own: the lowest of a hundred bucket medians of 5 noisy points sits about
#: 1.4 sd of the points under their common level by selection alone.
APART_SD = 2.0


def apart_from_end(f: dict[str, Any]) -> bool:
    """Whether the curve's best level stands apart from its end level (by ``APART_SD`` sd of the noise
    around it): a best level within that is a noisy bucket's dip about the level the loss ended at, and
    the end level says what was gained."""
    return bool(f["end_level"] - f["min_level"] > APART_SD * f["min_noise"])


def late_steps(f: dict[str, Any], sig: Signals | None) -> StepRatioSummary | None:
    """The second half's step sizes (:func:`step_ratio_summary`), read once per classification whichever stage
    asks first."""
    return shape.memo(f, "late_step_ratio", lambda: step_ratio_summary(sig) if sig is not None else None)


def chaotic(cfg: CurveParams, f: dict[str, Any], sig: Signals | None) -> bool:
    """Whether a loss that made no progress jitters from steps too large rather than from
    minibatch noise around a loss that never moved (that is underfitting): the late update/weight
    ratio above ``step_ratio``. Without step sizes, only in a log of one value per epoch
    (``per_epoch``), a late spread of at least ``swing`` of the late level: a batch of 4's mean
    jumps by its own level (the loss alone cannot tell that from chaos), but an epoch's mean
    averages its batches, so swings of a third of its level are the training's own."""
    ratio = late_steps(f, sig)
    if ratio is not None:
        return ratio.median > cfg.step_ratio
    # A loss ending at exactly 0 has no level for its spread to be a share of.
    return bool(f["end_level"] != 0) and epoch_swings(cfg, f, sig, f["late_spread"])


def epoch_swings(cfg: CurveParams, f: dict[str, Any], sig: Signals | None, spread: float) -> bool:
    """Whether a log of one value per epoch (``per_epoch``), with no step sizes logged, spreads
    ``spread`` of at least ``swing`` of its end level. One rule for both readings of it, so they
    cannot drift apart: :func:`chaotic` (the late spread of a loss that made no progress) and the
    unstable label's ``swinging`` (the late noise after progress), whose callers add their own
    conditions."""
    # An end level of exactly 0 gives no scale to hold the spread against (and no ratio to quote).
    return (bool(f.get("per_epoch")) and f["end_level"] != 0 and late_steps(f, sig) is None
            and spread >= cfg.swing * abs(f["end_level"]))


def validation_stalled(cfg: CurveParams, sets: dict[str, tuple[np.ndarray, np.ndarray]],
                       f: dict[str, Any]) -> dict[str, Any] | None:
    """Whether held-out data shows no progress while the training loss fell modestly: the best
    validation loss is not ``min_drop / 2`` below its first evaluation nor ``min_drop`` below the
    training loss's start level (so learning before the first evaluation counts), over ``min_evals_after + 1``
    evaluations at least, and its last third's median is not above its first evaluation, while the
    training loss fell by less than half. A training loss that fell further, or a validation loss
    that ended worse than it began, is memorisation: the overfitting reading's question.

    A loss that fell 9% on training batches (the class prior, memorised batches) while the
    validation loss never moved learned nothing that carries over: no progress, though the
    training curve alone passes the trend test."""
    name = "val_loss" if "val_loss" in sets else next(iter(sets), None)
    if name is None:
        return None
    v = sets[name][1]
    S = f["start_level"]
    if v.size < cfg.min_evals_after + 1 or not (S > 0 and float(np.min(v)) > 0) or f["relative_drop"] >= 0.5:
        return None
    first, best = float(v[0]), float(np.min(v))
    # Against its own first evaluation, half the bar: a held-out loss with a large floor of its own (a
    # contrastive loss over more candidates than training's) moves less, in relative terms, as it learns.
    if best <= (1 - cfg.min_drop) * S or best <= (1 - cfg.min_drop / 2) * first:
        return None
    if float(np.median(v[-max(2, v.size // 3):])) > first:
        return None  # validation got worse than where it began: the overfitting reading's question
    return {"val_set": name, "val_first": first, "val_min": best, "val_evals": int(v.size),
            "val_drop_from_first": (first - best) / first, "val_drop_from_train_start": (S - best) / S}


def calm(cfg: CurveParams, f: dict[str, Any], sig: Signals | None) -> bool:
    """Whether the measured late steps are small (the median module's update/weight ratio at most
    ``step_ratio / 10``, the 1e-3 rule of thumb, and no module's above ``step_ratio``): weights that
    move that little cannot make the loss jump, so a training loss's jitter is minibatch sampling
    (a batch of 4), not instability. Only ``update_norm`` counts: a lower bound from the weight
    norms' changes cannot show that steps were small."""
    ratio = late_steps(f, sig)
    return (ratio is not None and ratio.source == "update_norm" and ratio.median <= cfg.step_ratio / 10
            and ratio.largest <= cfg.step_ratio)


def began_mid_run(steps: np.ndarray, x: np.ndarray, run: Run) -> CurveVerdict | None:
    """Not judged: a log counted in steps or epochs whose loss made no progress and that begins further
    into the run than it lasts (its first point more than one logging interval after 0, the short log's
    :func:`~runlens.detectors.curve.short_level.from_start`, and beyond its own span). A flat stretch
    cut from the middle of a run is as much the plateau a run reaches after its progress (a VAE's
    epochs 7-8 at 107) as a run that never learned; the start, which tells them apart, is not in the
    log. A log that begins a few steps in (batch steps 5-26 at 0.70) shows most of its run."""
    index = shape.index_kind(run)
    if index not in ("step", "epoch") or from_start(steps, index) or not steps[0] > steps[-1] - steps[0]:
        return None
    return CurveVerdict(
        "insufficient_data", f"the log begins mid-run, at {index} {int(steps[0]):,} ({x.size} points), and its "
        "loss made no progress there: a plateau reached after learning looks the same as a run that never "
        "learned, and the start that tells them apart is not in the log",
        {"finite_points": int(x.size), "first_step": int(steps[0]), "index_kind": index, "kind": "began_mid_run"})


def progress_lost(cfg: CurveParams, steps: np.ndarray, f: dict[str, Any], sig: Signals | None) -> CurveVerdict | None:
    """Underfitting (``kind: progress_lost``) when the loss fell ``min_drop`` of its start or more to
    its minimum and then came back: its end level is within ``min_drop`` of its start (or above it,
    short of the divergence reading, which runs first), climbing from the minimum along a Mann-Kendall
    trend (p < ``alpha_strong``), and its late steps are not large
    (:func:`chaotic`). Progress is judged before noise: whatever the curve did on the way, the run
    ended no better than it began, and the spread it came back through is not what undid it unless
    the steps were large enough to (a missing ``zero_grad`` piles gradients up until the loss climbs
    back to where it started, with ordinary update sizes)."""
    S, E, scale = f["start_level"], f["end_level"], f["scale"]
    if not (S > 0 and scale > 0) or f["relative_drop"] >= cfg.min_drop or (S - f["min_level"]) / scale < cfg.min_drop:
        return None
    # A return, not an oscillation: from its minimum the loss climbs along a significant trend. A loss
    # that swings about its level (a rate too high) has none, and the instability readings judge it.
    rise = f["after_min_trend"]
    if rise is None or not rise.p_increasing < cfg.alpha_strong or chaotic(cfg, f, sig):
        return None
    net = f["relative_drop"]  # (S - E) / scale, S > 0 here
    where = f"{net:.1%} below its start {S:.4g} (under {cfg.min_drop:.0%})" if net >= 0 else f"{-net:.1%} above its start {S:.4g}"
    return CurveVerdict(
        "underfitting", f"the loss fell to {f['min_level']:.4g} (step {f['min_step']}) and came back: it ended at "
        f"{E:.4g}, {where}: no net progress",
        _ev(f, kind="progress_lost", min_drop=cfg.min_drop, step=int(f["min_step"])))


def underfitting(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, f: dict[str, Any], run: Run,
                  sig: Signals, sets: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> CurveVerdict | None:
    classes, source = shape.chance_classes(run)
    chance = chance_test(steps, x, classes, source)
    stalled = validation_stalled(cfg, sets, f) if sets else None
    held_out = (validation_at_chance(steps, x, *sets["val_loss"], classes)
                if sets and "val_loss" in sets and classes is not None and classes >= 2 else None)
    if chance is not None:
        k = chance["chance_classes"]
        reason = (f"the loss sits at ln({k})={chance['chance_loss']:.3f}, chance level for {k} classes (K from "
                  f"{chance['chance_source']}): the model predicts the prior")
        ev = _ev(f, **chance, step=int(steps[-max(5, x.size // 3)]))
    elif not progressed(cfg, f) or (not signed(f) and max(f["relative_drop"], f["progress"].relative_drop)
                                    < cfg.min_drop and not apart_from_end(f)):
        # Past the instability readings, a best level within the noise of the end level is that noise's
        # dip: the end level, under ``min_drop`` below the start, says what was gained.
        if (mid := began_mid_run(steps, x, run)) is not None:
            return mid
        p = f["progress"].p_decreasing
        drop = f["relative_drop"]
        reason = (f"the loss rose {-drop:.1%} above its start {f['start_level']:.4g}" if drop < 0 else
                  f"the loss barely moved: {drop:.1%} below its start {f['start_level']:.4g}"
                  if drop < cfg.min_drop else
                  f"the loss made no significant progress: its {f['relative_drop']:.1%} fall is within its "
                  f"noise (Kendall p={p:.2g})")
        ev = _ev(f, kind="no_progress", step=int(steps[0]))
        if progressed(cfg, f):  # decided by the best level's dip: the numbers that decided it
            ev.update(min_noise=f["min_noise"], apart_sd=APART_SD)
    elif stalled is not None:
        reason = (f"the validation loss never improved: its best {stalled['val_min']:.4g} is "
                  f"{stalled['val_drop_from_first']:.1%} below its first evaluation and "
                  f"{stalled['val_drop_from_train_start']:.1%} below the training loss's start over "
                  f"{stalled['val_evals']} evaluations, while the training loss fell {f['relative_drop']:.1%}: "
                  "nothing learned carries over to held-out data")
        ev = _ev(f, kind="no_validation_progress", step=int(steps[0]), **stalled)
    elif held_out is not None:
        # The training loss left ln K, the held-out loss did not (it may drift up a little: batches memorised
        # by a model that learned nothing that carries). The overfitting reading, which runs first, has
        # declined it: the rise is too small or the held-out loss is still at chance, not confidently wrong.
        k = held_out["chance_classes"]
        reason = (f"the validation loss stays at ln({k})={held_out['chance_loss']:.3f}, chance level for {k} "
                  f"classes (K from {source}; median {held_out['val_late_level']:.4g} over its later "
                  f"{held_out['late_evals']} evaluations), while the training loss fell to "
                  f"{held_out['train_late_level']:.4g}: nothing learned carries over to held-out data")
        ev = _ev(f, kind="validation_at_chance", step=held_out["first_late_step"], chance_source=source,
                 **{key: held_out[key] for key in ("chance_classes", "chance_loss", "val_late_level", "val_lowest",
                                                   "train_late_level", "evals")})
    else:
        return None
    ratio, note = weight_collapse(sig, run.config)
    if ratio is not None:
        ev["weight_norm_ratio"] = ratio
    return CurveVerdict("underfitting", reason + note, ev)
