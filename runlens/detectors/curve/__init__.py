"""The curve verdict: one label for the shape of the training (and validation) loss.

The classifier is a registered step (code ``curve``) that publishes a
:class:`~runlens.diagnosis.CurveVerdict` instead of findings; detectors that
read the label declare ``depends = ("curve",)``. Its documentation is the
class docstring below; the decision is staged by label, one module each
(:mod:`.diverged`, :mod:`.unstable`, :mod:`.validation` for overfitting and
validation jumps, :mod:`.underfitting`, :mod:`.short` for a log too short for
a shape), over the features of :mod:`.features` and the pure tests of
:mod:`runlens.stats`. :mod:`.finding` is what the label detectors share.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from runlens.detectors._base import Context, Detector, Interval, Needs, register
from runlens.detectors._bugs import ACCURACY_COLUMNS, VAL_ACCURACY_COLUMNS
from runlens.detectors.curve import features as shape
from runlens.detectors.curve import memorized
from runlens.detectors.curve.diverged import (
    beyond_any_vocabulary,
    diverged,
    ended_exploding_verdict,
    held_out_beyond_vocabulary,
    masked_nan,
    stated_by_the_loop,
)
from runlens.detectors.curve.frozen_part import loss_parts
from runlens.detectors.curve.lacking import no_training_loss
from runlens.detectors.curve.memorized import accuracies
from runlens.detectors.curve.short import short
from runlens.detectors.curve.short_stuck import evaluations_frozen
from runlens.detectors.curve.underfitting import fell_by, progress_lost, progressed, underfitting
from runlens.detectors.curve.unstable import late_noise, level_shift_verdict, unstable
from runlens.detectors.curve.val_undone import gave_back_all
from runlens.detectors.curve.validation import overfitting, val_unstable
from runlens.diagnosis import CurveVerdict
from runlens.signals import signals_of
from runlens.stats import chance

if TYPE_CHECKING:
    from runlens.io.run import Run

# Of the layers only the step sizes: the per-layer gradient norms (for a NaN
# masked as 0) are read when a detector that needs them loaded them; a log
# of scalars only has its global grad_norm.
NEEDS = Needs(scalars=("loss", "lr", "step_skipped", "grad_norm", *shape.CLASS_COLUMNS, *shape.LABEL_COLUMNS,
                       *ACCURACY_COLUMNS, "*acc*", "*auc*", "*auroc*", "*wer*", "*cer*"),
              layers=("weight_norm", "update_norm"),
              evals=("val_loss", "val_loss@*", *VAL_ACCURACY_COLUMNS, "*acc*", "*auc*", "*auroc*", "*wer*", "*cer*"),
              events=("step", "kind", "message"))

# Kept importable from here: tests and tools read it as the curve's own.
chance_level = chance.chance_level
_ev = shape.curve_evidence


@register
class CurveClassifier(Detector):
    """The curve verdict: one label for the shape of the training (and validation) loss.

    What it detects:
        Which of the spec's shapes the loss curve has: ``diverged`` (the loss
        became NaN/Inf, collapsed to exactly 0 while the gradients became
        non-finite, or grew without bound), ``unstable`` (it oscillates, keeps
        wandering, or jumped up to a higher level and stayed there, but stays
        finite), ``overfitting`` (the training loss keeps falling while the
        validation loss of some eval set passed a minimum and rises after it),
        ``underfitting`` (the loss barely moved, or sits at chance level
        ln K), ``healthy`` (it fell and settled), or ``insufficient_data``
        (no training loss, or fewer than ``min_points`` finite losses whose
        few points carry none of the short-log claims below: too few for a
        *shape*; the point detectors still run on them).
        Labels are checked in that order of precedence: a NaN makes every other
        signal meaningless, and an unstable curve's train/val gap means nothing.
        Every label but ``healthy`` and ``insufficient_data`` is also a finding
        of its own code (``diverged`` an error, the others warnings), and a
        loss at chance level is the ``loss_at_chance`` finding.

    Why it matters:
        The shape of the curve is the first thing an engineer looks at and the
        frame for every finding: a vanishing gradient in a diverged run is a
        symptom, in an underfitting run a cause.

    How it decides:
        The loss is read up to the first non-finite value (a step the loss
        scaler skipped does not count). Levels are medians: the start level
        ``S`` over the first 5 steps (or the very first loss if lower), the end
        level ``E`` over the last 10%, the final level ``F`` over the last 2%,
        the minimum ``m`` of the curve downsampled to bucket medians; ``D`` is
        the robust sd (1.4826 MAD) of the last third, around its own
        Theil-Sen line when the loss still falls there (one-sided Kendall
        p < ``alpha``, the line falling by at least the values' spread): a
        fall through the last third is progress, not spread.

        - diverged: a non-finite loss; a loss that drops to exactly 0 where the
          gradient norm becomes non-finite (a masked NaN), or where it becomes
          exactly 0 too and both stay 0 to the end, from a loss at least a
          tenth of its highest (no signal left; a loss that trains to 0 gets
          there by orders of magnitude); by magnitude, a
          positive loss whose last 3 values are all >= 10 ``max(S, m)`` (the
          evidence gives the orders of magnitude), or the log ending on 1-2
          such values while the gradient norm there is >= 10x its median
          before (the run stopped as it blew up); or, after its minimum, a
          significant upward Mann-Kendall trend (one-sided p < ``alpha_strong``)
          or a level shift (below) that gave back all its progress and more,
          ``F - m >= max(S - m, growth * |S|)`` (for a shift, its new level);
          or a loss read from a perplexity (the log of ``ppl``) whose last
          third, at any length, is above ln 10^7: worse than guessing
          uniformly over any vocabulary (``kind: beyond_any_vocabulary``), or a held-out
          perplexity above 10^7 or infinite at its last evaluation (``kind: held_out_beyond_vocabulary``);
          or a run whose training code says in its own words that the loss blew up ("Loss exploded",
          "cost seems to be exploding", "Model diverged", TF's "Model diverged with loss = NaN."
          read as a non-finite loss) and went no further: it crashed, or nothing trained after the
          words (``kind: stated_by_the_loop``); or died of a check on a NaN ("underflow in dt nan":
          ``kind: died_nonfinite``); or, in a log of any length, two points in a row each ``BLOWUP``
          (1000) times the largest value before them and no point from there on back at that value:
          the loss blew up three orders of magnitude and never returned to the range it trained in,
          whatever it did next (a reset to ln K, a slow fall from 1e11; ``kind: blew_up_for_good``).
          A spike, or a blow-up the run recovered from, comes back.
        - unstable: a level shift: after the minimum, the bucket medians jump
          up (Mann-Whitney p < ``alpha_strong``, at least 6 noise sd and a
          quarter of the progress before it, half of it within 3 buckets), the
          stretch after it settles (climbs less than half the jump), and the
          loss never comes back
          (a jump without recovery is not underfitting); or the late third of
          the training loss does not settle (its differenced variance is not
          significantly below ``settle_ratio`` of the middle third's, Levene)
          and either its fluctuations dwarf the progress (``(S - E) / D <
          min_progress`` with ``D >= dispersion * |S|``, on a loss that made
          progress (below), or whose steps are large (late update/weight
          above ``step_ratio``), or, where no step sizes were logged and the
          log holds one value per epoch (a pasted or imported per-epoch log,
          ``index_kind`` epoch), whose late spread ``D`` is at least ``swing``
          of the end level ``E``: jitter around a loss that never moved is
          underfitting, not instability (a batch of 4's mean jumps by its own
          level), but a per-epoch value averages its batches, so swings of a
          third of its level are the training's own; and not when the measured late
          steps are small, ``update_norm`` over the weights at most
          ``step_ratio / 10`` at the median module and ``step_ratio`` at
          the largest: weights that barely move cannot make the loss jump,
          so its spread is minibatch sampling; judged against the
          loss's own scale and progress, so a loss that fell 99% to near zero
          is not unstable for its relative jitter) or its level wanders beyond
          what independent minibatch noise allows (variance ratio of bucket
          means, chi-square p < ``alpha_strong``, ratio >= ``wander_ratio``,
          amplitude >= ``dispersion`` of the progress and 2% of ``E``, and p < ``alpha_strong``
          around the means' best monotone fit too: a loss that bends as it falls, a plateau
          ending in a late drop, is curved around a line, not wandering); or, in a log of one
          value per epoch with no step sizes logged, whatever the progress before, a late spread
          of at least ``swing`` of ``E`` (kind ``swinging``: an epoch's mean averages its batches); or, on
          a training loss that is not smooth itself (late differenced
          variance above ``1 / settle_ratio`` times the middle third's, or
          wandering with ratio >= ``wander_ratio`` and an amplitude of 2% of
          ``E``, each at p < ``alpha_strong``, the wandering in both halves
          of the late third), the validation loss jumps between evaluations by
          ``val_jumps`` of ``max(level, dispersion * progress)`` (progress
          from the median of the first three evaluations, or the training
          loss's fall from its start level to its minimum when larger: a
          validation loss evaluated seldom can be near zero from its first
          evaluation, and its jitter there is not instability; RMS of
          the residuals from a rolling median of 5; evaluations right after a
          training-loss spike left out; and at least half that without the
          evaluation of the largest residual: one bump is an event, not jumping; and, on a
          training loss only noisier late (not wandering), not while the validation loss still
          falls, ``min_drop`` below its start, along a downward Kendall trend at ``alpha`` over its
          later half, its low in that half's last third: a model learning through batch noise);
          or the validation loss jumps that much while the steps of the second half of the run change the
          weights by more than ``step_ratio`` of their norm (median over
          records of the median over modules of update/weight; ten times the
          1e-3 rule of thumb), or one module's by ``10 x step_ratio`` (its
          own median over those records: a tenth of its weights per step): a fixed validation set's loss jumps when the
          weights do, and steps that large are what make them (a too-high learning rate whose
          training loss looks settled). Evaluation noise alone, on a smooth training loss with
          ordinary steps, never makes a curve unstable.
        - progress comes first: the loss made progress when it fell by ``min_drop`` of ``S`` (or
          its last fifth's median by that much of its first fifth's) along a downward Mann-Kendall
          trend of the whole curve (on at most 200 bucket medians, p < ``alpha``), or reached a best
          level ``m`` that far below ``S`` along a downward trend at ``alpha_strong`` (it fell, then
          jumped back or became noisy); with ``S`` below zero (no floor at zero: an ELBO's negative),
          when it fell 3 sd of its step-to-step noise along that trend; past the instability readings, ``m`` must stand 2 sd of its own noise below the end
          level (not a noisy bucket's dip). One that came back to within ``min_drop`` of ``S`` along a
          rising trend (after the level-shift reading; late steps not large) made no net progress:
          underfitting (``kind: progress_lost``). The validation checks come before the training loss's
          noise: validation jumps with large steps (below) first, then
          overfitting (on a loss that made progress), then the training
          loss's instability, then validation jumps with a rough loss.
        - overfitting, per eval set (``val_loss`` and each ``val_loss@<set>``,
          5 evaluations at least): the minimum of the rolling median of 3 is
          followed by at least ``min_evals_after`` evaluations whose
          Mann-Kendall trend rises (one-sided p < ``alpha``, and a permutation
          test of the same trend over shuffled evaluations, which counts the
          choice of the minimum into its null, p < ``alpha_val``) and whose
          Theil-Sen line climbs over them (or whose last third's median sits
          above the smoothed minimum: a rise that levelled off) by at least ``min_val_rise`` of the
          minimum (or a third of a fall of ``min_drop`` or more from its first evaluation: a loss whose
          plateau sits high above its fall overfits by less of its level), ``val_give_back`` of the validation loss's fall from its
          first evaluation to that minimum (an effect size against the run's
          own progress: a loss that fell tenfold and gives back a few percent of
          that gain is not overfitting) and 2 evaluation-noise sd (robust sd
          around a rolling median), while the training loss at the end is no
          higher than at the validation minimum (plus its late spread).
          Decided from the trend, so large jumps between evaluations neither
          make nor unmake it. The evidence names the set. With exactly 4
          evaluations the permutation test cannot go below 1/24: a rise at
          every evaluation after the first (exact p = 1/24 over all orders,
          evidence ``few_evals``) is taken at ``alpha``, with the same effect
          sizes; so is a rise at each of 4 evaluations after the minimum
          (given where the minimum is, exact p = 1/4!; evidence
          ``strict_rise_after_min``); a short log judges it from as few as 2
          training losses. Also overfitting (``kind: val_gave_back_all``, 8 evaluations or more) when the
          rise passes those tests but not the effect sizes and ends (median of the last 3) above the first
          evaluation while the training loss fell on after the minimum (:mod:`.val_undone`).
        - underfitting: the loss sits at chance level, ln K for K classes:
          the median of the last third within 2% of ln K and its Theil-Sen line
          not leaving that band; K from the config (``num_classes``,
          ``n_classes``, ``num_labels``, ``id2label``...), a ``num_classes`` or
          label column, or else the loss level itself when it matches one K in
          2..16 unambiguously, or a round K above (a power of two up to 2^20 or
          of ten up to 10^6, within the distance a level meets one by
          coincidence with probability 0.01), and barely varies (robust sd within 0.5% of ln K)
          (``chance_source`` says which); or the loss made no progress
          (above; ``kind: no_progress``), e.g. a relative drop ``(S - E) /
          |S|`` below ``min_drop`` (not judged, ``insufficient_data`` with
          ``kind: began_mid_run``, in a log counted in steps or epochs that
          begins more than one logging interval after 0 and further into the
          run than it lasts: a plateau reached after learning looks the same,
          and the start that tells them apart is not in the log); or the held-out loss made none while the
          training loss fell by less than half (``kind:
          no_validation_progress``: ``min_evals_after + 1`` evaluations or
          more, the best not ``min_drop / 2`` below the first evaluation (a
          held-out loss can have a floor of its own) nor ``min_drop`` below
          ``S``, the last third's median not above the first: batches
          memorised or the class prior learned, nothing that carries over); or,
          with K stated, the held-out loss stayed at ln K while the training
          loss left it (``kind: validation_at_chance``: the ``loss_at_chance``
          detector's validation reading, at its default margin; a held-out loss
          that drifts up a little from chance is still no signal, and one that
          rose far enough for the overfitting reading was claimed there first).
          The evidence's
          ``weight_norm_ratio`` is the median over modules of the last weight
          norm over the first: at a tenth or less the weights collapsed
          toward zero (weight decay), and that, not the gradients it
          starves, is the cause.
        - healthy: none of the above.
        - a short log (2 to ``min_points`` finite losses, e.g. a dozen epochs
          pasted from a console): only the readings a few points can carry, each with a test exact
          at that size, listed in order below (from ``runlens/detectors/curve/short.py``): stuck, a
          frozen held-out loss, a held-out loss at ln K, a loss ending at ln K, a gradient norm
          fallen to 0, a growth, a last line blown up, progress given back, order-of-magnitude
          swings, overfitting, held-out swings, a widening gap, a settled fall, no progress from the
          start of training; else ``insufficient_data``.

    What to try:
        diverged: lower the learning rate, add warmup and gradient clipping,
        look for log(0), division by zero or fp16 overflow. unstable: lower the
        learning rate or raise the batch size, add a decay schedule; a jump
        that never recovers: look at what changed at that step (data shard,
        schedule, resume). overfitting: stop early at the validation minimum,
        add regularisation (weight decay, dropout, augmentation) or data.
        underfitting: raise the learning rate, check that labels and inputs
        reach the model, grow the model.

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
        relative to its level, that make it unstable (0.035). alpha_val:
        significance level of the permutation test of the validation rise
        (0.01; 499 permutations). step_ratio: late update/weight ratio above
        which the steps explain validation jumps (1e-2). stuck_band: range of a short log, relative to its level, within which
        (with no trend) it is stuck (0.01). swing: late spread relative to the end level above which a
        per-epoch loss that made no progress, with no step sizes logged, is unstable rather than underfitting (1/3).
        val_give_back: share of the validation loss's fall before its minimum that its rise must give
        back to be overfitting (0.1), besides ``min_val_rise`` of the minimum.
    """

    code = "curve"
    severity = "info"
    title = "Shape of the loss curve"
    verdict = CurveVerdict
    needs = NEEDS
    constraints: ClassVar[dict[str, Interval]] = {
        "min_points": Interval(int, 5, None), "alpha": Interval(float, 0, 1, closed="neither"),
        "alpha_strong": Interval(float, 0, "alpha", closed="neither"), "growth": Interval(float, 0, None),
        "min_progress": Interval(float, 0, None), "dispersion": Interval(float, 0, None, closed="neither"),
        "wander_ratio": Interval(float, 1, None), "min_drop": Interval(float, 0, 1),
        "min_evals_after": Interval(int, 2, None), "min_val_rise": Interval(float, 0, None),
        "settle_ratio": Interval(float, 0, 1, closed="right"), "val_jumps": Interval(float, 0, None, closed="neither"),
        "alpha_val": Interval(float, 0, 1, closed="neither"),
        "step_ratio": Interval(float, 0, None, closed="neither"), "stuck_band": Interval(float, 0, 1),
        "swing": Interval(float, 0, None, closed="neither"), "val_give_back": Interval(float, 0, 1),
    }

    def __init__(self, *, min_points: int = 20, alpha: float = 0.05, alpha_strong: float = 0.001,
                 growth: float = 0.5, min_progress: float = 2.0, dispersion: float = 0.1,
                 wander_ratio: float = 3.0, min_drop: float = 0.1, min_evals_after: int = 4,
                 min_val_rise: float = 0.1, settle_ratio: float = 0.5, val_jumps: float = 0.035,
                 alpha_val: float = 0.01, step_ratio: float = 1e-2,
                 stuck_band: float = 0.01, swing: float = 1 / 3, val_give_back: float = 0.1) -> None:
        self.val_give_back = val_give_back
        self.stuck_band = stuck_band
        self.swing = swing
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
        self.alpha_val = alpha_val
        self.step_ratio = step_ratio

    def check(self, run: Run, ctx: Context) -> Iterable[CurveVerdict]:
        return [self.classify(run, ctx)]

    def classify(self, run: Run, ctx: Context | None = None) -> CurveVerdict:
        if (lacking := no_training_loss(run, ctx)) is not None:
            return lacking
        sig = ctx.signals_of(run) if ctx is not None else signals_of(run)
        steps, x, bad_step = sig.loss.steps, sig.loss.values, sig.first_nonfinite_step
        if bad_step is not None:
            return CurveVerdict("diverged", f"the training loss became non-finite at step {bad_step}",
                                {"first_nonfinite_step": bad_step, "finite_points_before": int(x.size),
                                 "step": bad_step})
        if (beyond := beyond_any_vocabulary(run.config, steps, x) or stated_by_the_loop(run)
                or held_out_beyond_vocabulary(run)) is not None:
            return beyond
        masked = masked_nan(sig.grad_norm, steps, x) if x.size else None
        if masked is not None:
            why = ("while the gradient norm became non-finite: a NaN masked as 0" if masked["nonfinite_grad_step"]
                   is not None else f"from {masked['last_positive_loss']:.4g}, and the gradient norm with it, for "
                   "the rest of the log: no training signal is left (a loss masked to nothing, every label "
                   "ignored, a NaN replaced by 0)")
            return CurveVerdict("diverged", f"the loss collapsed to exactly 0 at step {masked['zero_loss_step']} "
                                + why, {**masked, "step": masked["zero_loss_step"]})
        if x.size < self.min_points:
            index = shape.late_index(run, shape.index_kind(run))
            sets = shape.validation_sets(sig.validation, int(steps[-1]) if steps.size else None)
            acc = accuracies(run)
            if x.size == 0 and (held := evaluations_frozen(sets) or memorized.accuracy_collapsed(memorized.held_out_accuracy(run, acc))):
                return held
            grads = sig.grad_norm.finite() if sig.grad_norm is not None else None
            return short(self, steps, x, sets, shape.chance_classes(run), index, sig.lr, acc, shape.Printed(
                shape.grad_norm_nonfinite(run), shape.auc(run), shape.error_rate(run), loss_parts(run), shape.agreement(run),
                (grads.steps, grads.values) if grads is not None and len(grads) else None))
        f = shape.curve_features(steps, x)
        # A log indexed by epochs holds one value per epoch, a mean over its batches (the reader sets
        # ``index_kind``): sampling noise is averaged out of it, so its swings are the training's own.
        config = run.config if isinstance(run.config, dict) else {}
        f["per_epoch"] = config.get("index_kind") == "epoch"
        ended = ended_exploding_verdict(sig.grad_norm, steps, x, f)
        if ended is not None:
            return ended
        # A jump without recovery is a level shift (unstable); a loss that drifted back to where it began,
        # through whatever noise, made no net progress: that is decided before the noise is read.
        verdict = diverged(self, steps, x, f) or level_shift_verdict(self, steps, x, f) or progress_lost(
            self, steps, f, sig)
        if verdict is not None:
            return verdict
        sets = shape.validation_sets(sig.validation, int(steps[-1]))
        # Validation jumps that large steps explain, then the validation trend, before the training
        # loss's own noise: a noisy training loss neither hides overfitting nor makes it instability.
        verdict = (val_unstable(self, steps, x, sets, f, sig, steps_only=True)
                   or ((overfitting(self, steps, x, sets, f)
                        or gave_back_all(self, steps, x, sets, f, shape.chance_classes(run)[0]))
                       if progressed(self, f) else None)
                   or unstable(self, steps, x, f, sig) or val_unstable(self, steps, x, sets, f, sig))
        if verdict is not None:
            return verdict
        falling = shape.memo(f, "late_noise", lambda: late_noise(self, steps, x))[1]
        return underfitting(self, steps, x, f, run, sig, sets) or memorized.frozen_accuracy(
            self, steps, x, accuracies(run), share=1.0) or CurveVerdict(
            "healthy", f"the loss fell by {fell_by(f)} and "
            f"{'was still falling at the end' if falling else 'settled'}", _ev(f))


def classify(run: Run, ctx: Context | None = None) -> CurveVerdict:
    """The curve verdict for ``run`` with the default thresholds."""
    return CurveClassifier().classify(run, ctx)
