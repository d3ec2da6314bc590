"""What a detector is, and the registry that holds them.

A detector is a lint rule: one module named for its finding code, one
class registered with :func:`register`, whose docstring is its
documentation in fixed sections (``DOC_SECTIONS``). The contract is
executable:

- **Parameters** are keyword-only constructor arguments, stored verbatim,
  documented under "Parameters" and declared in ``constraints``; they are
  checked once, when the detector is constructed (a bad value is a
  :class:`~runlens.errors.UsageError`, never a detector crash).
- **Data**: ``needs`` lists every column the detector reads (the loader
  projects on their union; a detector run on a run loaded with only its
  own needs gives the same result), ``needs.requires`` those without which
  it is skipped.
- **Skipped vs found nothing**: :class:`Skip` (always with a reason) means
  the data it needs is missing or too short to decide; returning no
  finding means it ran and the run does not have the problem.
- **Dependencies**: ``depends`` names the steps whose verdicts it reads
  (``"curve"``); the registry runs them first and refuses a cycle.
- **Advice** is the docstring's "What to try" section, written once
  (:attr:`Detector.advice`), unless a finding passes a narrower one.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from runlens.codes import SECTION_NAMES as DOC_SECTIONS  # the catalog's section order, kept here by name
from runlens.detectors._params import Interval, validate
from runlens.diagnosis import SEVERITIES, CurveVerdict, Finding
from runlens.signals import Signals, signals_of

if TYPE_CHECKING:
    from runlens.io.run import Run

_CODE_RE = re.compile(r"^[a-z][a-z0-9_]*$")

REGISTRY: dict[str, type[Detector]] = {}

__all__ = ["DOC_SECTIONS", "REGISTRY", "Context", "Detector", "Interval", "Needs", "Skip", "dependency_order",
           "parse_doc_sections", "register"]


class Skip(Exception):
    """Raised by ``Detector.check`` when the data it needs is missing or too short.

    Always carries the reason (it reaches the user as the outcome's
    reason); a detector that ran and found nothing returns no findings.
    """

    def __init__(self, reason: str) -> None:
        if not isinstance(reason, str) or not reason.strip():
            raise TypeError("Skip needs a reason")
        super().__init__(reason)


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
    """What the analysis hands every detector.

    ``signals`` is the run's :class:`~runlens.signals.Signals` (read it with
    :meth:`signals_of`, which also works on a context built by hand);
    ``first_nonfinite_step`` is the signals' first non-finite loss step;
    ``curve`` the curve verdict and ``verdicts`` every verdict of the steps
    the detector declared in ``depends``.
    """

    curve: CurveVerdict | None = None
    first_nonfinite_step: int | None = None
    signals: Signals | None = None
    verdicts: Mapping[str, Any] = field(default_factory=dict)

    def signals_of(self, run: Run) -> Signals:
        """The signals of ``run``: the analysis's own, or computed (once) from the run."""
        if self.signals is not None and self.signals.run is run:
            return self.signals
        return signals_of(run)


class Detector:
    """Base class. Subclasses set ``code``, ``severity``, ``title``, ``needs``,
    ``constraints`` (one per constructor parameter), optionally ``depends``
    and ``verdict`` (the type of the verdict a step publishes), and implement
    ``check``."""

    code: ClassVar[str] = ""
    severity: ClassVar[str] = "warning"
    title: ClassVar[str] = ""
    needs: ClassVar[Needs] = Needs()
    depends: ClassVar[tuple[str, ...]] = ()
    constraints: ClassVar[dict[str, Interval]] = {}
    verdict: ClassVar[type | None] = None
    #: Every severity its findings can take, when it is not only ``severity`` (e.g. a warning
    #: raised to an error on a diverged run); ``runlens explain`` lists them all.
    severities: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_validates", False):
            return

        @functools.wraps(init)
        def checked(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            if type(self).__init__ is checked:  # a subclass's own wrapper validates its own parameters
                self.validate()

        checked._validates = True  # type: ignore[attr-defined]
        cls.__init__ = checked  # type: ignore[method-assign]

    def params(self) -> dict[str, Any]:
        """The constructor parameters and their current values."""
        sig = inspect.signature(type(self).__init__)
        return {n: getattr(self, n) for n in sig.parameters if n != "self" and hasattr(self, n)}

    def validate(self) -> None:
        """Check every parameter against ``constraints`` (UsageError on the first bad one)."""
        validate(type(self).__name__, type(self).constraints, self.params())

    def check(self, run: Run, ctx: Context) -> Iterable[Finding | CurveVerdict]:
        raise NotImplementedError

    @classmethod
    def advice_text(cls) -> str:
        """The "What to try" section as one paragraph (the default advice of every finding)."""
        text = cls.doc_sections().get("What to try", "")
        return " ".join(text.replace("``", "").split())

    @property
    def advice(self) -> str:
        return type(self).advice_text()

    def finding(self, title: str, *, severity: str | None = None, step: int | None = None,
                layers: Iterable[str] = (), evidence: dict[str, Any] | None = None,
                advice: str | None = None) -> Finding:
        """A finding carrying this detector's code, default severity and advice."""
        return Finding(code=self.code, severity=severity or self.severity, title=title,
                       step=step, layers=tuple(layers), evidence=evidence or {},
                       advice=self.advice if advice is None else advice)

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
    unknown = sorted(set(cls.constraints) - set(inspect.signature(cls.__init__).parameters))
    if unknown:
        raise TypeError(f"detector {name}: constraints for parameters it does not take: {unknown}")
    cycle = _cycle({**{c: k.depends for c, k in REGISTRY.items()}, cls.code: tuple(cls.depends)}, cls.code)
    if cycle:
        raise TypeError(f"detector {name}: dependency cycle {' -> '.join(cycle)}")
    REGISTRY[cls.code] = cls
    return cls


def _cycle(graph: Mapping[str, Iterable[str]], start: str) -> list[str] | None:
    """A dependency path from ``start`` back to itself, or None."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for dep in graph.get(node, ()):
            if dep == start:
                return [*path, dep]
            if dep not in seen:
                seen.add(dep)
                stack.append((dep, [*path, dep]))
    return None


def dependency_order(codes: Iterable[str]) -> list[str]:
    """``codes`` plus the registered steps they depend on, dependencies first, ties by code."""
    wanted: set[str] = set()
    todo = list(codes)
    while todo:
        c = todo.pop()
        if c not in wanted:
            wanted.add(c)
            todo.extend(d for d in (REGISTRY[c].depends if c in REGISTRY else ()) if d in REGISTRY)
    done: list[str] = []
    placed: set[str] = set()
    while len(done) < len(wanted):
        ready = sorted(c for c in wanted - placed
                       if all(d in placed or d not in wanted for d in (REGISTRY[c].depends if c in REGISTRY else ())))
        done.extend(ready)
        placed.update(ready)
    return done
