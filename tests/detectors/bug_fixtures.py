"""The recorded bug runs under tests/fixtures/bugs, each with its fixed twin: the checks every
detector test makes on them (its code leads the findings; the twin does not raise it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from runlens.analysis import analyze
from runlens.diagnosis import Diagnosis, Finding
from runlens.io.loader import load_run
from runlens.io.run import Run

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "bugs"


def leading_finding(fixture: str, code: str) -> tuple[Diagnosis, Finding]:
    """The diagnosis of the bug run ``fixture`` and its first finding, which must be ``code``."""
    diag = analyze(FIX / fixture)
    first = diag.findings[0]
    assert first.code == code, [f.code for f in diag.findings]
    return diag, first


def assert_fixed_twin_silent(fixture: str, code: str) -> None:
    """The fixed twin ``fixture`` does not raise ``code``."""
    diag = analyze(FIX / fixture)
    assert code not in {f.code for f in diag.findings}


def without_meta_key(fixture: str, key: str) -> Run:
    """The run ``fixture`` as a writer that does not record run.json ``key`` would leave it."""
    run = load_run(FIX / fixture)
    return dataclasses.replace(run, meta={k: v for k, v in run.meta.items() if k != key}, _cache={})
