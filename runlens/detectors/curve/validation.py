"""The curve verdict's validation-loss checks: overfitting, and validation jumps that make it unstable.

Functions of the classifier's parameters (:class:`~runlens.detectors.curve.params.CurveParams`), which
:class:`~runlens.detectors.curve.CurveClassifier` documents in its docstring."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors.curve import features as shape
from runlens.detectors.curve.params import CurveParams
from runlens.detectors.curve.underfitting import late_steps
from runlens.diagnosis import CurveVerdict
from runlens.stats import evals
from runlens.stats.trend import trend

if TYPE_CHECKING:
    from runlens.signals import Signals

_ev = shape.curve_evidence
#: ``{name: (steps, losses)}`` per eval set (:func:`~runlens.detectors.curve.features.validation_sets`).
EvalSets = dict[str, tuple[np.ndarray, np.ndarray]]


def perm_p(o: dict[str, Any]) -> str:
    """The rise's p as the finding says it: exact over every order of a few evaluations."""
    if o.get("few_evals"):
        return f"exact p={o['val_perm_p']:.2g} over every order of {o['few_evals']} evaluations"
    if o.get("strict_rise_after_min") and o["val_perm_p"] <= 1 / math.factorial(o["strict_rise_after_min"]):
        return (f"rising at each of the {o['strict_rise_after_min']} evaluations after the minimum: exact "
                f"p={o['val_perm_p']:.2g} over their orders")
    return f"permutation p={o['val_perm_p']:.2g}"


def eval_set_said(name: str) -> str:
    """Where a held-out rise is, as a finding says it: nothing for ``val_loss``, else its eval set."""
    return "" if name == "val_loss" else f" on eval set {name.split('@', 1)[1]!r}"


def overfit_result(cfg: CurveParams, name: str, vs: np.ndarray, vl: np.ndarray,
                   f: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """One eval set's ``overfit_test``, kept in the curve's features ``f`` when given (both readings ask it)."""
    def compute() -> dict[str, Any] | None:
        return evals.overfit_test(vs, vl, min_evals_after=cfg.min_evals_after)
    return compute() if f is None else shape.memo(f, f"overfit_test@{name}", compute)


def train_near(steps: np.ndarray, x: np.ndarray, step: int) -> float:
    """The training loss's level at ``step`` (a held-out minimum's): the median within a fortieth of the
    run around it, or the point nearest it."""
    near = np.abs(steps - step) <= max(1, (steps[-1] - steps[0]) // 40)
    return float(np.median(x[near]) if near.any() else x[np.argmin(np.abs(steps - step))])


def val_rises(cfg: CurveParams, sets: dict[str, tuple[np.ndarray, np.ndarray]], *, noise: bool = True,
              f: dict[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(name, overfit_test result, " on eval set 'x'")`` for each eval set (``val_loss``
    first) whose loss rises after its minimum: trend and permutation tests, at least
    ``min_val_rise`` of the minimum and ``val_give_back`` of the fall before it (a loss that fell
    tenfold and gives back a few percent of that gain still generalizes as well as it did), and
    (``noise``) 2 evaluation-noise sd. A short log (``noise`` False: too few evaluations for a noise
    estimate) whose loss rose at each of 4 evaluations or more after its minimum is past it however
    far it fell before: the most its few evaluations can say (fastai's 0.227 -> 0.237 -> 0.240 ->
    0.255 -> 0.263 after a fall from 1.04). ``f``: the curve's features, where each set's test is kept."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: (kv[0] != "val_loss", kv[0])):
        o = overfit_result(cfg, name, vs, vl, f)
        # Four evaluations cannot reach alpha_val (1/24 at best): a rise at each is taken at alpha.
        # So can four after the minimum, rising at each (fastai's valid_loss 0.227 -> 0.237 -> 0.240
        # -> 0.255 -> 0.263): given where the minimum is, 1 order of the 4! after it (exact).
        strict = evals.rises_after_min(vl) if o is not None and not o.get("few_evals") else 0
        if strict and o is not None:
            o = {**o, "val_perm_p": min(o["val_perm_p"], 1 / math.factorial(strict)), "strict_rise_after_min": strict}
        level = cfg.alpha if o is not None and (o.get("few_evals") or strict) else cfg.alpha_val
        if o is None or not (o["val_perm_p"] < level and o["val_trend_p"] < cfg.alpha
                             and (not noise or o["val_rise"] >= 2 * o["val_noise_sd"])
                             and (o["val_rise"] >= cfg.min_val_rise * abs(o["val_min"])
                                  or _gave_back(cfg, float(vl[np.isfinite(vl)][0]), o))
                             and ((strict and not noise)
                                  or o["val_rise"] >= cfg.val_give_back * max(float(vl[0]) - o["val_min"], 0.0))):
            continue
        yield name, o, eval_set_said(name)


#: How many times its minimum a held-out loss must stand at every evaluation after it, two at least,
#: to have risen by effect size alone: evaluating one fixed set does not double its loss twice running
#: (the same reasoning as the short log's swing, at a lower bar since the rise must also hold).
MANYFOLD = 2.0


def rose_manyfold(sets: EvalSets) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(name, evidence, where)`` for each eval set (``val_loss`` first) whose loss stands at
    ``MANYFOLD`` times its minimum or more at each of the 2 evaluations or more after it, with no jump
    of that factor before the minimum nor a fall of it after (a swing is no rise): a rise too
    few evaluations hold for a rank test to reach alpha (four give 1/24 at best), told by its size
    (investibot's 0.031 -> 0.021 -> 0.059 -> 0.065)."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: (kv[0] != "val_loss", kv[0])):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if vl.size < 3 or not float(np.min(vl)) > 0:
            continue
        i = int(np.argmin(vl))
        after = vl[i + 1:]
        if after.size < 2 or not bool(np.all(after >= MANYFOLD * vl[i])):
            continue
        # A rise that holds, from a descent: a loss that also jumped MANYFOLD before its minimum, or
        # fell back that far after it, swings (the instability readings judge it), as RealNVP's
        # test loss of 3.3e4, 2.3e5, 1.0e4, 4.6e5, 1.3e8, 1.0e7 does.
        r = np.diff(np.log(vl))
        if bool(np.any(r[:i] >= math.log(MANYFOLD))) or bool(np.any(r[i + 1:] <= -math.log(MANYFOLD))):
            continue
        yield name, {"val_min": float(vl[i]), "val_min_step": int(vs[i]), "val_last": float(vl[-1]),
                     "evals_after_min": int(after.size), "least_ratio_after_min": float(np.min(after) / vl[i]),
                     "manyfold": MANYFOLD}, eval_set_said(name)


#: The share of its own fall a held-out loss must give back, along its significant rise, to have
#: overfit by less than ``min_val_rise`` of its level: a third of what it had gained is lost, at a
#: level whose plateau sits high above the fall (a mixer's 0.350 -> 0.297 -> 0.325 over 21 evaluations
#: of warm restarts, +9% of the minimum and 52% of the gain, at tau 1.0).
GIVE_BACK = 1 / 3


def _gave_back(cfg: CurveParams, first: float, o: dict[str, Any]) -> bool:
    """Whether the rise gave back ``GIVE_BACK`` of a fall of ``min_drop`` of the first evaluation or
    more: a gain that size is beyond an evaluation's noise, and so is losing a third of it."""
    fall = first - o["val_min"]
    return first > 0 and fall >= cfg.min_drop * first and o["val_rise"] >= GIVE_BACK * fall


def overfitting(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: EvalSets,
                f: dict[str, Any]) -> CurveVerdict | None:
    for name, o, where in val_rises(cfg, sets, f=f):
        at_min = train_near(steps, x, o["val_min_step"])
        if not f["end_level"] <= at_min + f["late_spread"]:
            continue
        return CurveVerdict(
            "overfitting", f"validation loss{where} rose from {o['val_min']:.4g} at step {o['val_min_step']} "
            f"by {o['val_rise']:.3g} (along its trend, or to where it levelled off) ({perm_p(o)}) while the training "
            "loss kept falling", _ev(f, **o, eval_set=name, train_at_val_min=at_min, step=o["val_min_step"]))
    return None


def val_unstable(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: EvalSets,
                 f: dict[str, Any], sig: Signals, *, steps_only: bool = False) -> CurveVerdict | None:
    """Validation jumps with a rough training loss, or (``steps_only``: only) with large steps."""
    if not sets:
        return None
    lev, w = f["late_vs_early"], f["wander"]
    # A fixed validation set's loss only jumps when the weights do; but
    # evaluation noise alone (small sets, dropout left on) jumps too, so
    # the training loss must show the instability as well.
    # Rough means an effect, not only significance: with thousands of
    # steps the curvature of a healthy decay already "wanders".
    wanders = (w["p"] < cfg.alpha_strong and w["ratio"] >= cfg.wander_ratio and w["halves_p"] < cfg.alpha
               and w["excess"] >= 0.02 * abs(f["end_level"]))
    rough = ((1.0 - lev.p_smaller) < cfg.alpha_strong and lev.ratio >= 1 / cfg.settle_ratio or wanders) and not steps_only
    # Both readings (steps only, then rough) judge the same first jumping set: found once.
    fall = max(float(f["start_level"]) - float(f["min_level"]), 0.0)
    jump = shape.memo(f, "val_jump", lambda: _first_jump(cfg, steps, x, sets, sig, fall))
    if jump is None:
        return None
    name, vs, j, ref = jump
    why, extra = "the training loss does not settle", {}
    # Noisier late (not wandering) beside a validation loss still reaching new lows: a learning model's spread.
    if not rough or (not wanders and evals.still_falling(sets[name][1], cfg.alpha, cfg.min_drop)):
        # Read only once the validation loss jumps: the step sizes are the layers table.
        late = late_steps(f, sig)
        med, src, top, module = (late.median, late.source, late.largest, late.module) if late else (0.0, "", 0.0, "")
        # Steps large overall, or one layer's a tenth of its weights (10x step_ratio) at every step.
        if not (med > cfg.step_ratio or top >= 10 * cfg.step_ratio):
            return None
        why = (f"the steps of the second half change the weights by {med:.1%} of their norm "
               f"(> {cfg.step_ratio:g})" if med > cfg.step_ratio else
               f"the steps of the second half change module {module}'s weights by {top:.1%} of their "
               f"norm (>= {10 * cfg.step_ratio:g}; median over modules {med:.2g})")
        extra = {"late_update_ratio": med, "update_source": src, "late_largest_module_ratio": top,
                 "late_largest_module": module}
    return CurveVerdict(
        "unstable", f"the validation loss ({name}) jumps by {j['rms'] / ref:.1%} of its level between "
        f"evaluations late in training (>= {cfg.val_jumps:.1%}) and {why}",
        _ev(f, val_jumps=j["rms"] / ref, eval_set=name, kind="val_jumps", **extra,
            step=int(vs[vs.size // 2])))


def _first_jump(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: EvalSets,
                sig: Signals, fall: float) -> tuple[str, np.ndarray, dict[str, Any], float] | None:
    """The first eval set (by name) whose loss jumps between evaluations: its name, steps, the
    jumps' numbers and the level they are measured against.

    The reference is the larger of the late level and ``dispersion`` of the progress, the
    validation loss's own or the training loss's ``fall`` (start level minus minimum): evaluated
    seldom, a validation loss can be near zero from its first evaluation on, and jitter at a
    thousandth of where the training loss started is not instability, however large next to
    that near-zero level."""
    for name, (vs, vl) in sorted(sets.items()):
        j = evals.val_jumps(evals.drop_after_spikes(steps, x, vs, vl, sig.loss_spikes() if x.size >= 50 else []))
        ref = max(abs(j["level"]), cfg.dispersion * max(j["progress"], fall))
        if ref > 0 and j["rms"] >= cfg.val_jumps * ref and j["rms_without_largest"] >= 0.5 * cfg.val_jumps * ref:
            return name, vs, j, ref
    return None


#: How many times the training loss the held-out loss must stay at for a widening gap to be
#: overfitting: a model that fits its training data twice as well as data it has not seen has
#: learnt something that does not carry over; the factor is scale-free, whatever the loss.
GAP = 2.0
#: How many times the held-out loss's relative fall the training loss's must be, below ``GAP``: the gains of
#: training carry over to unseen data by less than a quarter (a held-out loss 2% down while the training
#: loss fell 13%, a dropout model's held-out loss below its training loss and flat).
CARRY = 4.0
#: The fewest evaluations a widening gap is read from: four give Kendall's tau only 24 orders, and
#: half of them show no fall by chance.
GAP_EVALS = 5


def gap_widens(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: EvalSets) -> tuple[str, dict[str, Any]] | None:
    """``(name, numbers)`` of the first eval set (``val_loss`` first) whose loss made no progress
    at all over ``GAP_EVALS`` evaluations or more (no downward Kendall trend at ``alpha``, and less than
    ``min_drop`` down from the median of its first 3 to that of its last 3) while the training loss over the same
    steps fell by ``min_drop`` along a downward trend (p < ``alpha``), the held-out loss staying
    ``GAP`` times the training loss or more (then under ``min_drop`` down is no progress, however
    significant its trend), or falling by under 1/``CARRY`` of the training loss's relative fall: the gap
    between them widens. A validation loss
    that is flat and noisy, not rising, passes no rise test, and still every step of training
    went to data the model had seen (a chunk of epochs 530 to 640: training 0.98 -> 0.84,
    validation about 2.9 throughout)."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: (kv[0] != "val_loss", kv[0])):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        span = (steps >= vs[0]) & (steps <= vs[-1]) if vs.size else np.zeros(steps.size, bool)
        if 2 <= np.unique(vs).size < GAP_EVALS and (few := _gap_few(cfg, steps, x, vs, vl)) is not None:
            return name, {**few, "eval_set": name}
        if np.unique(vs).size < GAP_EVALS or span.sum() < GAP_EVALS:
            continue
        xs, xt = steps[span].astype(float), x[span]
        start, end = float(np.median(xt[:3])), float(np.median(xt[-3:]))
        t, v = trend(xt, xs), trend(vl, vs.astype(float))
        level, train = float(np.median(vl)), float(np.median(xt))
        fall = (start - end) / start if start > 0 else 0.0
        v_start, v_end = float(np.median(vl[:3])), float(np.median(vl[-3:]))
        v_fall = (v_start - v_end) / v_start if v_start > 0 else 0.0
        # Training gains that do not carry over: the held-out loss under ``min_drop`` down while the training
        # loss fell along its trend, and either twice the training loss or more (then however significant its
        # small fall), or down by under a quarter of the training loss's fall with no downward trend of its own.
        if not (train > 0 and t.p_decreasing < cfg.alpha and fall >= cfg.min_drop and v_fall < cfg.min_drop
                and (level >= GAP * train or (v.p_decreasing >= cfg.alpha and v_fall <= fall / CARRY))):
            continue
        return name, {"train_fall": fall, "train_p": t.p_decreasing, "train_trend": t.to_dict(),
                      "val_trend": v.to_dict(), "val_level": level, "val_fall": v_fall, "val_p": v.p_decreasing,
                      "train_level": train, "gap_ratio": level / train, "gap_min": GAP,
                      "evaluations": int(vl.size), "eval_set": name, "step": int(vs[0])}
    return None


def _gap_few(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, vs: np.ndarray, vl: np.ndarray,
             ) -> dict[str, Any] | None:
    """The widening gap read from 2 to 4 evaluations, too few for Kendall's tau: the held-out loss
    rose at each (no progress, strictly), while the training loss (its median since the evaluation
    before; before the first, its last 5 points) fell by ``min_drop`` from the first evaluation to the
    last; and either the held-out loss is ``GAP`` times the training loss or more at each (nanoGPT's
    train 0.98 -> 0.67 while val 3.75 -> 3.90 between two evaluations), or their ratio grew ``GAP``
    times or more with the held-out loss up by ``min_val_rise`` (a two-tower model's train 5.10 ->
    0.82 while test 4.85 -> 6.21: scale-free, a fall and a rise each larger than an evaluation's noise)."""
    if np.unique(vs).size != vs.size or not np.all(np.diff(vl) > 0):
        return None
    t = _train_at(steps, x, vs)
    if t is None:
        return None
    fall = (t[0] - t[-1]) / t[0] if t[0] > 0 else 0.0
    if not (np.all(t > 0) and fall >= cfg.min_drop):
        return None
    ratio = vl / t
    widened = vl[0] > 0 and vl[-1] >= (1 + cfg.min_val_rise) * vl[0] and ratio[-1] >= GAP * ratio[0]
    if not (np.all(vl >= GAP * t) or widened):
        return None
    # No trend test ran: the evidence holds the medians and the rise, not a tau or a p it did not compute.
    return {"train_fall": fall, "train_medians": t.tolist(), "val_level": float(np.median(vl)),
            "train_level": float(np.median(t)), "gap_ratio": float(np.min(ratio)), "gap_ratios": ratio.tolist(),
            "gap_min": GAP, "evaluations": int(vl.size), "few_evals": True, "step": int(vs[0]),
            "gap_grew": float(ratio[-1] / ratio[0])}


def gap_verdict(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: EvalSets,
                base: dict[str, Any], where: str = "") -> CurveVerdict | None:
    found = gap_widens(cfg, steps, x, sets)
    if found is None:
        return None
    name, g = found
    label = "" if name == "val_loss" else f" ({name})"
    if g.get("few_evals"):
        return CurveVerdict(
            "overfitting", f"the training loss fell by {g['train_fall']:.0%} while the validation loss{label} rose "
            f"from each evaluation to the next ({g['evaluations']} evaluations), "
            + (f"at {g['gap_ratio']:.3g}x the training loss or more (>= {GAP:g}x; " if g["gap_ratio"] >= GAP else
               f"its ratio to the training loss growing {g['gap_grew']:.3g}x (>= {GAP:g}x; ")
            + f"{' -> '.join(f'{r:.3g}x' for r in g['gap_ratios'])}): the gap widens{where}",
            {**base, **g, "kind": "gap_widens"})
    return CurveVerdict(
        "overfitting", f"the training loss fell by {g['train_fall']:.0%} (Kendall p={g['train_p']:.1e}) "
        f"while the validation loss{label} made no progress over {g['evaluations']} evaluations "
        f"(Kendall p={g['val_p']:.2g} for a fall; {g['val_fall']:.0%} down) at {g['gap_ratio']:.3g}x the "
        + (f"training loss (>= {GAP:g}x): " if g["gap_ratio"] >= GAP else
           f"training loss, its fall under 1/{CARRY:g} of the training loss's: ")
        + f"the gap widens{where}", {**base, **g, "kind": "gap_widens", "carry": CARRY})


#: The fewest evaluations an undone fall is read from: a gap widening at each of them is then 1 order
#: of at least 4! (exact p <= 1/24 < alpha).
UNDONE_EVALS = 4


def undone_few(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: EvalSets,
               base: dict[str, Any]) -> CurveVerdict | None:
    """Overfitting from 4 to 19 evaluations, too few after the minimum for the rise's own rank test:
    the gap between the held-out loss and the training loss (its median since the evaluation
    before) widened at every evaluation, exact p = 1/n! over the orders of its n values; and the
    held-out loss itself rose at each evaluation after its minimum (2 or more), by ``min_val_rise``
    of it, to end above its first value (it gave back its whole fall), the training loss at the end
    no higher than at that minimum. Monodepth's val 1.39 -> 1.30 -> 1.287 -> 1.32 -> 1.51 while
    train fell 1.87 -> 1.61: the gap -0.48 -> -0.41 -> -0.38 -> -0.31 -> -0.10."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: (kv[0] != "val_loss", kv[0])):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if not (UNDONE_EVALS <= vl.size < cfg.min_points and np.unique(vs).size == vs.size):
            continue
        i_min = int(np.argmin(vl))
        after = vl[i_min:]
        if not (after.size >= 3 and np.all(np.diff(after) > 0) and vl[-1] > vl[0]
                and vl[-1] - vl[i_min] >= cfg.min_val_rise * abs(vl[i_min])):
            continue
        t = _train_at(steps, x, vs)
        if t is None or not (t[-1] <= t[i_min] and np.all(np.diff(vl - t) > 0)):
            continue
        p = 1 / math.factorial(t.size)
        if p >= cfg.alpha:
            continue
        where = eval_set_said(name)
        return CurveVerdict(
            "overfitting", f"validation loss{where} rose from {vl[i_min]:.4g} at step {int(vs[i_min])} to "
            f"{vl[-1]:.4g} at each of its {after.size - 1} evaluations since, above its first {vl[0]:.4g}, "
            f"and its gap to the training loss widened at each of the {t.size} evaluations (exact "
            f"p={p:.2g} over their orders), in a short log of {x.size} points",
            {**base, "eval_set": name, "val_min": float(vl[i_min]), "val_min_step": int(vs[i_min]),
             "val_first": float(vl[0]), "val_last": float(vl[-1]), "val_rise": float(vl[-1] - vl[i_min]),
             "evals_after_min": int(after.size - 1), "evaluations": int(vl.size), "train_medians": t.tolist(),
             "gaps": (vl - t).tolist(), "gap_order_p": p, "few_evals": True, "kind": "short_val_undone",
             "step": int(vs[i_min])})
    return None


#: The fewest evaluations after the minimum, each above the one before, that ``turned_few`` reads: one
#: order of their k! (exact p = 1/5! = 0.008 at 5), below ``alpha`` whatever the rise's size.
TURNED = 5


def turned_few(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: EvalSets,
               base: dict[str, Any]) -> CurveVerdict | None:
    """Overfitting in a short log when the held-out loss rose at each of ``TURNED`` (5) evaluations or more
    after its minimum (exact p = 1/k!) while the training loss fell by ``min_drop`` of its level or more
    over the same steps: the two went opposite ways at every evaluation since, however small the rise
    (LLMs-from-scratch's GPT on one short story: val 6.134 -> 6.233 -> ... -> 6.452 over six
    evaluations while train fell 2.10 -> 0.39). A rise that size is no noise when it never once stops."""
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: (kv[0] != "val_loss", kv[0])):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        k = evals.rises_after_min(vl)
        if k < TURNED or np.unique(vs).size != vs.size or not 1 / math.factorial(k) < cfg.alpha:
            continue
        i_min = int(np.argmin(vl))
        t = _train_at(steps, x, vs)
        if t is None or not (t[i_min] > 0 and t[-1] <= (1 - cfg.min_drop) * t[i_min]):
            continue
        where = eval_set_said(name)
        p = 1 / math.factorial(k)
        return CurveVerdict(
            "overfitting", f"validation loss{where} rose from {vl[i_min]:.4g} at step {int(vs[i_min])} to "
            f"{vl[-1]:.4g}, at each of its {k} evaluations since (exact p={p:.2g} over their orders), while the "
            f"training loss fell from {t[i_min]:.4g} to {t[-1]:.4g}, in a short log of {x.size} points",
            {**base, "eval_set": name, "val_min": float(vl[i_min]), "val_min_step": int(vs[i_min]),
             "val_last": float(vl[-1]), "val_rise": float(vl[-1] - vl[i_min]), "evals_after_min": k,
             "evaluations": int(vl.size), "train_at_val_min": float(t[i_min]), "train_last": float(t[-1]),
             "val_perm_p": p, "few_evals": True, "kind": "short_val_turned", "step": int(vs[i_min])})
    return None


def _train_at(steps: np.ndarray, x: np.ndarray, vs: np.ndarray) -> np.ndarray | None:
    """The training loss at each evaluation: its median since the evaluation before (before the
    first, its last 5 points); None when an evaluation has no training point before it."""
    train = []
    for i, at in enumerate(vs):
        part = x[(steps <= at) & (steps > vs[i - 1])] if i else x[steps <= at][-5:]
        if part.size == 0:
            return None
        train.append(float(np.median(part)))
    return np.asarray(train)
