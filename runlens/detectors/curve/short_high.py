"""A short log that blew up: its loss grew tenfold along a trend, left its start tenfold at once, rose
at every line tenfold, ended a hundredfold above every earlier value, or climbed out of its level
tenfold over its last lines, in order; or its training and
held-out loss both ended an order of magnitude up (the weights blew up).

One training loss ten times its lowest may be one bad batch (a spike, ``loss_spikes``' call); a
held-out loss is measured on fixed data, so it rises tenfold only when the weights changed that much.
Both at once, at the end of the log, is a divergence however few the points (RAT-SQL's train loss
0.92 -> 2.30 -> 95.8 with its validation loss 3.54 -> 4.65 -> 112.6); so is both rising at every one
of the last three evaluations or more, each by ``min_val_rise`` at least.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.detectors.curve.params import CurveParams
from runlens.diagnosis import CurveVerdict
from runlens.stats.trend import Trend, trend

#: How far above its own minimum each loss must end: an order of magnitude, beyond minibatch noise.
BOTH_HIGH = 10.0


def both_high(steps: np.ndarray, x: np.ndarray, sets: dict[str, tuple[np.ndarray, np.ndarray]],
              base: dict[str, Any]) -> CurveVerdict | None:
    """The last training loss ``BOTH_HIGH`` times the lowest before it, and a held-out loss's last
    evaluation (at or after the training loss's lowest point) ``BOTH_HIGH`` times its own lowest before
    it (2 points each at least)."""
    if x.size < 2:
        return None
    low = float(np.min(x[:-1]))
    if not (low > 0 and float(x[-1]) >= BOTH_HIGH * low):
        return None
    at_low = int(steps[int(np.argmin(x[:-1]))])
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        if vl.size < 2 or int(vs[-1]) < at_low:
            continue
        vlow = float(np.min(vl[:-1]))
        if vlow > 0 and float(vl[-1]) >= BOTH_HIGH * vlow:
            return CurveVerdict(
                "diverged", f"the training loss ended at {x[-1]:.4g}, {x[-1] / low:.3g}x its lowest ({low:.4g}), and "
                f"the validation loss{'' if name == 'val_loss' else f' ({name})'} at {vl[-1]:.4g}, "
                f"{vl[-1] / vlow:.3g}x its lowest ({vlow:.4g}): a held-out loss rises that far only when the "
                "weights blew up, in a short log",
                {**base, "kind": "short_both_high", "both_high": BOTH_HIGH, "eval_set": name,
                 "orders_of_magnitude": math.log10(float(x[-1]) / low),
                 "val_orders_of_magnitude": math.log10(float(vl[-1]) / vlow), "step": int(steps[-1])})
    return None


def both_rising(cfg: CurveParams, steps: np.ndarray, x: np.ndarray,
                sets: dict[str, tuple[np.ndarray, np.ndarray]], base: dict[str, Any]) -> CurveVerdict | None:
    """The training loss and a held-out loss both in rising order over the last k evaluations (k >= 3,
    the training loss read at each evaluation's step), each ending ``min_val_rise`` above where the rise
    began: the two orders are independent under noise, so both in order has exact p = (1/k!)^2 (<=
    ``alpha``). A training loss that rises is no overfitting; with the held-out loss rising beside it
    the weights are getting worse on both sets at every evaluation (fast.ai's 0.37 -> 0.72 -> 0.81 ->
    1.05 with validation 0.33 -> 0.76 -> 0.81 -> 1.04, accuracy 0.92 -> 0.41)."""
    if x.size < 3:
        return None
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl)
        vs, vl = vs[ok], vl[ok]
        at = np.searchsorted(steps, vs, side="right") - 1
        keep = (at >= 0) & (vs <= steps[-1])
        at, vs, vl = at[keep], vs[keep], vl[keep]
        tl = x[at]
        if vl.size < 3 or np.unique(at).size < vl.size or np.any(vl <= 0) or np.any(tl <= 0):
            continue
        k = 1
        while k < vl.size and vl[-k - 1] < vl[-k] and tl[-k - 1] < tl[-k]:
            k += 1
        p = (1 / math.factorial(k)) ** 2
        rise, vrise = float(tl[-1] / tl[-k]) - 1, float(vl[-1] / vl[-k]) - 1
        if k < 3 or p > cfg.alpha or min(rise, vrise) < cfg.min_val_rise:
            continue
        where = "" if name == "val_loss" else f" ({name})"
        return CurveVerdict(
            "diverged", f"the training loss and the validation loss{where} both rose at each of the last {k - 1} "
            f"evaluations, in order over {k} ({tl[-k]:.4g} -> {tl[-1]:.4g}, {vl[-k]:.4g} -> {vl[-1]:.4g}; exact p={p:.2g} for both "
            "orders by chance): the weights got worse on both sets at every evaluation, in a short log",
            {**base, "kind": "short_both_rising", "eval_set": name, "evaluations_in_order": k, "p_value": p,
             "train_rise": rise, "val_rise": vrise, "step": int(vs[-k])})
    return None


def grown(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, t: Trend, base: dict[str, Any]) -> CurveVerdict | None:
    # An order of magnitude up, steadily, before the run was stopped.
    first, last = base["start_level"], base["final_level"]
    if not (first > 0 and last >= 10 * first and t.p_increasing < cfg.alpha_strong):
        return None
    return CurveVerdict(
        "diverged", f"the loss grew from {first:.4g} to {last:.4g} in {x.size} steps "
        f"(Kendall tau={t.tau:.2f}, p={t.p_increasing:.1e})",
        {**base, "orders_of_magnitude": math.log10(last / first), "kind": "short_growth",
         "step": int(steps[0])})


#: How far above its first value every later point of a short log must stay to have leapt: an order
#: of magnitude, which the minibatch noise of a logged loss does not reach, and no line came back.
LEAP = 10.0


def leapt(steps: np.ndarray, x: np.ndarray, base: dict[str, Any], alpha: float = 0.05) -> CurveVerdict | None:
    # Too few points for a trend test (:func:`grown`), or a jump that the start's median takes in:
    # every line after the first held ``LEAP`` times the first (GluonCV's CrossEntropy 19 -> 3e33 at
    # each of the next three batches). A lone high point that comes back is a spike, ``loss_spikes``'.
    first = float(x[0])
    if not (first > 0 and np.all(x[1:] >= LEAP * first)):
        return None
    # With 5 points or more, the lines after the jump must not fall along a trend: a first value
    # printed small (a running sum divided by the interval before the interval filled) followed by a
    # loss that falls is a healthy run, not a leap.
    if x.size >= 5 and trend(x[1:], steps[1:].astype(float)).p_decreasing < alpha:
        return None
    low = float(np.min(x[1:]))
    return CurveVerdict(
        "diverged", f"the loss jumped from {first:.4g} to at least {low:.4g} ({LEAP:g}x or more) at each of the "
        f"{x.size - 1} lines after the first, in a log of {x.size} points: none came back",
        {**base, "orders_of_magnitude": math.log10(low / first), "kind": "short_leap", "leap": LEAP,
         "step": int(steps[1])})


def climbed(steps: np.ndarray, x: np.ndarray, base: dict[str, Any]) -> CurveVerdict | None:
    # Three or four points, too few for a trend test: each above the one before and the last ``LEAP``
    # times the first (161.7, 1412.5, 3225.5; 1.2, 3.5, 40, 700): a loss multiplying at every line. A
    # rise at every point has p = 1/n! under noise; an order of magnitude over consecutive prints, none
    # coming back, is no hard batch (that is one high point, ``loss_spikes``').
    first = float(x[0])
    if not (first > 0 and np.all(np.diff(x) > 0) and float(x[-1]) >= LEAP * first):
        return None
    return CurveVerdict(
        "diverged", f"the loss rose at each of its {x.size} lines, from {first:.4g} to {x[-1]:.4g} "
        f"({x[-1] / first:.3g}x; >= {LEAP:g}x): it grows without bound, in a short log",
        {**base, "orders_of_magnitude": math.log10(float(x[-1]) / first), "kind": "short_climbed",
         "ended_high": LEAP, "step": int(steps[1])})


#: How far above every earlier point the last one must be to end a short log diverged: two orders
#: of magnitude, beyond what a noisy minibatch or a hard batch reaches (those are ``LEAP`` at most).
ENDED_HIGH = LEAP * LEAP


def ended_high(steps: np.ndarray, x: np.ndarray, base: dict[str, Any]) -> CurveVerdict | None:
    # The last lines blew up (LadderNet's train loss 0.16 -> 1.6e18 at its fifth epoch; a YOLO's
    # 11.7, 8.8, 8713, 15806): nothing after them says it came back, and losses a hundred times
    # their own maximum so far are not noise. The first point from which every loss is that high.
    tops = np.maximum.accumulate(x[:-1])
    lows = np.minimum.accumulate(x[::-1])[::-1][1:]
    hit = np.flatnonzero((tops > 0) & (lows >= ENDED_HIGH * tops))
    if not hit.size:
        return None
    j = int(hit[0]) + 1
    top, low = float(tops[j - 1]), float(lows[j - 1])
    tail = "the last" if j == x.size - 1 else f"each of the last {x.size - j}"
    return CurveVerdict(
        "diverged", f"{tail} of {x.size} losses is {low:.4g} or more, {low / top:.3g}x the largest before "
        f"({top:.4g}; >= {ENDED_HIGH:g}x): the run ended blown up",
        {**base, "orders_of_magnitude": math.log10(low / top), "kind": "short_ended_high",
         "ended_high": ENDED_HIGH, "step": int(steps[j])})


def ran_away(alpha: float, steps: np.ndarray, x: np.ndarray, base: dict[str, Any]) -> CurveVerdict | None:
    """The last m >= 2 of n >= 5 positive losses rose at each line, each above every value before them and
    each ``LEAP`` times the median of the values before them or more: the run ended climbing out of its
    level (MTT's distillation loss between 0.99 and 1.93 for seven prints, then 16.3 and 23.7 before
    its traceback). Under noise the last m points are the m largest, in rising order, with exact p =
    (n - m)! / n! (<= ``alpha``); an order of magnitude above the level is beyond minibatch noise. One
    high last point is a spike for all a log can show (``loss_spikes``'); a hundredfold jump needs no
    order (:func:`ended_high`)."""
    n = x.size
    if n < 5 or not np.all(x > 0):
        return None
    rising = 1
    while rising < n - 1 and x[-rising - 1] < x[-rising]:
        rising += 1
    for m in range(min(rising, n - 3), 1, -1):
        before, tail = x[:-m], x[-m:]
        level = float(np.median(before))
        p = math.factorial(n - m) / math.factorial(n)
        if p <= alpha and float(tail[0]) > float(before.max()) and float(tail[0]) >= LEAP * level:
            return CurveVerdict(
                "diverged", f"the last {m} of {n} losses rose at each line to {tail[-1]:.4g}, each above every "
                f"value before and {LEAP:g}x or more their median ({level:.4g}; exact p={p:.2g} for the last "
                f"{m} to be the largest, in order, by chance): the run ended climbing out of its level, in a short log",
                {**base, "orders_of_magnitude": math.log10(float(tail[0]) / level), "kind": "short_ran_away",
                 "ended_high": LEAP, "tail_points": m, "p_value": p, "step": int(steps[n - m])})
    return None


def blew_up_signed(steps: np.ndarray, x: np.ndarray, base: dict[str, Any]) -> CurveVerdict | None:
    # A loss that takes negative values has no ratio to its level, but its magnitude still says when it
    # blew up: from some line on it grew at every line and ended ``ENDED_HIGH`` squared (10^4) times the
    # largest magnitude before (a numpy regression's 3.49, -3.1e4, -3.3e12, -5.8e28). A signed loss
    # that crosses zero is near 0 now and then, so growth from one small value is not enough: the
    # growth must go on to the last line, and by four orders of magnitude.
    if x.size < 3 or not np.any(x < 0):
        return None
    mag = np.abs(x)
    rising = np.diff(mag) > 0
    j = x.size - 1
    while j > 1 and rising[j - 2]:
        j -= 1  # the first line of the growth that lasts to the end
    top = float(np.max(mag[:j]))
    if not (rising[j - 1] and top > 0 and float(mag[-1]) >= ENDED_HIGH * ENDED_HIGH * top):
        return None
    return CurveVerdict(
        "diverged", f"the loss's magnitude grew at each of its last {x.size - j} lines, to {x[-1]:.4g}, "
        f"{mag[-1] / top:.3g}x the largest before ({top:.4g}; >= {ENDED_HIGH * ENDED_HIGH:g}x): a loss that "
        "takes negative values has no ratio to its level, its size still blew up, in a short log",
        {**base, "orders_of_magnitude": math.log10(float(mag[-1]) / top), "kind": "short_blew_up_signed",
         "ended_high": ENDED_HIGH * ENDED_HIGH, "step": int(steps[j])})


def rose_throughout(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, base: dict[str, Any],
                    train_acc: tuple[np.ndarray, np.ndarray] | None = None) -> CurveVerdict | None:
    """The training loss higher at every line than at the one before, over the whole log (5 lines or
    more: exact p = 1/n! <= ``alpha_val`` under noise, whatever the distribution), and up by
    ``min_val_rise`` of its largest magnitude (a signed loss has no ratio to its level, its range
    still has a size): a minimized loss that rises at every line is being pushed away from its
    minimum (a learning rate too high, a sign error), not noisy (PU-Net's 13.41, 13.84, 14.25, 14.69,
    15.07). Not when a training accuracy printed over the same lines stays where it was
    (:func:`accuracy_held`): a model pushed away from its minimum gets fewer examples right, and one
    that still gets most of them right shows a running average settling from its first batch
    (PaddleClas's ``CELoss`` 0.018 -> 0.067 at ``top1`` 1.0 -> 0.97)."""
    n = x.size
    if n < 5 or not np.all(np.diff(x) > 0) or accuracy_held(steps, train_acc):
        return None
    p = 1 / math.factorial(n)
    top = float(np.max(np.abs(x)))
    rise = float(x[-1] - x[0]) / top if top > 0 else 0.0
    if p > cfg.alpha_val or rise < cfg.min_val_rise:
        return None
    return CurveVerdict(
        "diverged", f"the loss rose at each of its {n - 1} lines after the first, {x[0]:.4g} -> {x[-1]:.4g} "
        f"({rise:.0%} of its largest magnitude; exact p={p:.2g} for that order by chance): a minimized loss "
        "moving away from its minimum at every line, in a short log",
        {**base, "kind": "short_rose_throughout", "p_value": p, "rise": rise, "step": int(steps[0])})


#: The share of the examples a training accuracy must lose over a rising loss's lines for the rise to be
#: the model getting worse: one in ten, the gap :mod:`memorized` reads as a held-out set's cost.
ACC_LOST = 0.10
#: The least accuracy at every line that says the model gets most of its examples right.
MOSTLY_RIGHT = 0.5


def accuracy_held(steps: np.ndarray, train_acc: tuple[np.ndarray, np.ndarray] | None) -> bool:
    """Whether a training accuracy (fractions) printed at 3 lines or more over ``steps``' span is at
    ``MOSTLY_RIGHT`` or more at each and never ``ACC_LOST`` under its best."""
    if train_acc is None or not steps.size:
        return False
    ts, ta = train_acc
    inside = (ts >= steps[0]) & (ts <= steps[-1]) & np.isfinite(ta)
    a = ta[inside]
    return a.size >= 3 and float(np.min(a)) >= MOSTLY_RIGHT and float(np.max(a) - np.min(a)) < ACC_LOST


#: A loss this large is an overflow on its way: float32 ends at 3.4e38, and the gradient of a loss of
#: 1e30 (its square roots, its products with inputs) leaves no finite update a step or two on.
OVERFLOW = 1e30


def near_overflow(steps: np.ndarray, x: np.ndarray, base: dict[str, Any]) -> CurveVerdict | None:
    """The last line's loss at ``OVERFLOW`` in magnitude or beyond, from 1 line: no objective a model
    is trained on has such a value unless it blew up (a regression's ``cost 5.4e74`` by gradient
    descent with unscaled inputs); no trend or start is needed, the level says it."""
    if not x.size or not abs(float(x[-1])) >= OVERFLOW:
        return None
    at = x.size - 1
    while at > 0 and abs(float(x[at - 1])) >= OVERFLOW:
        at -= 1
    return CurveVerdict(
        "diverged", f"the loss ends at {x[-1]:.4g}, beyond {OVERFLOW:.0e} in magnitude"
        + ("" if at == x.size - 1 else f" at each of its last {x.size - at} lines")
        + f" (float32 overflows at 3.4e38): the run blew up, in a log of {x.size} points",
        {**base, "kind": "short_near_overflow", "overflow": OVERFLOW, "step": int(steps[at])})
