"""The ``nonfinite_gradient`` detector: a gradient held NaN or Inf."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.detectors._base import Context, Detector, Needs, Skip, register
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Signals


@register
class NonfiniteGradient(Detector):
    """A gradient held NaN or Inf on a step the optimizer actually took.

    What it detects:
        The first step at which a parameter's gradient held NaN/Inf, and
        the parameter where it first appeared: among that step's non-finite
        parameters, the one closest to the loss (the largest depth index),
        since backpropagation runs from the loss toward the input and every
        parameter before it inherits the NaN.

    Why it matters:
        A non-finite gradient applied by the optimizer turns the weights
        into NaN, and the loss follows. Where it entered the backward pass
        points at the operation to inspect. Steps that a mixed-precision
        loss scaler skipped (``step_skipped == 1``, or a drop in
        ``loss_scale`` when that column is missing) are normal behaviour
        and are ignored. A console log does not say which steps a scaler
        skipped: there a non-finite ``grad_norm`` followed by a finite one
        and a finite, positive loss was not applied (an applied NaN makes
        every weight, and every later loss, NaN) and is ignored too.

    How it decides:
        Three sources, the earliest non-skipped step wins: the layers table
        (``grad_norm`` NaN/Inf, or ``nonfinite > 0``), the writer's
        ``nonfinite_grad`` events (whose ``layer`` is the writer's own
        answer to "where did it enter"), and the scalars ``grad_norm``. The
        evidence counts the affected steps and parameters and the skipped
        steps that were left out, and how many steps the log holds: one
        non-finite gradient is a finding in a dozen-line log too.

    What to try:
        1. If the loss became NaN at the same step, see ``nonfinite_loss``:
           the cause is usually upstream in the forward pass.
        2. Inspect the named layer's operation (division, ``log``, ``sqrt``,
           normalisation with zero variance) with
           ``torch.autograd.detect_anomaly()``.
        3. Clip gradients and lower the learning rate if norms grew first;
           under fp16 use a GradScaler so overflowing steps are skipped.

    Parameters:
        None.
    """

    code = "nonfinite_gradient"
    severity = "error"
    title = "Non-finite gradient"
    needs = Needs(scalars=("grad_norm", "step_skipped", "loss_scale", "loss"),
                  layers=("grad_norm", "nonfinite"), events=("kind", "layer", "value"))

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        sig = ctx.signals_of(run)
        has_events = sig.run.events is not None and "kind" in sig.run.events.column_names
        if sig.scalar("grad_norm") is None and not (sig.layers and sig.layers.has("grad_norm")) and not has_events:
            raise Skip("no gradient norm (scalars or layers) and no events logged")
        skipped = sig.skipped_steps
        # Events first: at equal steps the writer's own "where it entered" is the better answer.
        hits = [h for h in (_from_events(sig, skipped), _from_layers(sig, skipped),
                            _from_scalars(sig, skipped)) if h is not None]
        if not hits:
            return []
        step = min(h["step"] for h in hits)
        at_first = [h for h in hits if h["step"] == step]
        layers = next((h["layers"] for h in at_first if h["layers"]), ())
        evidence: dict[str, Any] = {"first_step": step,
                                    "sources": [h["source"] for h in at_first],
                                    "skipped_steps_ignored": int(len(skipped)),
                                    "logged_steps": len(sig.loss_logged)}
        for h in hits:
            evidence.update(h["extra"])
        if sig.first_nonfinite_step is not None:
            evidence["first_nonfinite_loss_step"] = sig.first_nonfinite_step
        where = f" in {layers[0]}" if layers else ""
        return [self.finding(f"Gradient became NaN/Inf at step {step:,}{where}", step=step,
                             layers=layers[:1], evidence=evidence)]


def _from_layers(sig: Signals, skipped: np.ndarray) -> dict | None:
    lay = sig.layers
    if not lay or lay.grad_norm is None:
        return None
    g, present = lay.grad_norm, lay.present("grad_norm")
    bad = ~np.isfinite(g) & present
    if lay.nonfinite is not None:
        bad |= lay.nonfinite > 0
    rows = np.flatnonzero(bad.any(axis=1))
    rows = rows[~np.isin(lay.steps[rows], skipped)]
    if not len(rows):
        return None
    first = int(rows[0])
    cols = np.flatnonzero(bad[first])
    # Backpropagation runs from the loss toward the input: the deepest bad parameter is where it entered.
    deepest = lay.names[int(cols[np.argmax(lay.depth[cols])])]
    return {"step": int(lay.steps[first]), "source": "layers", "layers": (deepest,),
            "extra": {"layers_nonfinite_at_first_step": len(cols), "layer_steps_with_nonfinite": len(rows)}}


def _from_events(sig: Signals, skipped: np.ndarray) -> dict | None:
    steps, layers = sig.events("nonfinite_grad")
    keep = np.flatnonzero(~np.isin(steps, skipped))
    if not len(keep):
        return None
    first = keep[np.argmin(steps[keep])]
    layer = layers[int(first)]
    return {"step": int(steps[first]), "source": "events", "layers": (layer,) if layer else (),
            "extra": {"nonfinite_grad_events": int(len(keep))}}


def _from_scalars(sig: Signals, skipped: np.ndarray) -> dict | None:
    gn = sig.scalar("grad_norm")  # nulls ("no parameter had a gradient") are dropped, NaN kept
    if gn is None:
        return None
    bad = ~np.isfinite(gn.values) & ~np.isin(gn.steps, skipped)
    if sig.scalar("step_skipped") is None and sig.scalar("loss_scale") is None:
        bad &= ~_not_applied(gn.steps, gn.values, sig.loss.steps, sig.loss.values)
    idx = np.flatnonzero(bad)
    if not len(idx):
        return None
    return {"step": int(gn.steps[idx[0]]), "source": "scalars.grad_norm", "layers": (),
            "extra": {"steps_with_nonfinite_grad_norm": int(len(idx))}}


def _not_applied(steps: np.ndarray, norms: np.ndarray, lsteps: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Non-finite gradient norms the optimizer cannot have applied: the next gradient norm logged is
    finite and the next loss finite and positive. A NaN applied makes every weight NaN and every later
    loss and gradient with it; a log that goes on finite had the step skipped (a mixed-precision
    scaler, whose skips a console log does not say: mmocr's ``grad_norm: nan`` in the first hundred
    steps, then ``3.9772``)."""
    out = np.zeros(norms.size, bool)
    for i in np.flatnonzero(~np.isfinite(norms)):
        after = np.flatnonzero(lsteps > steps[i])
        nxt = loss[after[0]] if after.size else np.nan
        out[i] = i + 1 < norms.size and bool(np.isfinite(norms[i + 1])) and bool(np.isfinite(nxt) and nxt > 0)
    return out
