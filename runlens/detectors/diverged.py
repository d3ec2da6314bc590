"""The ``diverged`` finding: the curve verdict says the loss diverged."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.curve.finding import ExplainedCurveFinding


@register
class Diverged(ExplainedCurveFinding):
    """The training loss diverged: it became NaN/Inf or grew without bound.

    What it detects:
        A run whose curve verdict is ``diverged``: the loss became NaN or
        Inf, collapsed to exactly 0 where the gradients became non-finite (a
        NaN masked as 0), grew by orders of magnitude without becoming NaN,
        or gave back all its progress and more on a significant upward
        trend. The finding carries the classifier's test statistics, the step
        where it started and the signals around that step.

    Why it matters:
        Nothing the run computes after divergence means anything, and the
        weights it leaves are garbage. The curve label alone says it went
        wrong; the signals around the step say why: gradients that grew
        first (an explosion: learning rate, missing clipping), healthy
        gradients up to a NaN (a numerical fault), a learning rate that
        just rose (end of warmup, a schedule bug).

    How it decides:
        Fires when the curve classifier's label is ``diverged`` (see the
        ``curve`` entry for its tests). The evidence adds ``signals``: the
        largest gradient norm from that step on over the median before it
        (``grad_norm_growth``, ``inf`` when it became non-finite), the median
        update/weight norm ratio, the learning rate there and its ratio to
        before, the loss-scaler skips; and ``signals_missing``, the signals
        the log lacks. Without gradient norms and update norms the title
        says the log cannot tell why. The findings that explain it (e.g.
        ``exploding_gradients``, ``nonfinite_loss``) are named in its
        ``caused_by``. Severity error.

    What to try:
        Lower the learning rate (or lengthen the warmup) and clip gradient
        norms (torch.nn.utils.clip_grad_norm_); if gradients were healthy up
        to the NaN, run the step under torch.autograd.detect_anomaly() and
        guard log/sqrt/division with an epsilon; under mixed precision keep
        the loss in float32 and check the loss scaler; log grad_norm and
        update_norm if the log lacks them.

    Parameters:
        None: the decision is the curve classifier's.
    """

    code = "diverged"
    severity = "error"
    title = "Loss diverged"
