"""inputs_not_normalized: the first layer's gradients are decades above the rest at the start."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import sign_p
from runlens.detectors._layerstats import MAX_ROWS
from runlens.detectors.curve.features import stated_classes

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run

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
        weight_norm``. Two readings, either fires:
        a normalization layer after the first one (the first layer stands
        out): the median of the first module's value minus the median of
        the others' (``gap_decades``) is at least ``min_decades``, and the
        first module is above the largest of the others on a share of rows
        a one-sided sign test finds significant at ``alpha``;
        no normalization (a ReLU network scales with its input, so every
        layer is off): the first module's relative gradient is at least
        ``10^min_relative_decades`` (a gradient a hundred times its weights
        at initialization) on a significant share of rows, less than a decade below the
        others. median, and the first logged loss is at least ``loss_factor``
        times ln K (K stated as for ``loss_at_chance``): logits that large
        come from inputs that large. The first module must not be an
        embedding (which reads indices); at least 3 weight modules. Severity
        warning.

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
    """

    code = "inputs_not_normalized"
    severity = "warning"
    title = "Inputs not normalized"
    needs = Needs(scalars=("loss",), layers=("grad_norm", "weight_norm"), requires=("layers.grad_norm", "layers.weight_norm"))
    constraints = {"min_decades": Interval(float, 0, None, closed="neither"),
                   "early_share": Interval(float, 0, 1, closed="right"),
                   "alpha": Interval(float, 0, 1, closed="neither"),
                   "min_relative_decades": Interval(float, None, None), "loss_factor": Interval(float, 1, None)}

    def __init__(self, *, min_decades: float = 1.5, early_share: float = 0.1, alpha: float = 0.01,
                 min_relative_decades: float = 2.0, loss_factor: float = 10.0) -> None:
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
        kinds = {e.get("module"): str(e.get("kind")) for e in run.layer_info}
        if any(k in kinds.get(grads.modules[0], "") for k in _INPUT_FREE):
            return []
        n = max(10, int(np.ceil(grads.values.shape[0] * self.early_share)))
        with np.errstate(all="ignore"):
            rel = np.log10(grads.values[:n] / wts.values[:n])
        rel[~np.isfinite(rel)] = np.nan
        rows = np.isfinite(rel[:, 0]) & np.isfinite(rel[:, 1:]).sum(axis=1).astype(bool)
        if rows.sum() < 3:
            raise Skip("needs at least 3 early rows with finite gradient and weight norms")
        rel = rel[rows]
        gap = rel[:, 0] - np.nanmedian(rel[:, 1:], axis=1)
        above = rel[:, 0] > np.nanmax(rel[:, 1:], axis=1)
        p = sign_p(int(above.sum()), len(above))
        median_gap = float(np.median(gap))
        ev = {"gap_decades": median_gap, "first_module": grads.modules[0], "rows": int(len(gap)),
              "rows_above_all_others": int(above.sum()), "sign_p": p,
              "first_relative_grad": float(10 ** np.median(rel[:, 0])),
              "others_relative_grad": float(10 ** np.median(np.nanmedian(rel[:, 1:], axis=1)))}
        if median_gap >= self.min_decades and p <= self.alpha:
            how = f"{median_gap:.1f} decades larger, relative to its weights, than the other layers'"
        else:
            big = self._all_scaled(run, ctx, rel, gap)
            if big is None:
                return []
            ev.update(big)
            how = (f"{np.median(rel[:, 0]):.1f} decades above its weights (the loss starts at "
                   f"{big['first_loss_over_chance']:.3g}x ln K)")
        return [self.finding(
            f"at the start, the first layer ({grads.modules[0]}) gets a gradient {how}: inputs on a raw scale",
            step=int(grads.steps[0]), layers=(grads.modules[0],), evidence=ev)]

    def _all_scaled(self, run: Run, ctx: Context, rel: np.ndarray, gap: np.ndarray) -> dict | None:
        """The no-normalization reading: its evidence, or None when it does not hold."""
        huge = rel[:, 0] >= self.min_relative_decades
        p = sign_p(int(huge.sum()), len(huge))
        k, k_source = stated_classes(run)
        loss = ctx.signals_of(run).loss
        if p > self.alpha or np.median(gap) < -1 or k is None or len(loss) == 0:
            return None
        factor = float(loss.values[0] / np.log(k))
        if factor < self.loss_factor:
            return None
        return {"reading": "no normalization: every layer scaled", "rows_relative_grad_huge": int(huge.sum()),
                "huge_sign_p": p, "first_loss_over_chance": factor, "classes": k, "classes_source": k_source}
