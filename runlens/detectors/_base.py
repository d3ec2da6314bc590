"""What a detector is, and the registry that holds them.

A detector is a lint rule: one module named for its finding code, one
class registered with :func:`register`, whose docstring is its
documentation in fixed sections (``DOC_SECTIONS``). Registration checks the
class when it is imported, so a detector without its documentation, with an
unknown severity or a duplicate code never reaches a user.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from runlens.diagnosis import SEVERITIES, CurveVerdict, Finding

if TYPE_CHECKING:
    from runlens.io.run import Run

DOC_SECTIONS = ("What it detects", "Why it matters", "How it decides", "What to try", "Parameters")
_CODE_RE = re.compile(r"^[a-z][a-z0-9_]*$")

REGISTRY: dict[str, type[Detector]] = {}


class Skip(Exception):
    """Raised by ``Detector.check`` when the run lacks what the detector needs."""


@dataclass(frozen=True)
class Needs:
    """The columns a detector reads; the loader projects on their union.

    ``requires`` lists ``"table.column"`` entries without which the detector
    is skipped (with that reason) instead of run.
    """

    scalars: tuple[str, ...] = ()
    evals: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    """Facts computed once per analysis and shared by all detectors.

    ``first_nonfinite_step`` is the first step whose loss is NaN/Inf (None if
    none): a NaN makes later signals meaningless, so detectors that read
    trends only look at steps before it. ``curve`` is the curve verdict,
    computed before any detector runs.
    """

    curve: CurveVerdict | None = None
    first_nonfinite_step: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Detector:
    """Base class. Subclasses set ``code``, ``severity``, ``title``, ``needs``
    and implement ``check``. Constructor parameters are keyword-only, stored
    verbatim, and documented in the "Parameters" section."""

    code: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    title: ClassVar[str] = ""
    needs: ClassVar[Needs] = Needs()

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(self, title: str, *, severity: str | None = None, step: int | None = None,
                layers: Iterable[str] = (), evidence: dict[str, Any] | None = None,
                advice: str = "") -> Finding:
        """A finding carrying this detector's code and default severity."""
        return Finding(code=self.code, severity=severity or self.severity, title=title,
                       step=step, layers=tuple(layers), evidence=evidence or {}, advice=advice)

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        return parse_doc_sections(inspect.getdoc(cls) or "")


def parse_doc_sections(doc: str) -> dict[str, str]:
    """Split a docstring into its summary ("") and ``Heading:`` sections."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in doc.splitlines():
        head = line.strip().rstrip(":")
        if line.strip().endswith(":") and head in DOC_SECTIONS:
            current = head
            sections[current] = []
        else:
            sections[current].append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items()}


def register(cls: type[Detector]) -> type[Detector]:
    """Class decorator: validate a detector and add it to ``REGISTRY``."""
    name = cls.__name__
    if not _CODE_RE.match(cls.code or ""):
        raise TypeError(f"detector {name}: code {cls.code!r} is not snake_case")
    if cls.code in REGISTRY and REGISTRY[cls.code] is not cls:
        raise TypeError(f"detector {name}: code {cls.code!r} already registered by {REGISTRY[cls.code].__name__}")
    if cls.severity not in SEVERITIES:
        raise TypeError(f"detector {name}: severity {cls.severity!r} not in {SEVERITIES}")
    if not cls.title:
        raise TypeError(f"detector {name}: no title")
    sections = cls.doc_sections()
    missing = [s for s in DOC_SECTIONS if not sections.get(s)]
    if missing or not sections.get(""):
        raise TypeError(f"detector {name}: docstring lacks sections {missing or ['summary']}")
    if cls.check is Detector.check:
        raise TypeError(f"detector {name}: check() not implemented")
    REGISTRY[cls.code] = cls
    return cls
