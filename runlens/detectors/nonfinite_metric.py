"""The ``nonfinite_metric`` detector: a metric logged beside the loss that is NaN or Inf to the end."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

from runlens.detectors._base import Context, Detector, Interval, Needs, Skip, register
from runlens.diagnosis import Finding
from runlens.io.reader.names import NOT_A_SIGNAL, is_loss_term, tokens

if TYPE_CHECKING:
    from runlens.io.run import Run

# Columns the format names: their own detectors read them.
_FORMAT = frozenset({"step", "time", "loss", "lr", "grad_norm", "epoch", "loss_scale", "step_skipped"})


@register
class NonfiniteMetric(Detector):
    """A metric logged beside the loss (a KL divergence, an entropy, a reward, an accuracy) is NaN or
    Inf on every line from some point to the end, while the training loss printed beside it is finite.

    What it detects:
        The user scalars of the training rows (every ``scalars`` column the
        format does not name, leaving out clocks, throughputs and records of
        an extreme so far, which start at +/-inf by convention), read on
        the rows whose loss is finite and that logged the metric (a null is
        "not logged", not non-finite). Fires when the metric's last
        ``min_lines`` values or more are all non-finite: it broke and did
        not come back. The evidence gives the metric, the step its
        non-finite tail starts, how many lines it covers and how many finite
        values came before.

    Why it matters:
        A NaN makes every other signal meaningless: a policy whose KL
        divergence or entropy is NaN outputs NaN probabilities, an accuracy
        that is NaN was computed from NaN logits, and the loss printed
        beside them can stay finite only because it no longer depends on
        them (a clamp, a masked term, a loss computed before the broken
        branch). A loss curve that looks healthy then hides a run that has
        stopped learning.

    How it decides:
        Per metric column: the rows where the training loss is finite and
        the metric was logged. The non-finite tail is the run of NaN/Inf
        values that ends at the last of them. At least ``min_lines`` long:
        an error when finite values came before it (the metric broke during
        the run), a warning when the metric was never finite (broken from
        the start, or a metric the script never fills). A NaN that later
        lines recover from (an undefined metric on one evaluation, a
        skipped batch) is not read. A loss term (a name the reader takes as
        a loss, or an error measure: ``SmoothL1``, ``mse``) is left to
        ``nonfinite_loss``, which reads the sum of the parts. A log that
        prints no loss at all (its importer found none, but a quantity it
        prints went NaN or Inf) is read on every line, and one non-finite
        value to the last fires: any quantity printed may be the loss, and a
        loss is judged at its first NaN.

    What to try:
        Find where the metric is computed and check its inputs with
        ``torch.isfinite``: the model's outputs (logits, a policy's
        log-probabilities, a variance that reached zero), a division by an
        empty count, a log of zero. Run a step under
        ``torch.autograd.detect_anomaly()`` to find the operation; lower the
        learning rate or clip gradients if the outputs grew without bound;
        if the metric is simply never filled, stop printing it.

    Parameters:
        min_lines: least non-finite values in a row, to the last, that fire (3).
    """

    code = "nonfinite_metric"
    severity = "error"
    severities = ("error", "warning")
    title = "Metric NaN/Inf to the end"
    needs = Needs(scalars=("*",), requires=("scalars.loss",))
    constraints: ClassVar[dict[str, Interval]] = {"min_lines": Interval(int, 1, None)}

    def __init__(self, *, min_lines: int = 3) -> None:
        self.min_lines = min_lines

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        table, loss = run.scalars, run.column("scalars", "loss")
        if table is None or loss is None:
            raise Skip("needs the scalars table's loss")
        steps = run.steps("scalars")
        # A log that prints no loss at all (a null column) is read on every line that logged the metric.
        no_loss = table.column("loss").null_count == len(loss)
        finite_loss = np.ones(len(loss), bool) if no_loss else np.isfinite(loss)
        # Without a loss, any quantity printed may be it, and a loss is judged at its first NaN.
        least = 1 if no_loss else self.min_lines
        broken: dict[str, dict[str, Any]] = {}
        for name in table.column_names:
            if not _metric(name):
                continue
            col, full = table.column(name), run.column("scalars", name)
            if full is None or not pa.types.is_floating(col.type):
                continue  # an integer column cannot hold NaN
            logged = ~col.is_null().to_numpy(zero_copy_only=False) if col.null_count else np.ones(len(loss), bool)
            rows = np.flatnonzero(finite_loss & logged)
            if len(rows) < least:
                continue
            values = full[rows]
            ok = np.isfinite(values)
            tail = len(values) - (int(np.flatnonzero(ok)[-1]) + 1 if ok.any() else 0)
            if tail < least:
                continue
            start = rows[len(values) - tail]
            broken[name] = {"metric": name, "first_step": int(steps[start]), "nonfinite_lines": tail,
                            "finite_before": int(ok.sum()), "lines": int(len(values)),
                            "value": float(values[-1])}
        if not broken:
            return []
        # The worst: one that broke during the run before one never finite; then the longest tail.
        worst = max(broken.values(), key=lambda b: (b["finite_before"] > 0, b["nonfinite_lines"]))
        broke = worst["finite_before"] > 0
        others = sorted(set(broken) - {worst["metric"]})
        also = f" (also {', '.join(repr(o) for o in others)})" if others else ""
        beside = ("where the log prints no training loss" if no_loss else
                  "while the training loss beside it is finite")
        if broke:
            title = (f"{worst['metric']!r} became {worst['value']} at step {worst['first_step']:,} and stayed "
                     f"non-finite for its last {_lines(worst['nonfinite_lines'])}{also}, {beside}")
        else:
            title = (f"{worst['metric']!r} is {worst['value']} on every one of its {worst['lines']} lines{also}, "
                     f"{beside}: broken from the start, or never filled")
        return [self.finding(title, severity="error" if broke else "warning", step=worst["first_step"],
                             evidence={**worst, "metrics": broken, "min_lines": least,
                                       "training_loss_logged": not no_loss})]


def _lines(n: int) -> str:
    return "line" if n == 1 else f"{n} lines"


def _metric(name: str) -> bool:
    """Whether a scalars column is a user metric this detector reads: not a format column, not a clock or
    a throughput, not a loss term."""
    if name in _FORMAT or name.startswith(("val_loss", "grad_norm", "loss_scale")):
        return False
    toks = tokens(name)
    return bool(toks) and NOT_A_SIGNAL.isdisjoint(toks) and not is_loss_term(toks)
