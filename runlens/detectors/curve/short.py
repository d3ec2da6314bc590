"""The curve verdict of a short log: fewer than ``min_points`` finite training losses.

Too few points for the shape tests of a long curve, but not for every
claim: a per-epoch log of a dozen epochs (Keras, a paste in an issue) is
often as clear as a long one. Only claims that such few points can carry
are made, each with a test that is exact at that size; otherwise the
verdict stays ``insufficient_data``. Functions of the classifier's
parameters (:class:`~runlens.detectors.curve.params.CurveParams`). The
readings, in the order they are tried (the first that holds is the verdict):

- underfitting when the loss is stuck (4 points or more): every value
  printed the same, or within ``ALIKE`` (a thousandth) of its level with
  no Kendall trend (p >= ``alpha``), wherever the log starts; or all
  within ``stuck_band`` of its level with no such trend when that says
  more than convergence: at ln K, from the start of training, or across single steps (a
  minibatch's loss is noisier than that unless the outputs no longer
  depend on the inputs; a band of epoch averages that begins mid-run is a
  plateau or a converged run, not judged; nor is a band over which the
  logged learning rate fell at every value by ``ANNEAL``, 10x, or more:
  a schedule decaying to its end flattens the loss); at ln K (K stated or guessed
  from the level: every point within its tolerance, or, from 4 points, the
  median within it and every point within ``stuck_band`` of ln K, minibatch
  noise about the prior, with or without a trend, or the mean within
  ``stuck_band`` of ln K by two one-sided t-tests at ``alpha`` with no
  downward Kendall trend at ``alpha``: one epoch's average off the band
  moves the mean by its share only) the evidence says so and
  ``loss_at_chance`` fires too (``kind: short_stuck``). Three values printed alike, to a thousandth of their
  (non-zero) level or finer, or within ``EXACT_RESOLUTION`` (1e-5) of it by a print ten times finer, are
  stuck too: a loss that trains moves by more than its last digit in an epoch; printed alike more coarsely than ``FROZEN_RESOLUTION`` of
  the level, they are a band (stuck only where a band is);
- underfitting when the validation loss is printed alike (to a thousandth
  of its level or finer) at every one of 2 or more evaluations at
  different steps while the training loss fell less than ``min_drop``, or
  at 3 or more whatever the training loss did: a fixed validation set
  gives the same loss only to the same weights, so what is evaluated did
  not change (``kind: short_frozen_validation``);
- underfitting when a held-out loss sits at ln K at each of 3 or more
  evaluations (all within the chance tolerance; with K guessed from the
  level, within ``GUESSED_SPREAD`` of ln K of each other and either 4
  evaluations or more from the first on, or too close to ln K for a
  coincidence at ``COINCIDENCE_ALPHA``): nothing learned carries to unseen
  data (``kind: short_validation_at_chance``);
- underfitting when the last half of the losses (3 at least) sit at ln K
  by the same test, whatever came before: the model ended predicting the
  prior (``kind: short_chance_tail``; ``loss_at_chance`` fires too); then
  a held-out loss alike from the start (:mod:`.short_stuck`, as its other two);
- underfitting when the last two thirds of the points (6 at least) stay
  within ``ALIKE`` (a thousandth) of their level with no Kendall trend at
  ``alpha``, whatever fall came before: the loss stopped there; 6 last points or more printed exactly
  alike, by a print that resolves ``EXACT_RESOLUTION`` of the level, need no share of the log (``kind: short_stuck_tail``);
- underfitting when the logged learning rate is above 0 and at most
  ``VANISHED_LR`` (1e-12) at each of its last half of values (2 at least;
  a printed 0 may be a rate rounded away): no float32 weight moves at that rate, whatever the loss's noise shows (``kind:
  short_lr_vanished``);
- underfitting when the training accuracy (else the held-out one) is printed
  alike (to a thousandth or finer) at its last ``FROZEN`` (4) points or more,
  below ``FIT``, while the training loss over the same steps moved by
  ``min_drop`` of its level's size (a signed loss too): the predictions do not change though
  the loss does, the model predicts one class whatever it is shown
  (``kind: short_frozen_accuracy``);
- underfitting when the training accuracy is at most ``NEAR_ZERO`` (5%)
  at each of its 6 points or more, with no upward Kendall trend at
  ``alpha``, while the loss over the same steps fell by less than
  ``min_drop``, nor by it along a downward Kendall trend at ``alpha`` (``kind: short_accuracy_near_zero``);
- underfitting when the last losses (4 at least, 3 of them different)
  repeat value for value those printed some points before them: the
  same batches gave the same losses, the weights did not change
  (``kind: short_repeated``);
- underfitting when the loss fell ``COLLAPSE`` (1000x) or more in one
  interval, from a positive level, and every later point (2 at least,
  or a last one of exactly 0) stayed that low: no training signal is
  left, not learning (``kind: short_collapsed``);
- underfitting when the last half of the losses (1 at least) sit at ln 2
  while a ROC AUC sits within ``AUC_CHANCE`` of 0.5: a binary model that
  ranks like a coin (``kind: short_chance_by_auc``); or when a word or
  character error rate is exactly 100% at each of 3 points or more while the
  loss fell by less than half: an empty output (``kind: short_empty_output``);
  or when the training loss is a framework's clip cost (-ln 1e-7 = 16.118 in
  Keras, 100 in PyTorch's ``BCELoss``) times the error rate, within 3%, at
  every point with an accuracy (1 at least): every output saturated at 0 or 1
  (:mod:`.saturated`, ``kind: short_saturated``); or when a Matthews correlation
  or Cohen's kappa is exactly 0 at each of 3 evaluations or more: every
  prediction one class (``kind: short_no_agreement``); or when a part of the loss the
  trainer prints beside it (``hm_loss``) is printed alike, finer than a hundredth,
  at each of its last 3 points or more and is half the training loss or more
  there: a head whose outputs no longer depend on the batch (:mod:`.frozen_part`,
  ``kind: short_frozen_part``); or when a gradient norm that was positive is exactly 0
  at each of its last 3 values or more while the loss beside it is non-zero with no
  Kendall trend at ``alpha``: no gradient reaches the weights (:mod:`.no_gradient`,
  ``kind: short_no_gradient``; a norm of 0 from its first value is one the trainer did
  not compute);
- diverged when the last training loss is 10x the lowest before it and a
  held-out loss's last evaluation 10x its own lowest (``kind:
  short_both_high``, from 2 points each: :mod:`.short_high`), or when both
  are in rising order over the last 3 evaluations or more, each up by
  ``min_val_rise`` (exact p = (1/k!)^2: ``kind: short_both_rising``);
- with 5 points or more: diverged when the last value is >= 10x the start
  (median of the first 3) with an upward Kendall trend at
  ``alpha_strong``, or the last values are each 100x or more every value
  before them (``kind: short_ended_high``, with 3 points or more), or the last 2 or more rose in order,
  each above every value before and 10x their median (exact p = (n-m)!/n! <= ``alpha``:
  ``kind: short_ran_away``), or, for a loss that takes
  negative values, when its magnitude grew at every line from some line to the last and ended 10^4
  times the largest magnitude before (``kind: short_blew_up_signed``, with 3 points or more: a
  signed loss has no ratio to its level), or when the loss rose at every
  line over the whole log, by ``min_val_rise`` of its largest magnitude
  (exact p = 1/n! <= ``alpha_val``: ``kind: short_rose_throughout``; not while a training accuracy printed over
  those lines stays at ``MOSTLY_RIGHT``, 0.5, or more and within ``ACC_LOST``, 0.1, of its best), or when every point of the
  last third (2 at least), after the minimum, is above the start by
  ``growth`` of it (it gave back all its progress and stayed there);
- unstable when the loss moves by 10x or more from one point to the next
  three times or more, at least once up and once down (each swing reaching
  ``VISIBLE``, a thousandth, of the largest loss, training or validation) with no downward Kendall trend
  at ``alpha`` (``kind: short_swings``: an order of magnitude up and back,
  beyond minibatch noise, is neither a spike nor a divergence);
- overfitting by the same validation test as a long curve (a rise at each
  of 4 evaluations or more after the minimum is enough whatever the fall
  before it: ``val_give_back`` needs a noise estimate a few evaluations do
  not give), with the training loss at its end no higher than at the
  validation minimum (from 2 training points);
- overfitting when a held-out loss undid its fall (``kind:
  short_val_undone``, 4 to 19 evaluations): its gap to the training loss
  widened at every evaluation (exact p = 1/n! over the orders of its n
  values), and it rose at each of 2 or more evaluations after its
  minimum, by ``min_val_rise`` of it, to end above its first evaluation;
- overfitting when a held-out loss rose at each of 5 evaluations or more
  after its minimum (exact p = 1/k!) while the training loss fell by
  ``min_drop`` over the same steps (``kind: short_val_turned``);
- overfitting when the model memorized its data (``kind: short_memorized``,
  from 2 points): at each of the last 2 or more evaluations the held-out
  error rate (1 - accuracy) is ``ERROR_RATIO`` (10x) the training one or
  more, the validation accuracy ``ACC_GAP`` (0.10) below the training
  accuracy and the validation loss ``LOSS_RATIO`` (10x) the training loss
  or more, the validation loss not ``min_drop`` lower at the last of them
  than at the first, or ending above the log's first evaluation (a paste of the last epochs of a run that overfit
  shows the gap, not the rise; a loss ratio alone can be two
  normalisations, so the accuracies must say it too);
- unstable when the validation loss (6 evaluations or more) rises at least
  twice and falls at least twice by 3x or more from one evaluation to the
  next (``kind: short_val_swings``);
- overfitting when a held-out loss stands at ``MANYFOLD`` (2x) its minimum or more at each of the 2
  evaluations or more after it, with no such jump before it nor fall after it, and the training loss
  at its end no higher than at that minimum: a rise by effect size where a rank test has no power
  (``kind: short_overfitting_manyfold``);
- overfitting when the gap widens (``kind: gap_widens``): over 5
  evaluations or more the validation loss made no progress at all
  (no downward Kendall trend at ``alpha``, and less than ``min_drop`` down
  from the median of its first 3 to that of its last 3) while the training loss over the same steps fell by
  ``min_drop`` along a downward trend at ``alpha``, the validation loss
  staying twice the training loss or more (or down by under a quarter of
  the training loss's relative fall, ``CARRY``); from 2 to 4 evaluations, too
  few for a trend, when the validation loss rose from each evaluation to
  the next while the training loss (its median since the evaluation
  before) fell by ``min_drop`` from the first to the last, the
  validation loss twice the training loss or more at each, or their
  ratio grown twice or more with the validation loss up by
  ``min_val_rise`` (from 2 training points);
- healthy when the loss fell by ``min_drop`` or more with a downward
  Kendall trend at ``alpha_strong`` (only a nearly monotone fall reaches it
  at this size) and its last third moves at most ``settle_ratio`` as much
  per step as its first;
- underfitting when the log starts at the start of training (its first
  point within one logging interval of step or epoch 0), covers at least
  4 epochs or 500 optimizer steps (longer than a usual warmup), and the
  median of the loss's last fifth (2 at least) is within ``min_drop`` of
  the lower of its first point and the median of its first 3 and not that
  far below its first point (levels, not extremes: one minibatch far below
  is noise), or no point after the first is below it at all; no held-out
  loss fell by that much; and the loss has no downward Kendall trend at
  ``alpha_strong`` and does not fall at every point (a nearly monotone fall
  is progress, however slow, unless it crawls: under ``min_drop / 10`` over
  the whole span, which ten times the span would not take down ``min_drop``;
  ``crawl`` in the evidence) (``kind: short_no_progress``): a model that
  learns falls fastest at the start. A log that begins mid-run may be a plateau,
  a log counted in rows does not say where it begins, and a logged rate that
  rose over the log and never fell is a warmup not yet over: none is judged;
- with 3 points or more: diverged when every point after the first is at
  least 10x the first (``kind: short_leap``: the loss left its start by an
  order of magnitude at the first line logged after it and never came
  back; tried after ``short_ended_high`` with 5 or more), or, with 3 or 4,
  when the last is 100x every point before it, or when the loss rose at
  every point to 10x its first (``kind: short_climbed``);
- when none of the above holds, diverged, from 1 point, when the last loss
  is 1e30 or more in magnitude (``kind: short_near_overflow``: float32 ends
  at 3.4e38, and no objective holds such a value unless it blew up).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from runlens.detectors.curve.diverged import blown_verdict
from runlens.detectors.curve.features import NOTHING_ELSE, Printed
from runlens.detectors.curve.frozen_part import frozen_part
from runlens.detectors.curve.memorized import Accuracies, accuracy_near_zero, frozen_accuracy, memorized
from runlens.detectors.curve.no_gradient import no_gradient
from runlens.detectors.curve.params import CurveParams
from runlens.detectors.curve.saturated import saturated
from runlens.detectors.curve.short_high import (
    LEAP,
    blew_up_signed,
    both_high,
    both_rising,
    climbed,
    ended_high,
    grown,
    leapt,
    near_overflow,
    ran_away,
    rose_throughout,
)
from runlens.detectors.curve.short_level import (
    annealed,
    chance_tail,
    collapsed,
    frozen_validation,
    lr_vanished,
    no_progress,
    repeated,
    validation_chance,
)
from runlens.detectors.curve.short_level import (
    identical as _identical,
)
from runlens.detectors.curve.short_overfit import manyfold, overfit_few
from runlens.detectors.curve.short_stuck import (
    alike_tail,
    chance_by_accuracy,
    chance_by_auc,
    empty_output,
    no_agreement,
    validation_alike_from_start,
    zero_from_start,
)
from runlens.detectors.curve.short_stuck import stuck as _stuck
from runlens.detectors.curve.validation import (
    gap_verdict,
    turned_few,
    undone_few,
)
from runlens.diagnosis import CurveVerdict
from runlens.signals.series import Series
from runlens.stats.trend import Trend, trend


def short(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, sets: dict[str, tuple[np.ndarray, np.ndarray]],
          classes: tuple[int | None, str | None] = (None, None), index: str = "step",
          lr: Series | None = None, acc: Accuracies = (None, None), printed: Printed = NOTHING_ELSE) -> CurveVerdict:
    grads_broke, auc, rate, parts, agreement, grads = printed
    annealing = annealed(steps, lr)  # both stuck readings ask; the rate is scanned once
    stuck = _stuck(cfg, steps, x, classes, index, annealing) if x.size >= 4 or _identical(x) else None
    if stuck is None and x.size >= 2:
        stuck = (frozen_validation(cfg, steps, x, sets) or validation_chance(x, sets, classes) or chance_tail(steps, x, classes)
                 or validation_alike_from_start(cfg, steps, x, sets, index)
                 or alike_tail(cfg.alpha, steps, x, annealing) or lr_vanished(steps, x, lr) or frozen_accuracy(cfg, steps, x, acc)
                 or accuracy_near_zero(cfg, steps, x, acc) or zero_from_start(steps, x, index)
                 or chance_by_accuracy(steps, x, acc, classes[0])
                 or repeated(steps, x) or collapsed(cfg, steps, x, sets, grads_broke) or frozen_part(steps, x, parts)
                 or no_gradient(steps, x, grads, cfg.alpha))
    # from one or two points
    stuck = (stuck or chance_by_auc(steps, x, auc) or empty_output(steps, x, rate) or saturated(steps, x, acc)
             or no_agreement(steps, x, agreement))
    if stuck is not None:
        return stuck
    base: dict[str, Any] = {"points": int(x.size), "n_points": int(x.size), "short_log": True,
            "start_level": float(np.median(x[:3])) if x.size else math.nan,
            "final_level": float(x[-1]) if x.size else math.nan, "min_level": float(np.min(x)) if x.size else math.nan}
    if (blown := both_high(steps, x, sets, base) or both_rising(cfg, steps, x, sets, base)) is not None:
        return blown
    if x.size >= 5:
        t = trend(x, steps.astype(float))
        base["trend"] = t.to_dict()
        verdict = (grown(cfg, steps, x, t, base) or ended_high(steps, x, base) or ran_away(cfg.alpha, steps, x, base)
                   or blew_up_signed(steps, x, base)
                   or blown_verdict(steps, x, base)
                   or leapt(steps, x, base, cfg.alpha) or rose_throughout(cfg, steps, x, base, acc[0])
                   or _given_back(cfg, steps, x, base)
                   or _swings(cfg, steps, x, t, base, sets) or overfit_few(cfg, steps, x, sets, base)
                   or undone_few(cfg, steps, x, sets, base) or turned_few(cfg, steps, x, sets, base) or memorized(cfg, steps, x, sets, acc, base) or _val_swings(sets, base)
                   or manyfold(steps, x, sets, base)
                   or gap_verdict(cfg, steps, x, sets, base, ", in a short log") or _settled(cfg, steps, x, t, base)
                   or no_progress(cfg, steps, x, t, base, sets, index, lr))
        if verdict is not None:
            return verdict
    elif x.size >= 3 and (verdict := leapt(steps, x, base) or ended_high(steps, x, base)
                          or climbed(steps, x, base) or blew_up_signed(steps, x, base)
                          or blown_verdict(steps, x, base)) is not None:
        return verdict
    elif x.size >= 2 and (verdict := overfit_few(cfg, steps, x, sets, base) or undone_few(cfg, steps, x, sets, base)
                          or gap_verdict(cfg, steps, x, sets, base, ", in a short log")) is not None:
        # A held-out rise needs the evaluations, not many training points: the training loss at
        # the validation minimum and at the end say whether it kept falling.
        return verdict
    elif x.size >= 2 and (verdict := memorized(cfg, steps, x, sets, acc, base) or manyfold(steps, x, sets, base)) is not None:
        return verdict
    if (overflowing := near_overflow(steps, x, base)) is not None:
        return overflowing  # the other readings say more (a leap, a growth) when they hold
    return CurveVerdict("insufficient_data", f"only {x.size} finite training loss{'' if x.size == 1 else 'es'} (< {cfg.min_points}): too few "
                        "for the curve's shape; the point detectors still judge them",
                        {"finite_points": int(x.size), "min_points": cfg.min_points})


#: The share of the curve's largest value a swing must reach to count: below it the loss is at zero
#: on the curve's own scale, and its ratios are rounding.
VISIBLE = 1e-3


def _swings(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, t: Trend, base: dict[str, Any],
            sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> CurveVerdict | None:
    # Up or down by an order of magnitude three times or more, both ways, with no downward trend: not a
    # spike (up once, back once) nor a divergence (it comes back), the loss of steps too large to settle
    # (DeepGLR's per-epoch 5.5e3, 1.1e8, 3.4e5, 4.5e4, 4.2e3, ... 4.9e6, 2.2e3; BiSeNet's 1.3e8, 4.6e4,
    # 3.1e5, 2.0e4, 1.5e8). ``LEAP`` is beyond minibatch noise.
    r = np.diff(np.log(np.clip(x, np.finfo(float).tiny, None)))
    # A swing between values all below a thousandth of the run's largest loss, the validation loss's
    # included (the same loss on other data), is not seen on its scale: a loss that prints 1e-5, 1e-6
    # is converged, one swinging from 1e-7 to 2e-4 beside a validation loss of 1.17 memorized.
    held = [float(np.max(v[np.isfinite(v)])) for _, v in sets.values() if np.isfinite(v).any()]
    seen = np.maximum(x[1:], x[:-1]) >= VISIBLE * max([float(np.max(x)), *held])
    ups, downs = int(np.sum((r >= math.log(LEAP)) & seen)), int(np.sum((r <= -math.log(LEAP)) & seen))
    if min(ups, downs) < 1 or ups + downs < 3 or not np.all(x > 0) or t.p_decreasing < cfg.alpha:
        return None
    big = float(np.exp(np.max(np.abs(r))))
    return CurveVerdict(
        "unstable", f"the loss rose {ups} times and fell {downs} times by {LEAP:g}x or more from one point to the "
        f"next (up to {big:.3g}x) over {x.size} points, with no downward trend (Kendall p={t.p_decreasing:.2g}): "
        "it swings, in a short log", {**base, "swings_up": ups, "swings_down": downs, "swing": LEAP,
                                      "largest_ratio": big, "kind": "short_swings", "step": int(steps[int(np.argmax(r)) + 1])})


def _given_back(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, base: dict[str, Any]) -> CurveVerdict | None:
    # Every point of the last third above the start by ``growth`` of it, after the minimum:
    # the run gave back all its progress and more, and stayed there (no single outlier can).
    S, m = base["start_level"], base["min_level"]
    k = max(2, math.ceil(x.size / 3))
    bound = S + cfg.growth * abs(S)
    # A level the loss had already reached before its minimum is a swing it came back to, not one it
    # moved away to (a GAN's sum of players swinging 4, 18, 3, 5, 14, 14).
    low = int(np.argmin(x))
    # A series that crosses zero (a reward read through its negative) has no start to measure a share of.
    if bool(np.any(x < 0)) and bool(np.any(x > 0)):
        return None
    if not (low < x.size - k and np.all(x[-k:] >= bound) and S > m
            and float(np.max(x[:low + 1])) < float(np.min(x[-k:]))):
        return None
    return CurveVerdict(
        "diverged", f"the loss ended at {x[-1]:.4g}, above its start {S:.4g} by more than {cfg.growth:.0%}, "
        f"after its minimum {m:.4g}: each of the last {k} of {x.size} points gave back all the progress and "
        "more", {**base, "last_points_above": k, "bound": bound, "kind": "short_given_back",
                 "step": int(steps[int(np.argmin(x))])})


#: The factor a validation loss must move by, up and down, twice each, to swing: the noise of
#: evaluating one fixed set does not multiply or divide it by 3 from one evaluation to the next.
SWING = 3.0


def _val_swings(sets: dict[str, tuple[np.ndarray, np.ndarray]], base: dict[str, Any]) -> CurveVerdict | None:
    # Not a trend (overfitting rises and stays): the held-out loss goes up and back down by a
    # factor, again and again (0.58 -> 2.30 -> 0.17 -> 1.52 -> 0.14 -> 2.81 over six epochs).
    for name, (vs, vl) in sorted(sets.items(), key=lambda kv: kv[0] != "val_loss"):
        ok = np.isfinite(vl) & (vl > 0)
        if ok.sum() < 6:
            continue
        r = np.diff(np.log(vl[ok]))
        ups, downs = int(np.sum(r >= math.log(SWING))), int(np.sum(r <= -math.log(SWING)))
        if ups < 2 or downs < 2:
            continue
        big = float(np.exp(np.max(np.abs(r))))
        return CurveVerdict(
            "unstable", f"the validation loss{'' if name == 'val_loss' else f' ({name})'} rose {ups} times and "
            f"fell {downs} times by {SWING:g}x or more from one evaluation to the next (up to {big:.3g}x) over "
            f"{int(ok.sum())} evaluations: it swings, where a fixed set's evaluation noise does not, in a short log",
            {**base, "eval_set": name, "swings_up": ups, "swings_down": downs, "swing": SWING,
             "largest_ratio": big, "kind": "short_val_swings", "step": int(vs[ok][0])})
    return None


def _share(r: float) -> str:
    """A ratio as a percentage a reader can compare: ``0.3%``, not a rounded ``0%``."""
    return f"{r:.0%}" if r >= 0.01 else f"{r:.1%}" if r >= 0.001 else "under 0.1%"


def _settled(cfg: CurveParams, steps: np.ndarray, x: np.ndarray, t: Trend, base: dict[str, Any]) -> CurveVerdict | None:
    # Fell, near-monotonically (p < alpha_strong is only reachable at this size when
    # nearly every step goes down: minibatch noise cannot), and slowed down.
    S = base["start_level"]
    drop = (S - float(np.median(x[-max(2, x.size // 5):]))) / abs(S) if S else 0.0
    k = max(2, x.size // 3)
    first, last = np.abs(np.diff(x[:k + 1])).mean(), np.abs(np.diff(x[-k - 1:])).mean()
    if not (t.p_decreasing < cfg.alpha_strong and drop >= cfg.min_drop and last <= cfg.settle_ratio * first):
        return None
    return CurveVerdict(
        "healthy", f"the loss fell by {drop:.0%} in {x.size} points (Kendall tau={t.tau:.2f}, "
        f"p={t.p_decreasing:.1e}) and slowed: its last steps move {_share(last / first)} as much as its first",
        {**base, "relative_drop": drop, "kind": "short_settled", "step": int(steps[0])})
