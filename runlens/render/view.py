"""What a report shows, as plain display data: the one place where a
Diagnosis becomes formatted strings.

Both the HTML and the Markdown templates display a :class:`ReportView` and
compute nothing. Values here are raw text (not escaped): each renderer
escapes for its own language (Jinja autoescaping for HTML,
:mod:`runlens.render.escape` for Markdown). Nothing here analyzes the run;
it picks out and formats what the run and the findings already hold.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runlens.diagnosis import SEVERITY_RANK, Finding

DOCS_PAGE = "docs/detectors.md"
MAX_LIST = 20  # layers or evidence items shown inline before "+N more"
MAX_BRIEF = 3  # layers named in a one-line summary (a table cell)
MAX_LAYER_ROWS = 2000


@dataclass(frozen=True)
class FindingView:
    anchor: str
    code: str
    severity: str
    title: str
    step: str
    layers: tuple[str, ...]
    layers_more: int
    layers_brief: tuple[str, ...]
    layers_brief_more: int
    evidence: tuple[tuple[str, str], ...]
    advice: str
    doc_link: str
    doc_summary: str
    doc_sections: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ReportView:
    name: str
    run_id: str
    path: str
    status: str
    curve: str
    curve_reason: str
    curve_evidence: tuple[tuple[str, str], ...]
    counts: tuple[tuple[str, int], ...]
    worst: str
    findings: tuple[FindingView, ...]
    key_numbers: tuple[tuple[str, str], ...]
    crash: Mapping[str, str] | None
    run_facts: tuple[tuple[str, str], ...]
    config: tuple[tuple[str, str], ...]
    environment: tuple[tuple[str, str], ...]
    attempts: tuple[tuple[str, str, str, str], ...]
    reading_warnings: tuple[str, ...]
    analysis_warnings: tuple[str, ...]
    outcomes: tuple[tuple[str, str, str], ...]
    layers: tuple[tuple[str, str, str, str], ...]
    layers_total: int
    version: str
    series: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def top_findings(self) -> tuple[FindingView, ...]:
        return self.findings[:3]

    @property
    def count_labels(self) -> tuple[tuple[str, str], ...]:
        """``(severity, "2 errors")`` for each severity present."""
        return tuple((sev, f"{n} {sev}{'s' if n != 1 and sev != 'info' else ''}") for sev, n in self.counts if n)

    @property
    def counts_text(self) -> str:
        """``2 errors, 1 warning``, or ``no findings``."""
        return ", ".join(label for _, label in self.count_labels) or "no findings"

    @property
    def warning_count(self) -> int:
        return len(self.reading_warnings) + len(self.analysis_warnings)

    @property
    def resumes(self) -> int:
        return max(0, len(self.attempts) - 1)


def build_view(diagnosis: Any) -> ReportView:
    """Everything the templates display, formatted once."""
    run = diagnosis.run
    findings = sorted(diagnosis.findings, key=lambda f: SEVERITY_RANK.get(f.severity, 9))
    counts = tuple((sev, sum(f.severity == sev for f in findings)) for sev in ("error", "warning", "info"))
    meta = run.meta
    layer_info = run.layer_info
    return ReportView(
        name=run.name, run_id=run.run_id, path=str(run.path), status=run.status,
        curve=diagnosis.curve.label, curve_reason=diagnosis.curve.reason,
        curve_evidence=_pairs(diagnosis.curve.evidence),
        counts=counts, worst=findings[0].severity if findings else "none",
        findings=tuple(_finding_view(i, f) for i, f in enumerate(findings)),
        key_numbers=_key_numbers(run),
        crash=_crash(run.error),
        run_facts=_run_facts(run),
        config=_flatten(run.config),
        environment=_flatten(meta.get("environment") if isinstance(meta.get("environment"), Mapping) else {}),
        attempts=_attempts(meta.get("attempts")),
        reading_warnings=tuple(str(w) for w in run.warnings),
        analysis_warnings=tuple(str(w) for w in diagnosis.warnings if w not in run.warnings),
        outcomes=tuple((o.code, o.state, o.reason) for o in diagnosis.outcomes if o.state != "ran"),
        layers=tuple((str(e.get("index", "")), str(e["name"]), str(e.get("kind", "")), fmt(e.get("numel")))
                     for e in layer_info[:MAX_LAYER_ROWS]),
        layers_total=len(layer_info) or len(run.layer_names()),
        version=_version(),
        series=_series(run),
    )


# -- formatting -------------------------------------------------------------
def fmt(value: Any) -> str:
    """A number or value as a report shows it: 4 significant digits,
    thousands separators for integers, NaN/Inf spelled out."""
    if value is None:
        return "–"
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (ValueError, TypeError):
            pass
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Inf" if value > 0 else "-Inf"
        if value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        shown = ", ".join(fmt(v) for v in value[:MAX_LIST])
        more = len(value) - MAX_LIST
        return f"[{shown}{f', … (+{more:,} more)' if more > 0 else ''}]"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={fmt(v)}" for k, v in value.items())
    return str(value)


def _pairs(mapping: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), fmt(v)) for k, v in mapping.items())


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> tuple[tuple[str, str], ...]:
    """Nested config objects as dotted keys, so one two-column table holds them."""
    rows: list[tuple[str, str]] = []
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            rows.extend(_flatten(value, name + "."))
        else:
            rows.append((name, fmt(value)))
    return tuple(rows)


def _finding_view(i: int, f: Finding) -> FindingView:
    summary, sections = _detector_doc(f.code)
    return FindingView(
        anchor=f"finding-{i + 1}", code=f.code, severity=f.severity, title=f.title,
        step=fmt(f.step) if f.step is not None else "", layers=tuple(f.layers[:MAX_LIST]),
        layers_more=max(0, len(f.layers) - MAX_LIST), layers_brief=tuple(f.layers[:MAX_BRIEF]),
        layers_brief_more=max(0, len(f.layers) - MAX_BRIEF), evidence=_pairs(f.evidence), advice=f.advice,
        doc_link=f"{DOCS_PAGE}#{f.code}", doc_summary=summary, doc_sections=sections,
    )


def _detector_doc(code: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The detector's own docstring sections (the "learn more" text)."""
    from runlens.detectors import REGISTRY  # imported late: registering detectors is not free

    cls = REGISTRY.get(code)
    if cls is None:
        return "", ()
    sections = cls.doc_sections()
    return sections.get("", ""), tuple((k, v) for k, v in sections.items() if k and v)


def _crash(error: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not error:
        return None
    return {
        "type": str(error.get("type") or "unknown error"),
        "message": str(error.get("message") or ""),
        "step": fmt(error.get("step")) if error.get("step") is not None else "before training started",
        "traceback": str(error.get("traceback") or "").rstrip(),
    }


def _attempts(attempts: Any) -> tuple[tuple[str, str, str, str], ...]:
    rows = []
    for i, a in enumerate(attempts if isinstance(attempts, Sequence) and not isinstance(attempts, str) else ()):
        if not isinstance(a, Mapping):
            continue
        err = a.get("error")
        err_text = f"{err.get('type', '')}: {err.get('message', '')}" if isinstance(err, Mapping) else ""
        rows.append((str(i + 1), str(a.get("started_at") or "–"), fmt(a.get("first_step")),
                     " ".join(x for x in (str(a.get("status") or ""), err_text) if x)))
    return tuple(rows)


def _run_facts(run: Any) -> tuple[tuple[str, str], ...]:
    meta = run.meta
    facts = [("run id", run.run_id or "–"), ("path", str(run.path)), ("status", run.status),
             ("seed", _plain(meta.get("seed"))), ("host", str(meta.get("host") or "–")),
             ("pid", _plain(meta.get("pid"))), ("started", str(meta.get("started_at") or "–")),
             ("ended", str(meta.get("ended_at") or "–")), ("format version", fmt(meta.get("format_version")))]
    return tuple(facts)


def _plain(value: Any) -> str:
    """Identifiers (seed, pid) without thousands separators."""
    return "–" if value is None else str(value)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("runlens")
    except Exception:  # noqa: BLE001 - running from a checkout without metadata
        return "dev"


# -- key numbers ------------------------------------------------------------
def _key_numbers(run: Any) -> tuple[tuple[str, str], ...]:
    rows: list[tuple[str, str]] = []
    steps = run.steps("scalars")
    if len(steps):
        rows.append(("steps recorded", f"{len(steps):,} (step {steps[0]:,} to {steps[-1]:,})"))
    loss = run.column("scalars", "loss")
    if loss is not None and len(loss):
        rows.extend(_series_numbers("loss", steps, loss))
        bad = ~np.isfinite(loss)
        if bad.any():
            rows.append(("first NaN/Inf loss", f"step {steps[np.argmax(bad)]:,}"))
    val = run.column("evals", "val_loss")
    if val is not None and len(val) and np.isfinite(val).any():
        vsteps = run.steps("evals")
        best = int(np.nanargmin(np.where(np.isfinite(val), val, np.nan)))
        rows.append(("best validation loss", f"{fmt(val[best])} at step {vsteps[best]:,}"))
        rows.append(("final validation loss", f"{fmt(val[-1])} at step {vsteps[-1]:,}"))
    lr = run.column("scalars", "lr")
    if lr is not None and np.isfinite(lr).any():
        fin = lr[np.isfinite(lr)]
        rows.append(("learning rate", f"{fmt(fin.min())} to {fmt(fin.max())}, final {fmt(lr[-1])}"))
    grad = run.column("scalars", "grad_norm")
    if grad is not None and np.isfinite(grad).any():
        fin = np.where(np.isfinite(grad), grad, -np.inf)
        at = int(np.argmax(fin))
        rows.append(("gradient norm", f"median {fmt(np.nanmedian(grad[np.isfinite(grad)]))}, "
                                      f"max {fmt(grad[at])} at step {steps[at]:,}"))
    n_layers = len(run.layer_names())
    if n_layers:
        rows.append(("layers recorded", fmt(n_layers)))
    time = run.column("scalars", "time")
    if time is not None and len(time) > 1 and np.isfinite(time[[0, -1]]).all():
        rows.append(("duration", _duration(float(time[-1] - time[0]))))
    return tuple(rows)


def _series_numbers(label: str, steps: np.ndarray, values: np.ndarray) -> list[tuple[str, str]]:
    finite = np.isfinite(values)
    if not finite.any():
        return [(f"{label}", "never finite")]
    at = int(np.nanargmin(np.where(finite, values, np.nan)))
    return [(f"first {label}", fmt(values[0])), (f"last {label}", fmt(values[-1])),
            (f"lowest {label}", f"{fmt(values[at])} at step {steps[at]:,}")]


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _series(run: Any) -> dict[str, np.ndarray]:
    out = {}
    for name in ("loss", "grad_norm"):
        col = run.column("scalars", name)
        if col is not None and len(col):
            out[name] = col
    val = run.column("evals", "val_loss")
    if val is not None and len(val):
        out["val_loss"] = val
    return out


def curve_doc() -> tuple[str, tuple[tuple[str, str], ...]]:
    """The curve classifier's documentation sections, when the engine has one."""
    try:
        from runlens.detectors import curve
        from runlens.detectors._base import parse_doc_sections
    except ImportError:
        return "", ()
    doc = inspect.getdoc(curve) or ""  # the module docstring holds the sections
    sections = parse_doc_sections(doc)
    return sections.get("", ""), tuple((k, v) for k, v in sections.items() if k and v)
