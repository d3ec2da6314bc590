"""A folder written by ``runlens import`` from a log of several runs holds one run: the one imported.

Its run.json keeps ``config["import_runs"]`` (which run of how many it was), but that is provenance:
``audit`` lists the folder once and ``analyze``/``report`` judge one run, not the log's N (bug: a
folder imported from a log of three runs was audited as three rows, ``imp#run-1..3``, each the same
run, and ``analyze DIR/run.json`` said "Run 3 of 3 in this log").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli import invoke

from runlens.audit import audit
from tests.multirun_logs import diverging, healthy, write_csv, write_text

RUNS = (healthy, diverging, healthy)  # the default import reads run 3 (healthy); --run 2 the NaN one


@pytest.fixture(params=["text", "csv"])
def log(request, tmp_path: Path) -> Path:
    if request.param == "text":
        return write_text(tmp_path / "logs" / "train.log", *RUNS)
    return write_csv(tmp_path / "logs" / "train.csv", *RUNS)


def _imported(log: Path, out: Path, *extra: str) -> Path:
    res = invoke("import", "auto", log, out, *extra)
    assert res.exit_code == 0, res.output
    runs = json.loads((out / "run.json").read_text())["config"]["import_runs"]
    assert runs["count"] == 3  # the provenance stays: which run of how many was imported
    return out


def test_audit_lists_the_imported_folder_once(log, tmp_path):
    _imported(log, tmp_path / "runs" / "last")
    _imported(log, tmp_path / "runs" / "second", "--run", "2")
    rows = audit([str(tmp_path / "runs")], workers=1).rows
    assert sorted(r.run.rsplit("/", 1)[-1] for r in rows) == ["last", "second"]
    res = invoke("audit", tmp_path / "runs" / "second", "--format", "json", "--workers", "1",
                 "--fail-on", "never")
    assert res.exit_code == 0, res.output
    [obj] = json.loads(res.stdout)
    assert obj["curve"] == "diverged" and "#run-" not in obj["run"]


@pytest.mark.parametrize("named", ["folder", "run.json", "file URL"])
def test_analyze_judges_the_one_run_the_folder_holds(log, tmp_path, named):
    out = _imported(log, tmp_path / "imp")
    path = {"folder": str(out), "run.json": str(out / "run.json"), "file URL": out.as_uri()}[named]
    res = invoke("analyze", path, "--format", "json")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["curve"] == "healthy" and "runs_in_file" not in obj
    assert not obj["headline"].startswith("Run ")
    assert not any("each judged" in w for w in obj["warnings"])


def test_report_of_the_folder_is_one_run(log, tmp_path):
    out = _imported(log, tmp_path / "imp")
    res = invoke("report", out, "-o", tmp_path / "reports", "--format", "md", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert "in this log" not in res.stdout and "imp: Healthy" in res.stdout


def test_import_run_2_keeps_run_2_and_it_is_judged_alone(log, tmp_path):
    out = _imported(log, tmp_path / "second", "--run", "2")
    assert json.loads((out / "run.json").read_text())["config"]["import_runs"]["read"] == 2
    res = invoke("analyze", out / "run.json", "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["curve"] == "diverged" and obj["key_numbers"]["first_nonfinite_step"] == 70
    assert "runs_in_file" not in obj and not obj["headline"].startswith("Run ")


@pytest.mark.parametrize("extra, read", [((), 3), (("--run", "2"), 2)])
def test_the_folder_says_which_run_it_holds_and_how_to_import_another(log, tmp_path, extra, read):
    # The importer's note ends "--run N reads another": true of the log, not of the folder, on which
    # `analyze --run N` is no way to another run (review: the imported folder kept that advice).
    out = _imported(log, tmp_path / "imp", *extra)
    res = invoke("analyze", out, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    notes = [w for w in json.loads(res.stdout)["warnings"] if "runs" in w]
    assert len(notes) == 1, notes
    assert f"this folder holds run {read} (" in notes[0] and f"of the 3 runs of {log}" in notes[0]
    assert f"runlens import {'text' if log.suffix == '.log' else 'table'} {log} OUT --run N" in notes[0]
    assert "reads another" not in notes[0] and "pick another" not in notes[0]
    # `runlens import` itself still says the log's own words, where --run N is the way
    res = invoke("import", "auto", log, tmp_path / "again")
    assert res.exit_code == 0 and "--run N" in res.output
