"""inputs_not_normalized: the first layer's gradients are decades above the rest at the start."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import sign_p
from runlens.detectors._layerstats import MAX_ROWS
from runlens.detectors._updates import step_ratio_summary
from runlens.detectors.curve.features import stated_classes

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run
    from runlens.signals import Signals

_INPUT_FREE = ("Embedding", "EmbeddingBag")  # an embedding reads indices, not input values


@register
class InputsNotNormalized(Detector):
    """The first layer's gradients, relative to its weights, are decades above every other layer's
    at the start: the inputs are on a raw scale (features from 1 to 1e5, pixels 0-255).

    What it detects:
        The gradient of a layer's weight is its input times the error that
        reaches it, so an input on a scale of 1e3 makes the first layer's
        gradient (and, with SGD, its update) about 1e3 times what a
        normalized input gives, while the layers after it see normalized
        activations. The relative gradient ``grad_norm / weight_norm`` of the
        first weight module is compared with the other modules'.

    Why it matters:
        The first layer's steps are then far too large (the run diverges,
        is unstable, or the first layer saturates and dies) while the
        learning rate suits every other layer: lowering the rate for the
        whole model trains the rest too slowly. The cause is the data, and
        the fix is a line of preprocessing.

    How it decides:
        On the first ``early_share`` of the recorded layer rows (at least 10),
        per row: the log10 of each weight module's ``grad_norm /
        weight_norm``. The first module must not be an embedding (which reads
        indices); at least 3 weight modules. Four readings, tried in this
        order, any one fires (severity warning):

        - *At initialization* (one row is enough): on the run's first step,
          before any update, so the learning rate plays no part, the first
          module's and the median module's relative gradient are both at
          least ``10^min_relative_decades``. A run that diverges on its
          second step is still told its cause. Not read when a loss scale
          above 1 was logged.
        - *The first layer stands out* (a normalization layer after it): the
          median of the first module's value minus the median of the
          others' (``gap_decades``) is at least ``min_decades``, and the
          first module is above the largest of the others on a share of
          rows a one-sided sign test finds significant at ``alpha``.
        - *Saturated*: raw inputs saturate the units behind the first layer
          (a gate's softmax, a tanh), so a batch passes either almost no
          gradient back or a large one. The first module's (or the one's
          right behind it, whichever swings more: a gate's own weights see
          the saturation first, while the first layer may still get a steady
          gradient through another path; ``swinging_module``) ``|Δ log10
          grad_norm|`` between consecutive recorded rows has a median of at
          least ``min_swing_decades`` and at least three times the output
          module's, over at least ``min_pairs`` pairs, and a one-sided
          Wilcoxon signed-rank test of first against output swings is
          significant at ``alpha`` (healthy runs swing by 0.05-0.5 decades).
          A gradient norm of exactly 0 (the batch passed none back) counts
          as ``2^-24``, half precision's smallest subnormal, a bound below
          any gradient it could have held: a swing to nothing is the
          largest swing, not a missing row.
          Read over the start, then, when that does not hold and the run
          recorded fewer than ``swing_rows`` rows there, over the first
          ``swing_rows``: raw inputs saturate the units for as long as they
          stay raw, and a signed-rank test over ten pairs, three of them two
          zero gradients in a row, cannot reach ``alpha``.
          Not read when, over those rows, some module's median update was a
          tenth of its weights or more (``update_norm``): steps that large
          saturate the units by themselves (a loss summed over the batch).
        - *No normalization* (a ReLU network scales with its input, so every
          layer is off): the first module's relative gradient is at least
          ``10^min_relative_decades`` on a significant share of rows, its
          median gap to the others no less than minus one decade, and the
          first logged loss is at least ``loss_factor`` times ln K (K stated
          as for ``loss_at_chance``): logits that large come from inputs
          that large.

    What to try:
        Standardize the inputs (subtract the per-feature mean and divide by
        the standard deviation, computed on the training set; scale images
        to [0, 1] and normalize per channel; log-transform heavy-tailed
        features), or put a normalization layer first; check that the
        normalization is applied at validation and inference too.

    Parameters:
        min_decades: least median gap, in decades, between the first module and the others (1.5).
        early_share: share of the recorded layer rows read as the start (0.1).
        alpha: significance level of the sign test (0.01).
        min_relative_decades: least log10 relative gradient of the first layer, no-normalization reading (2.0).
        loss_factor: least first loss over ln K, no-normalization reading (10.0).
        min_swing_decades: least median swing of the first layer's gradient, saturated reading (1.0).
        min_pairs: least consecutive row pairs, saturated reading (8).
        swing_rows: rows the saturated reading reads when the start holds fewer (21: twenty pairs).
    """

    code = "inputs_not_normalized"
    severity = "warning"
    title = "Inputs not normalized"
    needs = Needs(scalars=("loss",), layers=("grad_norm", "weight_norm", "update_norm"),
                  requires=("layers.grad_norm", "layers.weight_norm"))
    constraints = {"min_decades": Interval(float, 0, None, closed="neither"),
                   "early_share": Interval(float, 0, 1, closed="right"),
                   "alpha": Interval(float, 0, 1, closed="neither"),
                   "min_relative_decades": Interval(float, None, None), "loss_factor": Interval(float, 1, None),
                   "min_swing_decades": Interval(float, 0, None, closed="neither"),
                   "min_pairs": Interval(int, 3, None), "swing_rows": Interval(int, 2, None)}

    def __init__(self, *, min_decades: float = 1.5, early_share: float = 0.1, alpha: float = 0.01,
                 min_relative_decades: float = 2.0, loss_factor: float = 10.0, min_swing_decades: float = 1.0,
                 min_pairs: int = 8, swing_rows: int = 21) -> None:
        self.swing_rows = swing_rows
        self.min_swing_decades = min_swing_decades
        self.min_pairs = min_pairs
        self.min_relative_decades = min_relative_decades
        self.loss_factor = loss_factor
        self.min_decades = min_decades
        self.early_share = early_share
        self.alpha = alpha

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        lay = ctx.signals_of(run).layers
        grads = lay.modules("grad_norm", max_rows=MAX_ROWS) if lay else None
        wts = lay.modules("weight_norm", max_rows=MAX_ROWS) if lay else None
        if grads is None or wts is None or grads.values.shape != wts.values.shape:
            raise Skip("needs per-layer gradient and weight norms")
        if len(grads.modules) < 3:
            raise Skip("needs at least 3 weight modules to compare the first with")
        if grads.values.shape[0] == 0:  # every layer row came after the loss went non-finite
            raise Skip("needs a layer row before the loss went non-finite")
        kinds = {e.get("module"): str(e.get("kind")) for e in run.layer_info}
        if any(k in kinds.get(grads.modules[0], "") for k in _INPUT_FREE):
            return []
        n = max(10, int(np.ceil(grads.values.shape[0] * self.early_share)))
        with np.errstate(all="ignore"):
            rel = np.log10(grads.values[:n] / wts.values[:n])
        rel[~np.isfinite(rel)] = np.nan
        read = self._at_init(run, ctx, int(grads.steps[0]), rel[0])
        if read is None:
            rows = np.isfinite(rel[:, 0]) & np.isfinite(rel[:, 1:]).sum(axis=1).astype(bool)
            if rows.sum() < 3:
                raise Skip("needs at least 3 early rows with finite gradient and weight norms")
            read = (self._stands_out(rel[rows]) or self._saturated(ctx.signals_of(run), grads.values, grads.modules, n)
                    or self._all_scaled(run, ctx, rel[rows]))
        if read is None:
            return []
        how, ev = read
        return [self.finding(f"at the start, the first layer ({grads.modules[0]}) {how}: inputs on a raw scale",
                             step=int(grads.steps[0]), layers=(grads.modules[0],),
                             evidence={"first_module": grads.modules[0], **ev})]

    def _stands_out(self, rel: np.ndarray) -> tuple[str, dict] | None:
        """The first module's relative gradient is decades above every other module's."""
        gap = rel[:, 0] - np.nanmedian(rel[:, 1:], axis=1)
        above = rel[:, 0] > np.nanmax(rel[:, 1:], axis=1)
        p = sign_p(int(above.sum()), len(above))
        median_gap = float(np.median(gap))
        if median_gap < self.min_decades or p > self.alpha:
            return None
        return (f"gets a gradient {median_gap:.1f} decades larger, relative to its weights, than the other layers'",
                {"reading": "the first layer stands out", "gap_decades": median_gap, "rows": int(len(gap)),
                 "rows_above_all_others": int(above.sum()), "sign_p": p,
                 "first_relative_grad": float(10 ** np.median(rel[:, 0])),
                 "others_relative_grad": float(10 ** np.median(np.nanmedian(rel[:, 1:], axis=1)))})

    def _saturated(self, sig: Signals, norms: np.ndarray, modules: tuple[str, ...], n: int) -> tuple[str, dict] | None:
        """The saturated reading over the first ``n`` rows, then over ``swing_rows`` when that is more."""
        for rows in dict.fromkeys((n, max(n, min(self.swing_rows, len(norms))))):
            if not _large_steps(sig, rows):
                read = self._swings(norms[:rows], modules)
                if read is not None:
                    return read
        return None

    def _swings(self, norms: np.ndarray, modules: tuple[str, ...]) -> tuple[str, dict] | None:
        """The gradient of the first module, or of the module right behind it, swings by decades from
        one recorded step to the next while the output layer's holds: raw-scale inputs saturate the
        units behind the first layer (a gate's softmax, a tanh), so whether a batch passes any gradient
        back is all or nothing; a gate's own weights see it first, the first layer may still get a
        steady gradient through another path. ``norms``: the early rows' gradient norms, every module."""
        with np.errstate(all="ignore"):
            swing = np.abs(np.diff(np.log10(_zeros_floored(norms)), axis=0))
        read = None
        for j in range(min(2, swing.shape[1] - 1)):
            pair = np.isfinite(swing[:, j]) & np.isfinite(swing[:, -1])
            first, last = swing[pair, j], swing[pair, -1]
            if len(first) < self.min_pairs:
                continue
            median = float(np.median(first))
            if median < self.min_swing_decades or float(np.median(last)) > median / 3:
                continue
            p = float(stats.wilcoxon(first, last, alternative="greater").pvalue)
            if p <= self.alpha and (read is None or median > read[1]):
                read = (j, median, float(np.median(last)), int(len(first)), p)
        if read is None:
            return None
        j, median, out, pairs, p = read
        whose = "gets a gradient that swings" if j == 0 else \
            f"saturates the units behind it: the gradient of {modules[j]}, right behind it, swings"
        return (f"{whose} by {median:.1f} decades (median) between consecutive recorded "
                f"steps while the output layer's moves {out:.2f}",
                {"reading": "saturated: the first layer's gradient swings" if j == 0 else
                 "saturated: the gradient of the module behind the first layer swings",
                 "swinging_module": modules[j], "median_swing_decades": median,
                 "output_median_swing_decades": out, "pairs": pairs, "wilcoxon_p": p})

    def _at_init(self, run: Run, ctx: Context, step: int, row: np.ndarray) -> tuple[str, dict] | None:
        """The at-initialization reading: its evidence, or None when it does not hold.

        On the run's first step no update has been applied, so the learning
        rate cannot have inflated anything: a gradient ``10^min_relative_decades``
        times its weights in the first module and in the median module can only
        come from the scale of what the loss sees (raw inputs or targets, or a
        loss summed over a large batch). Read from one row, so a run that
        diverges on its second step is still told; not read when a loss scale
        was logged (scaled gradients are large on purpose).
        """
        loss = ctx.signals_of(run).loss
        if len(loss) == 0 or step > int(loss.steps[0]) or not np.isfinite(row[0]):
            return None
        scale = run.column("scalars", "loss_scale")
        if scale is not None and np.nanmax(np.asarray(scale, dtype=float), initial=1.0) > 1.0:
            return None
        finite = row[np.isfinite(row)]
        median = float(np.median(finite))
        if len(finite) < 3 or min(float(row[0]), median) < self.min_relative_decades:
            return None
        return (f"gets, at the first step before any update, a gradient {row[0]:.1f} decades above its weights "
                f"(the median layer {median:.1f})",
                {"reading": "at initialization", "step": step, "first_relative_grad": float(10 ** row[0]),
                 "init_relative_grad_decades": median, "modules": int(len(finite)),
                 "first_loss": float(loss.values[0])})

    def _all_scaled(self, run: Run, ctx: Context, rel: np.ndarray) -> tuple[str, dict] | None:
        """The no-normalization reading: every layer is scaled, the first included."""
        gap = rel[:, 0] - np.nanmedian(rel[:, 1:], axis=1)
        huge = rel[:, 0] >= self.min_relative_decades
        p = sign_p(int(huge.sum()), len(huge))
        k, k_source = stated_classes(run)
        loss = ctx.signals_of(run).loss
        if p > self.alpha or np.median(gap) < -1 or k is None or len(loss) == 0:
            return None
        factor = float(loss.values[0] / np.log(k))
        if factor < self.loss_factor:
            return None
        return (f"gets a gradient {np.median(rel[:, 0]):.1f} decades above its weights (the loss starts at "
                f"{factor:.3g}x ln K)",
                {"reading": "no normalization: every layer scaled", "rows": int(len(gap)),
                 "gap_decades": float(np.median(gap)), "rows_relative_grad_huge": int(huge.sum()),
                 "huge_sign_p": p, "first_loss_over_chance": factor, "classes": k, "classes_source": k_source})


# A gradient norm of exactly 0 is below every positive value a gradient can hold: half precision's smallest
# subnormal (2^-24) is the largest such bound among the dtypes people train in, so a zero counts as at
# most that (or as the module's smallest positive norm, if one was lower). A saturated unit passes no
# gradient at all on some batches; dropping those rows as unreadable would hide the swing they are.
ZERO_FLOOR = 2.0 ** -24


def _zeros_floored(norms: np.ndarray) -> np.ndarray:
    """``norms`` (rows x modules) with each exact zero raised to the lower of ``ZERO_FLOOR`` and the
    module's smallest positive norm in these rows; negative and non-finite values are left alone."""
    positive = np.where(norms > 0, norms, np.inf)
    floor = np.minimum(ZERO_FLOOR, np.min(positive, axis=0, initial=np.inf))
    return np.where(norms == 0, floor, norms)


LARGE_STEP = 0.1  # a tenth of a module's weights per step: the curve's bound for one module's steps


def _large_steps(sig: Signals, rows: int) -> bool:
    """Whether some module's median update over the first ``rows`` layer rows was ``LARGE_STEP`` of its
    weights or more (measured ``update_norm`` only)."""
    early = step_ratio_summary(sig, first=rows)
    return early is not None and early.source == "update_norm" and early.largest >= LARGE_STEP
