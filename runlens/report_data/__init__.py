"""What a report shows, computed once on the engine side by an explicit step.

``build_report_data(diagnosis, signals)`` turns a :class:`~runlens.diagnosis.Diagnosis`
(plain values) and the run's :class:`~runlens.signals.Signals` into a
:class:`ReportData`: the key numbers, the downsampled series and the marks
for the charts, the onset window of an early failure, the heatmap
matrices, evidence with labels and units, the run's declared layers, and
the documentation of every code the diagnosis holds. It reads the run only
through its signals. Renderers (``runlens.render``) take the ReportData
and format it; they never see a run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.diagnosis import Diagnosis
from runlens.report_data.numbers import Item, KeyNumber, evidence_items, key_numbers
from runlens.report_data.series import (
    Heatmap,
    Series,
    Spark,
    heatmap,
    onset_window,
    pick_layers,
    series,
    spark,
    window,
)

if TYPE_CHECKING:
    from runlens.signals import Signals

__all__ = ["CodeDoc", "Heatmap", "Item", "KeyNumber", "Marks", "Onset", "ReportData", "Series", "Spark",
           "build_report_data", "evidence_of"]


@dataclass(frozen=True)
class CodeDoc:
    """The reference entry of one code, embedded in the report."""

    code: str
    severity: str
    title: str
    summary: str
    sections: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Marks:
    """Steps the charts mark: spikes (with their loss), the first non-finite loss, the stop
    (crash or kill), the step the curve verdict names, each finding's step, named layers."""

    spikes: tuple[tuple[int, float], ...] = ()
    first_nan: int | None = None
    stop: int | None = None
    stop_label: str = ""
    verdict_step: int | None = None
    verdict_label: str = ""
    finding_steps: Mapping[str, int] = field(default_factory=dict)
    layers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    val_best: tuple[int, float] | None = None


@dataclass(frozen=True)
class Onset:
    """A zoomed view of the steps around an early failure, at full resolution, or (``kind``
    "validation") of an overfitting run's validation rise, training and validation side by side."""

    at: int
    reason: str
    first: int
    last: int
    loss: Series | None
    val_loss: Series | None
    grad_norm: Series | None
    kind: str = "early"


@dataclass(frozen=True)
class ReportData:
    """What the reports of one run show: its diagnosis, and everything drawn or tabled beside it."""

    diagnosis: Diagnosis
    key_numbers: tuple[KeyNumber, ...]
    duration_s: float | None
    series: Mapping[str, Series]
    sparks: tuple[Spark, ...]
    onset: Onset | None
    heatmaps: tuple[Heatmap, ...]
    weight_lines: tuple[Series, ...]
    weight_total: int
    marks: Marks
    evidence: tuple[tuple[Item, ...], ...]  # one per finding, in the diagnosis's order
    curve_evidence: tuple[Item, ...]
    docs: Mapping[str, CodeDoc]
    x_range: tuple[int, int] | None = None  # the steps every full-run chart spans (a crash step included)
    layer_info: tuple[Mapping[str, Any], ...] = ()  # run.json's layers entries, in depth order
    layers_total: int = 0  # layers declared, else layers recorded


if TYPE_CHECKING:
    from runlens.render.contracts import ReportDataLike

    def _renderable(data: ReportData) -> ReportDataLike:
        # Never called: mypy checks here that this data has the shape the renderers display.
        return data


def build_report_data(diagnosis: Diagnosis, signals: Signals) -> ReportData:
    """Everything a report shows about ``diagnosis``, read from the run's ``signals``.

    The charts mark ``diagnosis.verdict_step``, the step the headline and the
    findings name (none when it is None)."""
    sig = signals
    numbers = diagnosis.key_numbers
    marks = _marks(diagnosis, sig)
    declared = tuple(sig.declared_layers)
    return ReportData(
        diagnosis=diagnosis, key_numbers=key_numbers(sig, numbers, len(sig.layer_names)),
        duration_s=numbers.get("duration_s"), series=_series(sig),
        sparks=tuple(s for s in (spark("training loss", _raw(sig.loss_logged)),
                                 spark("validation loss", _raw(sig.validation.get("val_loss"))),
                                 spark("grad norm", _raw(sig.grad_norm))) if s is not None),
        onset=_onset(sig, marks, diagnosis.curve),
        heatmaps=_heatmaps(sig, marks), **_weights(sig, diagnosis.findings), marks=marks,
        evidence=evidence_of(diagnosis),
        curve_evidence=evidence_items(diagnosis.curve.evidence, _params("curve")),
        docs=_docs({f.code for f in diagnosis.findings} | {diagnosis.curve.label, "curve"}),
        x_range=_x_range(diagnosis, sig, marks), layer_info=declared,
        layers_total=len(declared) or len(sig.layer_names),
    )


def evidence_of(diagnosis: Diagnosis) -> tuple[tuple[Item, ...], ...]:
    """Each finding's evidence as labelled items with units, observations before the thresholds
    it was judged by (its detector's parameters): what ``analyze -v`` shows, without the charts."""
    return tuple(evidence_items(f.evidence, _params(f.code)) for f in diagnosis.findings)


def _verdict_label(curve: Any, findings: tuple, step: int | None) -> str:
    """What the verdict's marker says: the curve label, or the most severe finding's code when
    the curve itself looks fine (a crash or a layer pathology on a healthy-looking curve)."""
    if step is None:
        return ""
    name = curve.label
    if name in ("healthy", "insufficient_data") and findings:
        name = sorted(findings, key=_rank)[0].code
    return f"{name} (step {step:,})"


def _x_range(diagnosis: Diagnosis, sig: Any, marks: Marks) -> tuple[int, int] | None:
    """First and last step over every table a chart draws (and the stop), so all full-run
    charts share one x axis: a layer table logged until step 45 is not stretched to the width
    of a loss logged until step 120."""
    ends: list[int] = []
    for steps in (sig.loss_logged.steps, diagnosis.step_range,
                  *(v.steps for v in sig.validation.values()),
                  sig.layers.steps if sig.layers else None):
        if steps is not None and len(steps):
            ends += [int(np.min(steps)), int(np.max(steps))]
    ends += [s for s in (marks.stop, marks.first_nan, marks.verdict_step) if s is not None]
    return (min(ends), max(ends)) if ends else None


def _raw(s: Any) -> np.ndarray | None:
    return None if s is None else s.values


def _series(sig: Any) -> dict[str, Series]:
    out = {}
    loss = sig.loss_logged
    pairs = {"loss": ("training loss", loss.steps, loss.values)}
    for name, val in sig.validation.items():
        pairs[name] = ("validation loss" if name == "val_loss" else name.replace("val_loss@", "validation: "),
                       val.steps, val.values)
    for name, label in (("lr", "learning rate"), ("grad_norm", "global grad norm")):
        # As logged (nulls out, NaN kept): the chart shows the column, the signals' cleaning aside.
        s = sig.scalar(name)
        if s is not None and np.isfinite(s.values).any():
            pairs[name] = (label, s.steps, s.values)
    for key, (label, steps, values) in pairs.items():
        made = series(label, steps, values)
        if made is not None:
            out[key] = made
    return out


def _marks(diagnosis: Diagnosis, sig: Any) -> Marks:
    curve, findings = diagnosis.curve, diagnosis.findings
    steps: dict[str, int] = {}
    spikes: set[int] = set()
    for f in findings:
        if f.step is not None:
            steps.setdefault(f.code, f.step)
        if f.code == "loss_spikes":
            spikes |= {int(v) for k, v in _step_lists(f.evidence)}
            if f.step is not None:
                spikes.add(f.step)
    loss = sig.loss_logged
    at = np.searchsorted(loss.steps, sorted(spikes)).clip(0, max(len(loss) - 1, 0))
    spike_pts = tuple((int(loss.steps[i]), float(loss.values[i])) for i in at) if len(loss) else ()
    stop, stop_label = None, ""
    error = diagnosis.error
    if error is not None and isinstance(error.get("step"), int):
        stop, stop_label = int(error["step"]), f"crash: {error.get('type') or 'error'}"
    elif diagnosis.status in ("crashed", "killed") and diagnosis.key_numbers.get("last_step") is not None:
        stop, stop_label = int(diagnosis.key_numbers["last_step"]), diagnosis.status
    verdict = diagnosis.verdict_step
    named = tuple((f.code, tuple(f.layers)) for f in sorted(findings, key=_rank) if f.layers)
    val = sig.validation.get("val_loss")
    best = None
    if val is not None and np.isfinite(val.values).any():
        i = int(np.nanargmin(np.where(np.isfinite(val.values), val.values, np.nan)))
        best = (int(val.steps[i]), float(val.values[i]))
    verdict = None if verdict is None else int(verdict)
    return Marks(spike_pts, sig.first_nonfinite_step, stop, stop_label, verdict,
                 _verdict_label(curve, findings, verdict), steps, named, best)


def _onset(sig: Any, marks: Marks, curve: Any) -> Onset | None:
    """The zoomed view: the validation rise of an overfitting run, else the steps around a failure
    that starts early (the verdict's step, or the first NaN/Inf, or the stop of a diverged run)."""
    val = sig.validation.get("val_loss")
    if curve.label == "overfitting" and val is not None:
        return _rise(sig, val, marks)
    at = marks.verdict_step if marks.verdict_step is not None else marks.first_nan
    if at is None and curve.label in ("diverged", "unstable"):
        at = marks.stop
    loss = sig.loss_logged
    span = onset_window(loss.steps, at)
    if span is None or at is None:  # no step, no window
        return None
    lo, hi = span
    reason = (f"the {curve.label} verdict names step {at:,}" if at == marks.verdict_step
              else f"the loss became NaN/Inf at step {at:,}" if at == marks.first_nan
              else f"the run stopped at step {at:,}")
    grad = sig.grad_norm
    return Onset(at, reason, lo, hi, window((loss.steps, loss.values), lo, hi, "training loss"),
                 window(None if val is None else (val.steps, val.values), lo, hi, "validation loss"),
                 window(None if grad is None else (grad.steps, grad.values), lo, hi, "global grad norm"))


def _rise(sig: Any, val: Any, marks: Marks) -> Onset | None:
    """From two evaluations before the rise (the verdict's step, else the validation minimum)
    to the end: training and validation loss over the same steps, each on its own scale."""
    finite = np.isfinite(val.values)
    if finite.sum() < 3:
        return None
    at = marks.verdict_step if marks.verdict_step is not None else (marks.val_best or (None,))[0]
    if at is None:
        return None
    before = int(np.searchsorted(val.steps, at, side="left"))
    lo = int(val.steps[max(0, before - 2)])
    loss = sig.loss_logged
    hi = int(max(val.steps[-1], loss.steps[-1] if len(loss) else val.steps[-1]))
    if hi <= lo:
        return None
    train = window((loss.steps, loss.values), lo, hi, "training loss")
    if train is not None:
        train = series(train.label, train.steps, train.values)
    return Onset(at, f"the validation rise the overfitting verdict names (step {at:,})", lo, hi,
                 train, window((val.steps, val.values), lo, hi, "validation loss"), None, kind="validation")


def _heatmaps(sig: Any, marks: Marks) -> tuple[Heatmap, ...]:
    layers = sig.layers
    if not layers:
        return ()
    out = []
    grad = layers.grad_norm
    if grad is not None:
        out.append(heatmap("grad_heatmap", "Gradient norm by depth and step", "grad norm",
                           "Vanishing gradients show as dark rows near depth 0, explosions as a bright band.",
                           layers.steps, grad, layers.present("grad_norm"), layers.names, marks.layers))
    ratio = layers.update_ratio
    if ratio is not None:
        present = layers.present("update_norm") & layers.present("weight_norm")
        out.append(heatmap("update_ratio", "Update-to-weight ratio by depth and step", "update / weight",
                           "Around 1e-3 is typical; far below means the layer barely learns, far above "
                           "that it thrashes.", layers.steps, ratio, present, layers.names, marks.layers))
    return tuple(h for h in out if h is not None)


def _weights(sig: Any, findings: tuple) -> dict[str, Any]:
    layers = sig.layers
    values = layers.values("weight_norm") if layers.names else None
    if values is None:
        return {"weight_lines": (), "weight_total": 0}
    present = layers.present("weight_norm")
    flagged = [n for f in findings if f.code == "weight_norm_growth" for n in f.layers]
    lines = []
    for j in pick_layers(layers.names, flagged):
        keep = present[:, j]
        if keep.any():
            lines.append(series(layers.names[j], layers.steps[keep], values[keep, j], 600))
    return {"weight_lines": tuple(lines), "weight_total": len(layers.names)}


def _params(code: str) -> dict[str, Any]:
    from runlens.detectors import REGISTRY

    cls = REGISTRY.get(code)
    if cls is None:
        return {}
    try:
        return cls().params()
    except Exception:  # noqa: BLE001 - a detector that cannot be built with defaults has no labels
        return {}


def _docs(codes: set[str]) -> dict[str, CodeDoc]:
    from runlens.detectors.catalog import documented

    docs = documented()
    out = {}
    for code in sorted(codes):
        entry = docs.get(code)
        if entry is not None:
            out[code] = CodeDoc(code, entry.severity, entry.title, _plain(entry.summary),
                                tuple((k, _plain(v)) for k, v in entry.sections.items() if k and v))
    return out


def _plain(text: str) -> str:
    """Docstring markup (``literal``) as the reports show it (`literal`)."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _step_lists(evidence: Mapping[str, Any]) -> Iterator[tuple[str, int | np.integer]]:
    for key, value in evidence.items():
        if "step" in str(key) and isinstance(value, (list, tuple)):
            yield from ((key, v) for v in value if isinstance(v, (int, np.integer)))


def _rank(finding: Any) -> int:
    return {"error": 0, "warning": 1, "info": 2}.get(finding.severity, 9)
