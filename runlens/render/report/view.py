"""What a report shows, as plain display data: the one place where a
Diagnosis becomes formatted strings.

Both the HTML and the Markdown templates display a :class:`ReportView` and
compute nothing. Values here are raw text (not escaped): each renderer
escapes for its own language (Jinja autoescaping for HTML,
:mod:`runlens.render.escape` for Markdown). Nothing here analyzes the run;
it picks out and formats what the report data (the diagnosis and what its
report shows) already holds, and never sees a run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runlens.diagnosis import SEVERITY_RANK, Finding
from runlens.render.format import float_text

if TYPE_CHECKING:
    from runlens.diagnosis import Diagnosis
    from runlens.render.contracts import CodeDocLike, ItemLike, KeyNumberLike, ReportDataLike, SparkLike

DOCS_PAGE = "docs/detectors.md"
_FAILING = ("diverged", "unstable", "overfitting", "underfitting")
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
    evidence: tuple[tuple[str, str], ...]  # what was observed: (label, value with unit)
    thresholds: tuple[tuple[str, str], ...]  # what it was judged against
    advice: str
    doc_link: str  # the embedded reference (#ref-CODE), or the online one with --docs-url
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
    references: tuple[Reference, ...] = ()
    sparks: tuple[SparkLike, ...] = ()
    curve_doc: tuple[str, tuple[tuple[str, str], ...]] = ("", ())
    headline: str = ""  # the one sentence: the diagnosis's headline, else the curve verdict's reason
    label: str = ""  # the name as lists show it (an index adds a path where names collide)

    @property
    def status_tone(self) -> str:
        """How the status badge looks: ``bad`` for a crash or kill, ``ok`` only for a finished run
        with nothing worse than info and a curve that is not failing, else ``neutral`` (a diverged run
        that ran to its last step is not shown as a healthy one)."""
        if self.status in ("crashed", "killed"):
            return "bad"
        if self.status == "finished" and self.worst in ("info", "none") and self.curve not in _FAILING:
            return "ok"
        return "neutral"

    @property
    def rank(self) -> tuple[int, int, int, int]:
        """Sort key of a run in a list, worst first: errors, then warnings, then info, then none;
        within one severity the run with more findings of it first."""
        n = dict(self.counts)
        return (SEVERITY_RANK.get(self.worst, 3), -n.get("error", 0), -n.get("warning", 0), -n.get("info", 0))

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


@dataclass(frozen=True)
class Reference:
    """One code's reference, embedded in the report (``#ref-CODE``)."""

    anchor: str
    code: str
    severity: str
    title: str
    summary: str
    sections: tuple[tuple[str, str], ...]
    online: str  # link to the online reference, "" without --docs-url


def build_view(data: ReportDataLike, *, docs_base: str = "") -> ReportView:
    """Everything the templates display, formatted once from a
    :class:`~runlens.report_data.ReportData` (the diagnosis and what its report shows).

    ``docs_base`` (``--docs-url``) adds links to the online reference; the
    reference itself is always embedded, so every link resolves offline.
    """
    diagnosis = data.diagnosis
    order = _order(diagnosis)
    refs = tuple(_reference(doc, docs_base) for code, doc in data.docs.items() if code != "curve")
    curve = data.docs.get("curve")
    return ReportView(
        **_facts(diagnosis, order),
        curve_evidence=_items(data.curve_evidence),
        findings=tuple(_finding_view(n, diagnosis.findings[i], data.evidence[i], data.docs, docs_base)
                       for n, i in enumerate(order)),
        key_numbers=tuple(_key_number(k, diagnosis.key_numbers.get("axis") or "step") for k in data.key_numbers),
        layers=tuple((str(e.get("index", "")), str(e["name"]), str(e.get("kind", "")), fmt(e.get("numel")))
                     for e in data.layer_info[:MAX_LAYER_ROWS]),
        layers_total=data.layers_total, references=refs, sparks=tuple(data.sparks),
        curve_doc=(curve.summary, curve.sections) if curve is not None else ("", ()),
    )


def index_view(diagnosis: Diagnosis) -> ReportView:
    """What an index page shows of one run, from its :class:`~runlens.diagnosis.Diagnosis` alone
    (no report data: the index lists runs, it draws nothing)."""
    order = _order(diagnosis)
    return ReportView(**_facts(diagnosis, order), curve_evidence=(), key_numbers=(), layers=(), layers_total=0,
                      findings=tuple(_finding_view(n, diagnosis.findings[i], (), {}, "")
                                     for n, i in enumerate(order)))


def _order(diagnosis: Diagnosis) -> list[int]:
    return sorted(range(len(diagnosis.findings)),
                  key=lambda i: SEVERITY_RANK.get(diagnosis.findings[i].severity, 9))


def _facts(diagnosis: Diagnosis, order: list[int]) -> dict[str, Any]:
    """The view's fields that come from the diagnosis's run facts and verdicts."""
    findings = [diagnosis.findings[i] for i in order]
    counts = tuple((sev, sum(f.severity == sev for f in findings)) for sev in ("error", "warning", "info"))
    meta = diagnosis.meta
    reading = tuple(diagnosis.reading_warnings)
    return dict(
        name=diagnosis.name, run_id=diagnosis.run_id, path=str(diagnosis.path), status=diagnosis.status,
        curve=diagnosis.curve.label, curve_reason=diagnosis.curve.reason,
        counts=counts, worst=findings[0].severity if findings else "none",
        crash=_crash(diagnosis.error), run_facts=_run_facts(diagnosis),
        config=_flatten(diagnosis.config),
        environment=_flatten(env if isinstance(env := meta.get("environment"), Mapping) else {}),
        attempts=_attempts(meta.get("attempts")),
        reading_warnings=tuple(str(w) for w in reading),
        analysis_warnings=_analysis_warnings(diagnosis.warnings, reading),
        outcomes=tuple((o.code, o.state, o.reason) for o in diagnosis.outcomes if o.state != "ran"),
        version=_version(), headline=diagnosis.headline or diagnosis.curve.reason, label=diagnosis.name,
    )


def _analysis_warnings(warnings: Sequence[str], reading: Sequence[str]) -> tuple[str, ...]:
    """The warnings that are not the reading's: each reading warning is taken out once, so an
    analysis note that happens to say the same as one is still shown."""
    left = Counter(reading)
    out = []
    for w in warnings:
        if left[w] > 0:
            left[w] -= 1
        else:
            out.append(str(w))
    return tuple(out)


# -- formatting -------------------------------------------------------------
def fmt(value: object) -> str:
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
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        return float_text(value)
    if isinstance(value, (list, tuple)):
        shown = ", ".join(fmt(v) for v in value[:MAX_LIST])
        more = len(value) - MAX_LIST
        return f"[{shown}{f', … (+{more:,} more)' if more > 0 else ''}]"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={fmt(v)}" for k, v in value.items())
    return str(value)


def _pairs(mapping: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), fmt(v)) for k, v in mapping.items())


def _with_unit(value: object, unit: str) -> str:
    if value is None:
        return "unknown"
    if unit == "fraction" and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value):
        return f"{value:.1%}"
    text = fmt(value)
    return f"{text} {unit}" if unit and unit != "fraction" else text


def _items(items: Sequence[ItemLike], thresholds: bool | None = None) -> tuple[tuple[str, str], ...]:
    return tuple((i.label, _with_unit(i.value, i.unit)) for i in items
                 if thresholds is None or i.threshold == thresholds)


def _key_number(k: KeyNumberLike, axis: str = "step") -> tuple[str, str]:
    if k.label == "duration":
        return k.label, _duration(k.value) if isinstance(k.value, (int, float)) else "unknown"
    if isinstance(k.value, tuple):
        text = f"{fmt(k.value[0])} to {fmt(k.value[1])}"
    elif k.value is None:
        text = ""
    else:
        text = fmt(k.value)
    if k.unit:
        text = f"{text} {k.unit}".strip()
    if k.at is not None:
        text = f"{text} at {axis} {k.at:,}".strip()
    return k.label, text


def _reference(doc: CodeDocLike, docs_base: str) -> Reference:
    online = f"{docs_base}{DOCS_PAGE}#{doc.code}" if docs_base else ""
    return Reference(f"ref-{doc.code}", doc.code, doc.severity, doc.title, doc.summary, doc.sections, online)


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


def _finding_view(i: int, f: Finding, items: Sequence[ItemLike], docs: Mapping[str, CodeDocLike],
                  docs_base: str) -> FindingView:
    doc = docs.get(f.code)
    return FindingView(
        anchor=f"finding-{i + 1}", code=f.code, severity=f.severity, title=f.title,
        step=fmt(f.step) if f.step is not None else "", layers=tuple(f.layers[:MAX_LIST]),
        layers_more=max(0, len(f.layers) - MAX_LIST), layers_brief=tuple(f.layers[:MAX_BRIEF]),
        layers_brief_more=max(0, len(f.layers) - MAX_BRIEF), evidence=_items(items, False),
        thresholds=_items(items, True), advice=f.advice,
        doc_link=f"{docs_base}{DOCS_PAGE}#{f.code}" if docs_base else f"#ref-{f.code}",
        doc_summary=doc.summary if doc else "", doc_sections=doc.sections if doc else (),
    )


def _crash(error: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not error:
        return None
    return {
        "type": str(error.get("type") or "unknown error"),
        "message": str(error.get("message") or ""),
        "step": fmt(error.get("step")) if error.get("step") is not None else "before training started",
        "traceback": str(error.get("traceback") or "").rstrip(),
    }


def _attempts(attempts: object) -> tuple[tuple[str, str, str, str], ...]:
    rows = []
    for i, a in enumerate(attempts if isinstance(attempts, Sequence) and not isinstance(attempts, str) else ()):
        if not isinstance(a, Mapping):
            continue
        err = a.get("error")
        err_text = f"{err.get('type', '')}: {err.get('message', '')}" if isinstance(err, Mapping) else ""
        rows.append((str(i + 1), str(a.get("started_at") or "–"), fmt(a.get("first_step")),
                     " ".join(x for x in (str(a.get("status") or ""), err_text) if x)))
    return tuple(rows)


def _run_facts(diagnosis: Diagnosis) -> tuple[tuple[str, str], ...]:
    meta = diagnosis.meta
    facts = [("run id", diagnosis.run_id or "–"), ("path", str(diagnosis.path)), ("status", diagnosis.status),
             ("seed", _plain(meta.get("seed"))), ("host", str(meta.get("host") or "–")),
             ("pid", _plain(meta.get("pid"))), ("started", str(meta.get("started_at") or "–")),
             ("ended", str(meta.get("ended_at") or "–")), ("format version", fmt(meta.get("format_version")))]
    return tuple(facts)


def _plain(value: object) -> str:
    """Identifiers (seed, pid) without thousands separators."""
    return "–" if value is None else str(value)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("runlens")
    except Exception:  # noqa: BLE001 - running from a checkout without metadata
        return "dev"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
