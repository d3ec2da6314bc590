"""Scoring a labeled set: per-code precision, recall and false alarms, with Wilson intervals.

A graded run is a :class:`Graded`: its label (codes that must appear, codes
that may, the accepted curve labels, the codes that name its fault) and what
the engine said (findings in the engine's order, the curve, the status).

Per finding code: a run whose ``must`` holds the code is a positive (TP when
the engine reports it, else FN); a run where the code is neither ``must``
nor ``may`` is a negative (FP when reported, else TN). ``may`` runs do not
count either way. The false-alarm rate of a code is its FP share among the
*healthy* runs (label ``healthy``) where it is a negative. Every proportion
carries a 95% Wilson score interval, which stays inside [0, 1] and is honest
for the small counts of a labeled set.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

LOUD = ("warning", "error")
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Graded:
    name: str
    group: str  # family (tuning set) or fault (held-out set)
    must: tuple[str, ...]
    may: tuple[str, ...] = ()
    curve_ok: tuple[str, ...] | None = None  # None: the curve is not graded
    first: tuple[str, ...] = ()  # codes naming the injected fault; empty: not graded for "first"
    status: str = "finished"
    healthy: bool = False
    got_codes: tuple[str, ...] = ()  # in the engine's order
    got_severities: tuple[str, ...] = ()
    got_curve: str | None = None
    got_status: str | None = None
    engine_error: str | None = None


@dataclass(frozen=True)
class Rate:
    k: int
    n: int

    @property
    def value(self) -> float:
        return self.k / self.n if self.n else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.k, self.n)

    def text(self) -> str:
        if not self.n:
            return "n/a"
        lo, hi = self.interval
        return f"{self.value:.2f} [{lo:.2f}, {hi:.2f}] ({self.k}/{self.n})"


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (``(nan, nan)`` when n is 0)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class CodeScore:
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0
    healthy_fp: int = 0
    healthy_n: int = 0
    missed: list[str] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)

    @property
    def recall(self) -> Rate:
        return Rate(self.tp, self.tp + self.fn)

    @property
    def precision(self) -> Rate:
        return Rate(self.tp, self.tp + self.fp)

    @property
    def false_alarm_healthy(self) -> Rate:
        return Rate(self.healthy_fp, self.healthy_n)


def per_code(runs: Iterable[Graded], codes: Sequence[str]) -> dict[str, CodeScore]:
    out = {c: CodeScore() for c in codes}
    for r in runs:
        found = set(r.got_codes)
        for code in codes:
            s = out[code]
            if code in r.must:
                if code in found:
                    s.tp += 1
                else:
                    s.fn += 1
                    s.missed.append(r.name)
            elif code not in r.may:
                hit = code in found
                s.fp += hit
                s.tn += not hit
                if hit:
                    s.alarms.append(r.name)
                if r.healthy:
                    s.healthy_n += 1
                    s.healthy_fp += hit
    return out


@dataclass
class Summary:
    runs: int
    curve: Rate
    first: Rate
    healthy_loud: Rate  # healthy runs with any warning or error
    crash_on_finished: Rate
    status: Rate
    recall_all: Rate  # pooled over codes
    precision_all: Rate
    fully_right: Rate


def fully_right(r: Graded) -> bool:
    found = set(r.got_codes)
    return (all(c in found for c in r.must)
            and all(c in r.must or c in r.may for c in found)
            and (r.curve_ok is None or r.got_curve in r.curve_ok)
            and r.got_status == r.status and not r.engine_error)


def summarize(runs: Sequence[Graded], codes: Sequence[str]) -> Summary:
    scores = per_code(runs, codes)
    curved = [r for r in runs if r.curve_ok is not None]
    faulty = [r for r in runs if r.first]
    healthy = [r for r in runs if r.healthy]
    finished = [r for r in runs if r.status == "finished"]
    return Summary(
        runs=len(runs),
        curve=Rate(sum(r.got_curve in r.curve_ok for r in curved), len(curved)),
        first=Rate(sum(bool(r.got_codes) and r.got_codes[0] in r.first for r in faulty), len(faulty)),
        healthy_loud=Rate(sum(any(s in LOUD for s in r.got_severities) for r in healthy), len(healthy)),
        crash_on_finished=Rate(sum(any(c.startswith("crash_") for c in r.got_codes) for r in finished),
                               len(finished)),
        status=Rate(sum(r.got_status == r.status for r in runs), len(runs)),
        recall_all=Rate(sum(s.tp for s in scores.values()), sum(s.tp + s.fn for s in scores.values())),
        precision_all=Rate(sum(s.tp for s in scores.values()), sum(s.tp + s.fp for s in scores.values())),
        fully_right=Rate(sum(fully_right(r) for r in runs), len(runs)),
    )


CURVE_CODES = ("overfitting", "underfitting", "unstable", "diverged")


def from_diagnosis(label: dict, got: dict, *, name: str, group: str, healthy: bool) -> Graded:
    """A :class:`Graded` from a label dict and ``Diagnosis.to_dict()`` (or an engine-error stand-in)."""
    findings = got.get("findings") or []
    curve_ok = tuple(label["curve_ok"]) if label.get("curve_ok") is not None else None
    must = tuple(label.get("must_include", ()))
    # A curve label's finding is that label said as a finding: where the label accepts a
    # curve (or does not grade the curve at all), that curve's code is allowed too.
    said = tuple(c for c in CURVE_CODES if (curve_ok is None or c in curve_ok) and c not in must)
    may = tuple(dict.fromkeys((*label.get("may_include", ()), *said)))
    return Graded(name=name, group=group, must=must, may=may, curve_ok=curve_ok,
                  first=tuple(label.get("first", ())), status=label.get("status", "finished"), healthy=healthy,
                  got_codes=tuple(f["code"] for f in findings),
                  got_severities=tuple(f.get("severity", "") for f in findings),
                  got_curve=got.get("curve"), got_status=got.get("status"), engine_error=got.get("engine_error"))
