"""The audit and the comparison on the bundled sample runs (real recordings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runlens.audit import audit
from runlens.compare import compare_runs

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
pytestmark = pytest.mark.skipif(not any(SAMPLES.glob("*/expected.json")), reason="sample_runs/ not generated")


@pytest.fixture(scope="module")
def expected():
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(SAMPLES.glob("*/expected.json"))}


@pytest.fixture(scope="module")
def result():
    return audit([SAMPLES], workers=2)


def test_every_sample_run_is_a_row(result, expected):
    assert sorted(row.name for row in result.rows) == sorted(expected)
    assert not any(row.error for row in result.rows)


def test_statuses_match_the_expectations(result, expected):
    # Which findings each run must have is the engine's contract (tests/test_sample_runs.py).
    assert {row.name: row.status for row in result.rows} == {k: v["status"] for k, v in expected.items()}


def test_rows_are_the_per_run_analyses(result):
    from runlens.analysis import analyze

    for row in result.rows[:: max(1, len(result.rows) // 5)]:
        assert row.to_dict() == analyze(row.run).to_dict()


def test_worst_first_and_the_gate(result):
    worst = [row.worst for row in result.rows]
    rank = {"error": 0, "warning": 1, "info": 2, None: 3}
    assert [rank[w] for w in worst] == sorted(rank[w] for w in worst)
    assert result.failed("error") and not result.failed("never")


def test_compare_sample_runs_against_healthy():
    base = SAMPLES / "healthy"
    assert compare_runs(SAMPLES / "resumed", base).findings == ()
    assert compare_runs(base, base).findings == ()
    nan = {f.code for f in compare_runs(SAMPLES / "numerical_nan", base).findings}
    assert "baseline_new_nonfinite" in nan
    slow = {f.code for f in compare_runs(SAMPLES / "lr_too_low", base).findings}
    assert {"baseline_regression_loss", "baseline_slower_convergence"} & slow
