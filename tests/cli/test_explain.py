"""``runlens explain`` knows every code and curve label the tool can emit, from the catalog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import runlens
from runlens.cli import main
from runlens.detectors import REGISTRY
from runlens.detectors.catalog import documented
from runlens.diagnosis import CURVES

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p for p in (ROOT / "sample_runs").iterdir() if (p / "run.json").is_file())


def explain(code: str):
    return CliRunner().invoke(main, ["explain", code])


@pytest.fixture(scope="module")
def emitted() -> set[str]:
    """Every finding code and curve label the analysis gives on the sample runs."""
    codes = set()
    for run in SAMPLES:
        d = runlens.analyze(run)
        codes |= {f.code for f in d.findings} | {d.curve.label}
    return codes


def test_explain_knows_every_code_the_sample_runs_emit(emitted):
    assert len(emitted) >= 15
    for code in sorted(emitted):
        result = explain(code)
        assert result.exit_code == 0, (code, result.output)
        assert "What to try:" in result.output and "(not documented)" not in result.output, code


def _source_codes(path: Path, pattern: str) -> set[str]:
    return set(re.findall(pattern, path.read_text(encoding="utf-8")))


def test_explain_knows_the_comparison_and_pipeline_codes():
    checks = ROOT / "runlens" / "compare" / "checks.py"
    compare = _source_codes(checks, r'code="(baseline_\w+)"')
    compare |= {f"baseline_regression_{m}" for m in ("loss", "val_loss")}  # built from the metric
    worker = ROOT / "runlens" / "audit" / "worker.py"
    pipeline = _source_codes(worker, r'"(unreadable_run|analysis_crashed)"')
    assert len(compare) == 6 and pipeline == {"unreadable_run", "analysis_crashed"}
    for code in sorted(compare | pipeline | set(CURVES) | set(REGISTRY) | {"curve"}):
        result = explain(code)
        assert result.exit_code == 0, (code, result.output)
    assert set(documented()) >= compare | pipeline | set(CURVES) | set(REGISTRY)


def test_comparison_advice_is_the_catalog_text():
    from runlens.codes import COMPARE_CODES as CODES

    docs = documented()
    for code, doc in CODES.items():
        assert docs[code].sections["What to try"] == doc["What to try"]


def test_listing_has_one_line_per_code():
    listing = CliRunner().invoke(main, ["explain"]).output.splitlines()
    assert [line.split()[0] for line in listing] == list(documented())
