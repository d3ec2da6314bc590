"""The ``nonfinite_gradient`` detector: a gradient held NaN or Inf."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from runlens.detectors._base import Context, Detector, Needs, register
from runlens.detectors._nonfinite import skipped_steps
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run


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
        and are ignored.

    How it decides:
        Three sources, the earliest non-skipped step wins: the layers table
        (``grad_norm`` NaN/Inf, or ``nonfinite > 0``), the writer's
        ``nonfinite_grad`` events (whose ``layer`` is the writer's own
        answer to "where did it enter"), and the scalars ``grad_norm``. The
        evidence counts the affected steps and parameters and the skipped
        steps that were left out.

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
    needs = Needs(scalars=("grad_norm", "step_skipped", "loss_scale"),
                  layers=("grad_norm", "nonfinite"), events=("kind", "layer", "value"))

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        skipped = skipped_steps(run)
        # Events first: at equal steps the writer's own "where it entered" is the better answer.
        hits = [h for h in (_from_events(run, skipped), _from_layers(run, skipped),
                            _from_scalars(run, skipped)) if h is not None]
        if not hits:
            return []
        step = min(h["step"] for h in hits)
        at_first = [h for h in hits if h["step"] == step]
        layers = next((h["layers"] for h in at_first if h["layers"]), ())
        evidence: dict[str, Any] = {"first_step": step,
                                    "sources": [h["source"] for h in at_first],
                                    "skipped_steps_ignored": int(len(skipped))}
        for h in hits:
            evidence.update(h["extra"])
        if ctx.first_nonfinite_step is not None:
            evidence["first_nonfinite_loss_step"] = ctx.first_nonfinite_step
        where = f" in {layers[0]}" if layers else ""
        return [self.finding(f"Gradient became NaN/Inf at step {step:,}{where}", step=step,
                             layers=layers[:1], evidence=evidence,
                             advice="Run that step under torch.autograd.detect_anomaly() to find the "
                                    "operation; clip gradients and check the learning rate.")]


def _from_layers(run: Run, skipped: np.ndarray) -> dict | None:
    # Arrow filters first: on a 10M-row table only the few bad rows reach numpy.
    t = run.layers
    if t is None or t.num_rows == 0 or "grad_norm" not in t.column_names:
        return None
    bad = pc.invert(pc.is_finite(t.column("grad_norm")))
    if "nonfinite" in t.column_names:
        bad = pc.or_kleene(bad, pc.greater(t.column("nonfinite"), 0))
    bad = pc.fill_null(bad, False)
    if not pc.any(bad).as_py():
        return None
    rows = t.select(["step", "layer"]).filter(bad)
    steps = rows.column("step").to_numpy(zero_copy_only=False)
    names = np.array(rows.column("layer").cast(pa.string()).to_pylist(), dtype=object)
    keep = ~np.isin(steps, skipped)
    steps, names = steps[keep], names[keep]
    if not len(steps):
        return None
    first = steps.min()
    position = {n: i for i, n in enumerate(run.layer_names())}
    at_first = [n for n in names[steps == first] if n is not None]
    deepest = max(at_first, key=lambda n: position.get(n, -1), default=None)
    return {"step": int(first), "source": "layers", "layers": (deepest,) if deepest else (),
            "extra": {"layers_nonfinite_at_first_step": len(set(at_first)),
                      "layer_steps_with_nonfinite": int(len(np.unique(steps)))}}


def _from_events(run: Run, skipped: np.ndarray) -> dict | None:
    ev = run.events
    if ev is None or "kind" not in ev.column_names:
        return None
    mask = pc.fill_null(pc.equal(ev.column("kind"), "nonfinite_grad"), False)
    mask = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
    steps = run.steps("events")
    mask &= ~np.isin(steps, skipped)
    idx = np.flatnonzero(mask)
    if not len(idx):
        return None
    first = idx[np.argmin(steps[idx])]
    layer = ev.column("layer")[int(first)].as_py() if "layer" in ev.column_names else None
    return {"step": int(steps[first]), "source": "events", "layers": (layer,) if layer else (),
            "extra": {"nonfinite_grad_events": int(len(idx))}}


def _from_scalars(run: Run, skipped: np.ndarray) -> dict | None:
    gn = run.column("scalars", "grad_norm")
    if gn is None:
        return None
    steps = run.steps("scalars")
    bad = np.isin(gn, (np.inf, -np.inf)) | np.isnan(gn) & ~_null(run)
    bad &= ~np.isin(steps, skipped)
    idx = np.flatnonzero(bad)
    if not len(idx):
        return None
    return {"step": int(steps[idx[0]]), "source": "scalars.grad_norm", "layers": (),
            "extra": {"steps_with_nonfinite_grad_norm": int(len(idx))}}


def _null(run: Run) -> np.ndarray:
    # A null grad_norm means "no parameter had a gradient", not a NaN gradient.
    return run.scalars.column("grad_norm").is_null().to_numpy(zero_copy_only=False)
