"""What the curve-label findings share: one finding per non-healthy curve label.

The curve classifier (``runlens.detectors.curve``) decides the label once;
``overfitting``, ``underfitting``, ``unstable`` and ``diverged`` each turn
their label into a finding with the classifier's statistics, the step it
starts at and the advice of their own "What to try". For ``diverged`` and
``unstable`` the finding also reads the signals right around that step
(gradient norm, update size, learning rate, loss scale) or says which of
them the log lacks, so a user is never told that it went wrong without a
lead on why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from runlens.detectors._base import Context, Detector, Needs
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Signals

#: What the proximate-signal readout reads, besides the curve.
SIGNAL_NEEDS = Needs(scalars=("loss", "grad_norm", "lr", "loss_scale", "step_skipped"),
                     layers=("grad_norm", "weight_norm", "update_norm"))


class CurveFinding(Detector):
    """Base of the curve-label findings; subclasses set ``label`` and their docs."""

    label: ClassVar[str] = ""  # the curve label it reports, when it is not the code
    explain: ClassVar[bool] = False  # read the proximate signals (diverged, unstable)
    # The advice of a verdict whose own reading names its cause (by the evidence's ``kind``), before
    # the label's general list.
    kind_advice: ClassVar[dict[str, str]] = {}
    depends: ClassVar[tuple[str, ...]] = ("curve",)
    needs = Needs()

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        verdict = ctx.curve
        if verdict is None or verdict.label != (self.label or self.code):
            return []
        evidence = {k: v for k, v in verdict.evidence.items() if k != "step"}
        step = verdict.evidence.get("step")
        title = verdict.reason[:1].upper() + verdict.reason[1:]
        if self.explain:
            signals, missing = proximate_signals(ctx.signals_of(run), step)
            evidence["signals"] = signals
            if missing:
                evidence["signals_missing"] = missing
                if not {"grad_norm", "update_ratio"} - set(missing):
                    title += f"; the log has no {' or '.join(_WORDS[m] for m in missing)} to tell why"
        kind = evidence.get("kind")
        return [self.finding(title, step=step, evidence=evidence,
                             advice=self.kind_advice.get(kind) if isinstance(kind, str) else None)]


class ExplainedCurveFinding(CurveFinding):
    """A curve-label finding that also reads the proximate signals at its step (diverged, unstable)."""

    explain = True
    needs = SIGNAL_NEEDS


_WORDS = {"grad_norm": "gradient norms", "update_ratio": "update sizes (update_norm)",
          "lr": "learning rate"}


def proximate_signals(sig: Signals, step: int | None) -> tuple[dict[str, Any], list[str]]:
    """The signals around ``step``, and the names of those the log lacks.

    ``grad_norm_growth``: largest gradient norm from ``step`` on over the
    median before it (``inf`` when it became non-finite);
    ``update_ratio``: median over steps from ``step`` on of the total
    update norm over the total weight norm; ``lr`` at ``step`` and its
    ratio to the median before (a raise shows as > 1); ``skipped_steps``
    of a loss scaler from ``step`` on.
    """
    signals: dict[str, Any] = {}
    missing: list[str] = []
    s = -math.inf if step is None else step
    if sig.grad_norm is None:
        missing.append("grad_norm")
    else:
        signals.update(_growth(sig.grad_norm.steps, sig.grad_norm.values, s), grad_norm_source=sig.grad_norm.source)
    ratio = _update_ratio(sig, s)
    if ratio is None:
        missing.append("update_ratio")
    else:
        signals["update_ratio"] = ratio
    if sig.lr is None:
        missing.append("lr")
    else:
        steps, lr = sig.lr.steps, sig.lr.values
        at = np.flatnonzero(steps >= s)
        before = lr[steps < s]
        if at.size:
            signals["lr"] = float(lr[at[0]])
            if before.size and np.median(before) > 0:
                signals["lr_vs_before"] = float(lr[at[0]] / np.median(before))
    if sig.scalar("step_skipped") is not None or len(sig.skipped_steps):
        signals["skipped_steps"] = int(np.count_nonzero(sig.skipped_steps >= s))
    return signals, missing


def _growth(gsteps: np.ndarray, norms: np.ndarray, s: float) -> dict[str, Any]:
    at = gsteps >= s
    before = norms[~at & np.isfinite(norms)]
    after = norms[at]
    out: dict[str, Any] = {}
    bad = np.flatnonzero(~np.isfinite(after))
    if bad.size:
        out["first_nonfinite_grad_norm_step"] = int(gsteps[at][bad[0]])
    ok = after[np.isfinite(after)]
    if before.size and np.median(before) > 0 and (ok.size or bad.size):
        out["grad_norm_before"] = float(np.median(before))
        out["grad_norm_growth"] = math.inf if bad.size else float(np.max(ok)) / float(np.median(before))
    elif ok.size:
        out["grad_norm_median"] = float(np.median(ok))
    return out


def _update_ratio(sig: Signals, s: float) -> float | None:
    layers = sig.layers
    if not layers or layers.update_norm is None or layers.weight_norm is None:
        return None
    u, w = layers.total("update_norm"), layers.total("weight_norm")
    if u is None or w is None:
        return None
    rows = layers.steps >= s
    if not rows.any():
        rows = np.ones_like(rows)
    with np.errstate(all="ignore"):
        r = u[rows] / w[rows]
    r = r[np.isfinite(r)]
    return float(np.median(r)) if r.size else None
