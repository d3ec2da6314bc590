"""Turn a run into a diagnosis: load -> signals -> steps in dependency order -> Diagnosis.

``analyze`` is the one place that runs detectors. It reads only the
columns the selected detectors (and the steps they depend on) declare in
their ``needs``, computes the run's :class:`~runlens.signals.Signals` once
and hands them to every detector in the :class:`~runlens.detectors.Context`.
Detectors run in the order their declared ``depends`` give (the registry
refuses a cycle), each inside a guard: it *ran*, was *skipped* (its
``needs.requires`` are absent or it raised :class:`~runlens.detectors.Skip`)
or *crashed* (any other exception: the diagnosis gets a warning line and the
other detectors go on). A dependency that was not asked for still runs, for
its verdict, but its findings and outcome stay out of the diagnosis. The
result is deterministic: findings sorted by severity, step, code, and no
clock or randomness anywhere in it.
"""

from __future__ import annotations

import dataclasses
import os
import warnings as pywarnings
from collections.abc import Iterable
from typing import Any, TypedDict

import numpy as np

from runlens.codes import CURVE
from runlens.detectors import REGISTRY, Context, Detector, Needs, Skip
from runlens.detectors._base import dependency_order
from runlens.detectors._causes import order_by_cause
from runlens.diagnosis import SEVERITY_RANK, CurveVerdict, DetectorOutcome, Diagnosis, Finding
from runlens.errors import UsageError
from runlens.io.loader import load_run
from runlens.io.run import Run
from runlens.io.runmeta import one_line
from runlens.signals import Signals, signals_of
from runlens.summary import headline, run_numbers, verdict_step

# What the signals the context always carries read, and what the key numbers read
# (``runlens.summary``), whatever detectors run.
BASE_NEEDS = Needs(scalars=("loss", "step_skipped", "loss_scale", "time"), evals=("val_loss",))


def analyze(run_or_path: Run | str | os.PathLike[str], *,
            detectors: Iterable[str | Detector] | None = None) -> Diagnosis:
    """Diagnose a run (a :class:`Run` or the path of a run directory).

    ``detectors`` limits the analysis to some finding codes (or detector
    instances, e.g. with other thresholds); by default every registered
    detector runs. Unknown codes raise :class:`UsageError`.
    """
    chosen = _instances(detectors)
    steps = _with_dependencies(chosen)
    if isinstance(run_or_path, Run):
        run = run_or_path
    else:
        run = load_run(run_or_path, columns=projection(steps))
    notes: list[str] = []
    signals = signals_of(run)
    ctx = Context(first_nonfinite_step=signals.first_nonfinite_step, signals=signals)
    reported = {id(d) for d in chosen}
    findings: list[Finding] = []
    outcomes = []
    for det in steps:
        outcome, found, verdict = run_step(det, run, ctx)
        if verdict is not None:
            ctx = _publish(ctx, det.code, verdict)
        if id(det) not in reported:
            continue
        outcomes.append(outcome)
        findings.extend(found)
        if outcome.state == "crashed":
            notes.append(f"detector {det.code} crashed: {outcome.reason}")
    curve = ctx.curve or CurveVerdict("insufficient_data", "the curve classifier did not run")
    ordered, curve = order_by_cause(findings, curve, _order)  # a cause leads the symptoms it explains
    at = verdict_step(run.status, curve, ordered, signals, run)
    # The curve's own finding marks where the failure starts: the same step as headline and chart.
    ordered = tuple(dataclasses.replace(f, step=at) if f.code == curve.label and at is not None else f
                    for f in ordered)
    facts = facts_of(run, signals)
    return Diagnosis(**facts, curve=curve, findings=ordered,
                     warnings=(*run.warnings, *notes), outcomes=tuple(outcomes),
                     headline=headline(run.status, curve, ordered, facts["key_numbers"], at), verdict_step=at)


class RunFacts(TypedDict):
    """The run's facts a :class:`Diagnosis` keeps (keyword arguments of ``Diagnosis``)."""

    path: str
    name: str
    status: str
    run_id: str
    step_range: tuple[int, int] | None
    meta: dict[str, Any]
    reading_warnings: tuple[str, ...]
    key_numbers: dict[str, Any]


def facts_of(run: Run, signals: Signals | None = None) -> RunFacts:
    """The run's facts a :class:`Diagnosis` keeps, as plain values (its key numbers, read from
    ``signals``, included), so nothing downstream holds the run's tables. run.json's per-layer
    ``layers`` list stays out: it can be long, and only a report shows it (from the signals).
    Without ``signals`` (a Diagnosis built by hand) they are computed here."""
    steps = run.steps("scalars")
    return RunFacts(
        path=run.path, name=run.name, status=run.status, run_id=run.run_id,
        step_range=(int(steps.min()), int(steps.max())) if len(steps) else None,
        meta={k: v for k, v in run.meta.items() if k != "layers"},
        reading_warnings=tuple(run.warnings),
        key_numbers=run_numbers(signals if signals is not None else signals_of(run), run),
    )


def projection(detectors: Iterable[Detector]) -> dict[str, list[str]]:
    """The union of the detectors' ``needs`` (and the base needs), per table."""
    detectors = list(detectors)
    needs = [BASE_NEEDS, *(d.needs for d in detectors)]
    tables: dict[str, list[str]] = {}
    for table in ("scalars", "evals", "layers", "events"):
        cols = [c for n in needs for c in getattr(n, table)]
        cols += [r.split(".", 1)[1] for n in needs for r in n.requires
                 if r.startswith(table + ".")]
        if cols or any(table in n.requires for n in needs):
            tables[table] = sorted(set(cols))
    return tables


def run_detector(det: Detector, run: Run, ctx: Context) -> tuple[DetectorOutcome, list[Finding]]:
    """Run one detector inside the guard: ran, skipped (with why) or crashed."""
    outcome, found, _ = run_step(det, run, ctx)
    return outcome, found


def run_step(det: Detector, run: Run, ctx: Context) -> tuple[DetectorOutcome, list[Finding], object]:
    """:func:`run_detector`, plus the verdict a step such as the curve publishes (or None)."""
    missing = [r for r in det.needs.requires if not run.has(*r.split(".", 1))]
    if missing:
        return DetectorOutcome(det.code, "skipped", f"needs {', '.join(missing)}"), [], None
    verdict = None
    try:
        with pywarnings.catch_warnings(), np.errstate(all="ignore"):
            pywarnings.simplefilter("ignore")
            out = list(det.check(run, ctx) or ())
        kind = type(det).verdict
        verdicts = [v for v in out if kind is not None and isinstance(v, kind)]
        rest = [f for f in out if not (kind is not None and isinstance(f, kind))]
        found = [f for f in rest if isinstance(f, Finding)]
        bad = [f for f in rest if not isinstance(f, Finding)]
        if bad or len(verdicts) > 1:
            raise TypeError(f"check() yielded {type(bad[0]).__name__ if bad else 'two verdicts'}, not Finding")
        verdict = verdicts[0] if verdicts else None
    except Skip as why:
        return DetectorOutcome(det.code, "skipped", str(why)), [], None
    except UsageError:
        raise  # a detector configured with bad parameters is the caller's mistake, not the data's
    except Exception as exc:  # noqa: BLE001 - the guard: one broken detector must not stop the rest
        return DetectorOutcome(det.code, "crashed", f"{type(exc).__name__}: {one_line(exc)}"), [], None
    return DetectorOutcome(det.code, "ran"), found, verdict


def first_nonfinite_step(run: Run) -> int | None:
    """The first step whose training loss counts as NaN or +/-Inf (see :mod:`runlens.signals.loss`)."""
    return signals_of(run).first_nonfinite_step


def _publish(ctx: Context, code: str, verdict: object) -> Context:
    verdicts = {**ctx.verdicts, code: verdict}
    if code == CURVE and isinstance(verdict, CurveVerdict):
        return dataclasses.replace(ctx, verdicts=verdicts, curve=verdict)
    return dataclasses.replace(ctx, verdicts=verdicts)


def _instances(detectors: Iterable[str | Detector] | None) -> list[Detector]:
    if detectors is None:
        return [REGISTRY[code]() for code in sorted(REGISTRY)]
    chosen = []
    for d in detectors:
        if isinstance(d, Detector):
            chosen.append(d)
        elif isinstance(d, str) and d in REGISTRY:
            chosen.append(REGISTRY[d]())
        else:
            known = ", ".join(sorted(REGISTRY))
            raise UsageError(f"unknown detector code {d!r}; known codes: {known}")
    return sorted(chosen, key=lambda d: d.code)


def _with_dependencies(chosen: list[Detector]) -> list[Detector]:
    """The chosen detectors and the registered steps they (transitively) depend on, in order."""
    by_code = {d.code: d for d in chosen}
    codes = {d.code for d in chosen} | {dep for d in chosen for dep in type(d).depends if dep in REGISTRY}
    codes |= {CURVE}  # the verdict every diagnosis carries, whichever detectors were chosen
    order = dependency_order(c for c in codes if c in REGISTRY)  # unregistered instances run last
    extra = {c: REGISTRY[c]() for c in order if c not in by_code}
    rank = {c: i for i, c in enumerate(order)}
    steps = [*chosen, *extra.values()]
    return sorted(steps, key=lambda d: (rank.get(d.code, len(rank)), d.code))


def _order(f: Finding) -> tuple:
    return (SEVERITY_RANK[f.severity], -1 if f.step is None else f.step, f.code, f.title, f.layers)
