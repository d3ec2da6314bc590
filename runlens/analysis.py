"""Turn a run into a diagnosis: the curve verdict, then every detector, each guarded.

``analyze`` is the one place that runs detectors. It reads only the
columns the selected detectors declare in their ``needs`` (plus what the
curve classifier and the shared context read), computes the shared
:class:`~runlens.detectors.Context` once, and calls each detector inside a
guard: it *ran*, was *skipped* (its ``needs.requires`` are absent or it
raised :class:`~runlens.detectors.Skip`) or *crashed* (any other exception:
the diagnosis gets a warning line and the other detectors go on). The
result is deterministic: findings sorted by severity, step, code, and no
clock or randomness anywhere in it.
"""

from __future__ import annotations

import dataclasses
import os
import warnings as pywarnings
from collections.abc import Iterable

import numpy as np

from runlens.detectors import REGISTRY, Context, Detector, Needs, Skip
from runlens.detectors._nonfinite import nonfinite_mask
from runlens.diagnosis import SEVERITY_RANK, CurveVerdict, DetectorOutcome, Diagnosis, Finding
from runlens.errors import UsageError
from runlens.io.loader import load_run
from runlens.io.run import Run
from runlens.io.runmeta import one_line

# What the context and the curve classifier read, whatever detectors run.
BASE_NEEDS = Needs(scalars=("loss", "grad_norm", "lr", "step_skipped"), evals=("val_loss",))


def analyze(run_or_path: Run | str | os.PathLike[str], *,
            detectors: Iterable[str | Detector] | None = None) -> Diagnosis:
    """Diagnose a run (a :class:`Run` or the path of a run directory).

    ``detectors`` limits the analysis to some finding codes (or detector
    instances, e.g. with other thresholds); by default every registered
    detector runs. Unknown codes raise :class:`UsageError`.
    """
    chosen = _instances(detectors)
    if isinstance(run_or_path, Run):
        run = run_or_path
    else:
        run = load_run(run_or_path, columns=projection(chosen))
    notes: list[str] = []
    ctx = Context(first_nonfinite_step=first_nonfinite_step(run))
    ctx = dataclasses.replace(ctx, curve=_classify(run, ctx, notes))
    findings: list[Finding] = []
    outcomes = []
    for det in chosen:
        outcome, found = run_detector(det, run, ctx)
        outcomes.append(outcome)
        findings.extend(found)
        if outcome.state == "crashed":
            notes.append(f"detector {det.code} crashed: {outcome.reason}")
    return Diagnosis(run=run, curve=ctx.curve, findings=tuple(sorted(findings, key=_order)),
                     warnings=(*run.warnings, *notes), outcomes=tuple(outcomes))


def projection(detectors: Iterable[Detector]) -> dict[str, list[str]]:
    """The union of the detectors' ``needs`` (and the base needs), per table."""
    needs = [BASE_NEEDS, _curve_needs(), *(d.needs for d in detectors)]
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
    missing = [r for r in det.needs.requires if not run.has(*r.split(".", 1))]
    if missing:
        return DetectorOutcome(det.code, "skipped", f"needs {', '.join(missing)}"), []
    try:
        with pywarnings.catch_warnings(), np.errstate(all="ignore"):
            pywarnings.simplefilter("ignore")
            found = list(det.check(run, ctx) or ())
        bad = [f for f in found if not isinstance(f, Finding)]
        if bad:
            raise TypeError(f"check() yielded {type(bad[0]).__name__}, not Finding")
    except Skip as why:
        return DetectorOutcome(det.code, "skipped", str(why) or "skipped"), []
    except UsageError:
        raise  # a detector configured with bad parameters is the caller's mistake, not the data's
    except Exception as exc:  # noqa: BLE001 - the guard: one broken detector must not stop the rest
        return DetectorOutcome(det.code, "crashed", f"{type(exc).__name__}: {one_line(exc)}"), []
    return DetectorOutcome(det.code, "ran"), found


def first_nonfinite_step(run: Run) -> int | None:
    """The first step whose training loss is NaN or +/-Inf (None if none; nulls are not NaN)."""
    bad = nonfinite_mask(run, "scalars", "loss")
    if bad is None or not bad.any():
        return None
    return int(run.steps("scalars")[bad.argmax()])


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


def _curve_module():
    try:
        from runlens.detectors import curve
    except ImportError:
        return None
    return curve if callable(getattr(curve, "classify", None)) else None


def _curve_needs() -> Needs:
    needs = getattr(_curve_module(), "NEEDS", None)
    return needs if isinstance(needs, Needs) else Needs()


def _classify(run: Run, ctx: Context, notes: list[str]) -> CurveVerdict:
    curve = _curve_module()
    if curve is None:
        return CurveVerdict("insufficient_data", "the curve classifier is not installed")
    try:
        with pywarnings.catch_warnings(), np.errstate(all="ignore"):
            pywarnings.simplefilter("ignore")
            verdict = curve.classify(run, ctx)
        if not isinstance(verdict, CurveVerdict):
            raise TypeError(f"classify() returned {type(verdict).__name__}, not CurveVerdict")
        return verdict
    except Exception as exc:  # noqa: BLE001 - same guard as the detectors
        notes.append(f"curve classifier crashed: {type(exc).__name__}: {one_line(exc)}")
        return CurveVerdict("insufficient_data", "the curve classifier failed on this run")


def _order(f: Finding) -> tuple:
    return (SEVERITY_RANK[f.severity], -1 if f.step is None else f.step, f.code, f.title, f.layers)
