"""The shipped sample runs: valid format v1, and diagnosed as their expected.json says.

Each ``sample_runs/<name>/`` was recorded from a real training script
(``sample_runs/generate.py``) and carries ``expected.json``: the curve label,
the status, codes that must appear (the fault the run was made with) and
codes that must not (false alarms). The same expectations are checked
through the Python API and through ``runlens analyze --format json``, since
the reports and CI use the latter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs"
RUNS = sorted(p for p in SAMPLES.iterdir() if p.is_dir() and (p / "expected.json").is_file())
IDS = [p.name for p in RUNS]


def _expected(run: Path) -> dict:
    return json.loads((run / "expected.json").read_text())


def _assert_matches(run: Path, got: dict) -> None:
    exp = _expected(run)
    codes = [f["code"] for f in got["findings"]]
    summary = f"{run.name}: got curve={got['curve']} status={got['status']} findings={codes}"
    assert got["status"] == exp["status"], summary
    assert got["curve"] == exp["curve"], summary
    missing = [c for c in exp["must_include"] if c not in codes]
    assert not missing, f"{summary}; missing {missing}"
    unwanted = [c for c in exp["must_not_include"] if c in codes]
    assert not unwanted, f"{summary}; must not include {unwanted}"


def test_every_expected_label_is_well_formed():
    assert len(RUNS) >= 15, "sample_runs/ lost runs: regenerate with python sample_runs/generate.py"
    for run in RUNS:
        exp = _expected(run)
        assert exp["status"] in {"finished", "crashed", "killed"}, run.name
        assert exp["curve"] in {"healthy", "overfitting", "underfitting", "unstable", "diverged",
                                "insufficient_data"}, run.name
        assert not set(exp["must_include"]) & set(exp["must_not_include"]), run.name
        assert exp["why"], run.name


def test_samples_cover_every_curve_and_status():
    curves = {_expected(r)["curve"] for r in RUNS}
    statuses = {_expected(r)["status"] for r in RUNS}
    assert curves == {"healthy", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data"}
    assert statuses == {"finished", "crashed", "killed"}


def test_shipped_labels_match_the_generator():
    """expected.json is what generate.py writes: a label edited in one place only is caught."""
    pytest.importorskip("torch")
    sys.dont_write_bytecode = True  # no __pycache__ inside sample_runs/
    sys.path.insert(0, str(SAMPLES))
    try:
        import generate
    finally:
        sys.path.remove(str(SAMPLES))
    by_name = {s.spec.name: s for s in generate.SAMPLES}
    assert sorted(by_name) == IDS
    for run in RUNS:
        assert _expected(run) == by_name[run.name].expected(), run.name


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_sample_conforms_to_format(run, check_runlog):
    check_runlog(run)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_analyze_api_gives_expected_labels(run):
    import runlens

    got = runlens.analyze(run).to_dict()
    _assert_matches(run, got)


@pytest.mark.parametrize("run", RUNS, ids=IDS)
def test_analyze_cli_json_gives_expected_labels(run):
    proc = subprocess.run([sys.executable, "-m", "runlens", "analyze", str(run), "--format", "json",
                           "--fail-on", "never"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    # --fail-on never: findings never change the exit status; 2 would mean the run could not be read.
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["run"] == str(run)
    _assert_matches(run, got)


@pytest.mark.parametrize("name", ["healthy", "resumed"])
def test_healthy_run_has_no_warning_or_error(name):
    import runlens

    diagnosis = runlens.analyze(SAMPLES / name)
    loud = [(f.code, f.severity, f.title) for f in diagnosis.findings if f.severity in ("warning", "error")]
    assert not loud, f"false alarms on the {name} run: {loud}"
    assert diagnosis.curve.label == "healthy"
