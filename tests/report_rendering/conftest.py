"""Fixtures for the report tests (builders live in report_fixtures.py)."""

from __future__ import annotations

import pytest
from report_fixtures import HOSTILE, make_report, make_run

from runlens.report_data import ReportData


@pytest.fixture
def demo_report() -> ReportData:
    run = make_run(spikes=(100, 300), nan_at=550, crash=True)
    return make_report(run)


@pytest.fixture
def hostile_report() -> ReportData:
    run = make_run(hostile=True, crash=True, spikes=(100, 300), name=f"evil {HOSTILE} | `x`")
    return make_report(run, hostile=True)
