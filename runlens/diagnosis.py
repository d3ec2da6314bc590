"""Domain objects of a diagnosis: findings, the curve verdict, the diagnosis.

They are frozen and hold plain data. Severity is data; how it looks is the
renderers' business. ``Diagnosis.to_dict`` is the JSON object of the spec's
"Analysis output" and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any

from runlens._meta import MetaFields


class Severity(str, Enum):
    """How bad a finding is. One type, one order and one ``--fail-on`` rule for every command
    (analyze, report, audit, compare, JUnit): ``error`` > ``warning`` > ``info``."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for the most severe."""
        return SEVERITIES.index(self.value)

    def reaches(self, fail_on: str) -> bool:
        """Whether this severity is at least ``fail_on`` (``never``: nothing reaches it)."""
        return fail_on != "never" and self.rank <= Severity(fail_on).rank


SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
FAIL_ON = ("error", "warning", "info", "never")


def reaches(severities: Iterable[str], fail_on: str) -> bool:
    """Whether any of ``severities`` reaches ``--fail-on`` (the one rule every command uses)."""
    return any(Severity(s).reaches(fail_on) for s in severities)


def worst(severities: Iterable[str]) -> str | None:
    """The most severe of ``severities``, or None when there are none."""
    return min(severities, key=SEVERITY_RANK.__getitem__, default=None)
CURVES = ("healthy", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data")
STATUSES = ("finished", "crashed", "killed", "running")


def _freeze(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


def jsonable(value: Any) -> Any:
    """Turn evidence values into JSON-safe data (numpy scalars, tuples, NaN).

    NaN and Inf are not JSON: they become the strings ``"nan"``, ``"inf"``,
    ``"-inf"`` so the output stays valid and still says what was seen.
    Floats are rounded to 6 significant digits so the JSON is stable across
    platforms and readable.
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (ValueError, TypeError):
            value = value.tolist()
            return jsonable(value)
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return float(f"{value:.6g}")
    return str(value)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a detector saw, with the numbers behind it and what to try."""

    code: str
    severity: str
    title: str
    step: int | None = None
    layers: tuple[str, ...] = ()
    evidence: Mapping[str, Any] = field(default_factory=dict)
    advice: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "evidence", _freeze(self.evidence))
        if self.step is not None:
            object.__setattr__(self, "step", int(self.step))

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "title": self.title,
            "step": self.step,
            "layers": list(self.layers),
            "evidence": jsonable(self.evidence),
            "advice": self.advice,
        }


@dataclass(frozen=True, slots=True)
class CurveVerdict:
    """The one label for the shape of the loss curve, and the tests behind it."""

    label: str
    reason: str
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.label not in CURVES:
            raise ValueError(f"curve label must be one of {CURVES}, got {self.label!r}")
        object.__setattr__(self, "evidence", _freeze(self.evidence))


@dataclass(frozen=True, slots=True)
class DetectorOutcome:
    """How one detector's run went: ``ran``, ``skipped`` (with why) or ``crashed``."""

    code: str
    state: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Diagnosis(MetaFields):
    """Everything ``analyze`` concluded about one run, as plain values.

    It holds the verdicts, the findings and the run's facts (where it is,
    its name, status, id, step range and run.json as read), never the run's
    tables nor a way back into the engine, so 10,000 of them are cheap to
    keep. What a report shows is built from it by an explicit step,
    ``runlens.report_data.build_report_data(diagnosis, signals)``.
    """

    path: str
    name: str
    status: str
    curve: CurveVerdict
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...] = ()
    outcomes: tuple[DetectorOutcome, ...] = ()
    #: One sentence: the outcome, where it starts and its cause (``runlens.summary.headline``).
    headline: str = ""
    #: The run's key numbers, one definition each (``runlens.summary.run_numbers``).
    key_numbers: Mapping[str, Any] = field(default_factory=dict)
    #: The step where the failure starts (``runlens.summary.verdict_step``); None on a clean run.
    verdict_step: int | None = None
    run_id: str = ""
    #: First and last recorded training step (None: no steps).
    step_range: tuple[int, int] | None = None
    #: run.json as read, without its per-layer ``layers`` list (the report data carries that).
    meta: Mapping[str, Any] = field(default_factory=dict)
    #: The warnings of reading the run (they lead ``warnings``; the rest are the analysis's own).
    reading_warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "findings", tuple(self.findings))
        object.__setattr__(self, "key_numbers", _freeze(self.key_numbers))
        object.__setattr__(self, "meta", _freeze(self.meta))



    @property
    def worst_severity(self) -> str | None:
        return worst(f.severity for f in self.findings)

    def reaches(self, fail_on: str) -> bool:
        """Whether a finding reaches ``--fail-on``."""
        return reaches((f.severity for f in self.findings), fail_on)

    @property
    def status_text(self) -> str:
        """The run's status as a reader should take it: ``finished (diverged)``, never a bare
        ``finished`` on a run whose curve failed."""
        label = self.curve.label
        if self.status == "finished" and label not in ("healthy", "insufficient_data"):
            return f"finished ({label})"
        if self.status == "finished" and self.worst_severity == "error":
            return "finished (with errors)"
        return self.status

    def summary(self) -> str:
        """One line: name, status, curve and the findings by severity, worst first."""
        counts = [f"{n} {sev}{'s' if n != 1 and sev != 'info' else ''}"
                  for sev in SEVERITIES if (n := sum(f.severity == sev for f in self.findings))]
        codes = ", ".join(dict.fromkeys(f.code for f in self.findings))
        tail = f": {codes}" if codes else ""
        return (f"{self.name}: {self.status}, curve {self.curve.label}, "
                f"{', '.join(counts) or 'no findings'}{tail}")

    def __repr__(self) -> str:
        return f"<Diagnosis {self.summary()}>"

    def to_dict(self) -> dict[str, Any]:
        """The spec's analysis-output object, plus the added keys ``headline``, ``key_numbers``
        and ``verdict_step`` (docs/format.md, "Added keys in the analysis output")."""
        return {
            "run": self.path,
            "name": self.name,
            "status": self.status,
            "curve": self.curve.label,
            "findings": [f.to_dict() for f in self.findings],
            "warnings": list(self.warnings),
            "headline": self.headline,
            "key_numbers": jsonable(self.key_numbers),
            "verdict_step": self.verdict_step,
            # An imported log says which column took which role and why (docs/format.md, "Added keys: roles").
            **({"roles": jsonable(self.config["import_roles"])} if "import_roles" in self.config else {}),
        }
