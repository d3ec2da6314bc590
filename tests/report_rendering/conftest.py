"""Fixtures for the report tests (builders live in report_fixtures.py)."""

from __future__ import annotations

import pytest
from report_fixtures import HOSTILE, make_diagnosis, make_run

from runlens.diagnosis import Diagnosis


@pytest.fixture
def demo_diagnosis() -> Diagnosis:
    run = make_run(spikes=(100, 300), nan_at=550, crash=True)
    return make_diagnosis(run)


@pytest.fixture
def hostile_diagnosis() -> Diagnosis:
    run = make_run(hostile=True, crash=True, spikes=(100, 300), name=f"evil {HOSTILE} | `x`")
    return make_diagnosis(run, hostile=True)
