"""weight_norm_growth: weight norms grow fast and without bound."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._layerstats import fmt_p
from runlens.stats.growth import growth

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


@register
class WeightNormGrowth(Detector):
    """Weight norms grow fast and without bound.

    What it detects:
        A total weight norm that ends the run many times larger than it
        started and is still growing at the end, rather than settling.

    Why it matters:
        Weights that keep growing make the logits, activations and the
        effective learning rate drift; the run becomes over-confident and
        brittle and often ends in an overflow. Typical causes are no weight
        decay with a loss that rewards scale (separable data, unbounded
        logits) or a learning rate high enough to push the weights outward.

    How it decides:
        The series is the root sum of squares of the per-parameter weight
        norms over the parameters recorded at every step (a zero-initialized
        bias growing from nothing cannot dominate it), cut at the first
        non-finite loss. It fires when all hold: the median of the last 10%
        is at least ``min_factor`` times the first recorded norm; Kendall's
        test on log10 of the whole series (at most 500 bucket medians) finds an
        increasing trend at ``alpha`` with a Theil-Sen 95% interval above zero;
        and the growth has not saturated: the last third of the run added at
        least ``min_late_share`` of the total growth and is itself a
        significant increasing trend. Healthy runs grow their weights too,
        typically by a small factor that levels off. A run whose loss became
        non-finite is left to the divergence findings (``exploding_gradients``,
        ``nonfinite_loss``): weights blowing up into a NaN are a symptom, not
        a separate problem. A loss that diverged while staying finite, with
        the weights growing steadily throughout, is reported: the growth is
        then the mechanism of the divergence (no or negative weight decay,
        unbounded logits), and its fix is different.

    What to try:
        Add or increase weight decay (AdamW's decoupled decay); lower the
        learning rate; use label smoothing or a bounded output when the data
        are separable; add normalization layers; clip the gradient norm.

    Parameters:
        min_factor: smallest growth of the total weight norm, late level over the first (10.0).
        alpha: significance level of the Kendall trend tests (0.01).
        min_late_share: smallest share of the growth added in the last third of the run (0.15).
    """

    code = "weight_norm_growth"
    severity = "warning"
    title = "Weight norm growth"
    needs = Needs(scalars=("loss", "step_skipped"), layers=("weight_norm",), requires=("layers.weight_norm",))
    depends = ("curve",)
    constraints = {"min_factor": Interval(float, 1, None, closed="neither"),
                   "alpha": Interval(float, 0, 1, closed="neither"),
                   "min_late_share": Interval(float, 0, 1)}

    def __init__(self, *, min_factor: float = 10.0, alpha: float = 0.01, min_late_share: float = 0.15) -> None:
        self.min_factor = min_factor
        self.alpha = alpha
        self.min_late_share = min_late_share

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        lay = sig.layers
        if not lay or lay.weight_norm is None:
            raise Skip("needs per-layer weight norms")
        if ctx.curve is not None and ctx.curve.label == "diverged" and sig.first_nonfinite_step is not None:
            return []  # weights blowing up into a NaN are the divergence itself, reported as such
        rows = lay.usable
        w = lay.weight_norm if rows.all() else lay.weight_norm[rows]  # unrecorded and null cells are NaN already
        steps = lay.steps[rows]
        cols = np.isfinite(w).all(axis=0) if len(w) else np.zeros(w.shape[1], bool)
        if len(w) < 10 or not cols.any():
            raise Skip(f"needs weight norms of the same parameters at 10 recorded steps (has {len(w)})")
        wc = w if cols.all() else w[:, cols]
        total = np.sqrt(np.einsum("ij,ij->i", wc, wc))
        ok = np.isfinite(total) & (total > 0)
        steps, total = steps[ok], total[ok]
        if len(total) < 10:
            raise Skip(f"needs 10 finite, positive total weight norms (has {len(total)})")
        logt = np.log10(total)
        k = max(1, len(total) // 10)
        # The yardstick is the first recorded norm (the initialization): the
        # weights move smoothly, and by the end of a 10% window a fast
        # grower has already left it far behind.
        factor = float(np.median(total[-k:]) / total[0])
        if not factor >= self.min_factor:
            return []
        whole = growth(steps, logt)
        third = len(total) * 2 // 3
        late = growth(steps[third:], logt[third:])
        if whole is None or late is None:
            return []
        start, end = total[0], np.median(total[-k:])
        share = float((end - np.median(total[third - k // 2: third + k // 2 + 1])) / (end - start))
        if not (whole.p <= self.alpha and whole.slope_low > 0 and late.p <= self.alpha and late.slope > 0
                and share >= self.min_late_share):
            return []
        grew = np.log10(np.median(w[-k:], axis=0) / np.median(w[:k], axis=0))
        top = [lay.names[j] for j in np.argsort(-np.nan_to_num(grew, nan=-np.inf))[:5] if grew[j] > 0]
        return [self.finding(
            f"total weight norm grew {factor:.0f}x (>= {self.min_factor:g}x) over {int(steps[-1] - steps[0])} steps "
            f"and is still growing (Kendall tau={whole.tau:.2f}, p={fmt_p(whole.p)}; the last third added "
            f"{share:.0%} of the growth)",
            step=int(steps[0]), layers=top,
            evidence={
                "growth_factor": factor, "early_norm": float(start), "late_norm": float(end),
                "theil_sen_decades_per_step": whole.slope, "kendall_tau": whole.tau, "kendall_p": whole.p,
                "late_kendall_p": late.p, "late_share": share, "points_tested": whole.n,
                "parameters": int(cols.sum()), "step_range": [int(steps[0]), int(steps[-1])],
                "top_growth_log10": {lay.names[j]: float(grew[j]) for j in np.argsort(-np.nan_to_num(grew))[:5]},
            },
        )]
