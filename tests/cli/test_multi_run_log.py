"""A log holding several runs: each run is judged, the worst is shown and the others listed (issue 20.5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli import invoke

from runlens.cli.common import _rank
from runlens.io.logruns import runs_in_log
from tests.multirun_logs import diverging as _diverging
from tests.multirun_logs import healthy as _healthy
from tests.multirun_logs import write_csv as _csv
from tests.multirun_logs import write_text as _text


@pytest.fixture(params=["csv", "text"])
def bad_then_good(request, tmp_path):
    # The diverging run comes first: the reader alone would read the last (healthy) one.
    write = _csv if request.param == "csv" else _text
    return write(tmp_path / f"train.{'csv' if request.param == 'csv' else 'log'}", _diverging, _healthy)


def test_the_worst_run_is_the_verdict_and_the_healthy_one_is_listed(bad_then_good):
    res = invoke("analyze", bad_then_good, "--format", "json")
    assert res.exit_code == 1, res.output
    obj = json.loads(res.stdout)
    assert obj["curve"] == "diverged"
    assert obj["key_numbers"]["first_nonfinite_step"] == 70
    assert obj["headline"].startswith("Run 1 of 2 in this log (the worst)")
    listed = obj["runs_in_file"]
    assert [e["index"] for e in listed] == [1, 2]
    assert [e["verdict"] for e in listed] == ["diverged", "healthy"]
    assert [e["reported"] for e in listed] == [True, False]
    assert listed[0]["severity"] == "error" and listed[1]["severity"] != "error"
    assert listed[1]["steps"] == [1, 120]
    assert obj["warnings"][0].startswith("the log holds 2 runs, each judged")
    assert sum("runs" in w and "log" in w for w in obj["warnings"]) == 1  # the reader's own note is replaced


def test_text_output_names_the_worst_and_lists_the_other(bad_then_good):
    res = invoke("analyze", bad_then_good, "-v")
    assert res.exit_code == 1, res.output
    assert "Run 1 of 2 in this log (the worst): Diverged" in res.stdout
    assert "run 2 (steps 1..120): healthy" in res.stdout.replace("\n   ", "").replace("\n  ", " ")


def test_exit_status_follows_the_worst_run_against_fail_on(bad_then_good):
    assert invoke("analyze", bad_then_good, "--fail-on", "never").exit_code == 0
    assert invoke("analyze", bad_then_good, "--fail-on", "error").exit_code == 1


def test_run_option_still_analyzes_one_run_alone(bad_then_good):
    res = invoke("analyze", bad_then_good, "--run", "2", "--format", "json")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["curve"] == "healthy" and "runs_in_file" not in obj
    assert not obj["headline"].startswith("Run ")


def test_equal_runs_show_the_last_and_say_none_is_worse(tmp_path):
    res = invoke("analyze", _csv(tmp_path / "two.csv", _healthy, _healthy), "--format", "json")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["headline"].startswith("Run 2 of 2 in this log (the last; none is worse)")
    assert [e["reported"] for e in obj["runs_in_file"]] == [False, True]


def test_a_single_run_log_is_reported_as_the_engine_sees_it(tmp_path):
    from runlens.analysis import analyze
    from runlens.io.loader import load_run

    path = _csv(tmp_path / "one.csv", _diverging)
    res = invoke("analyze", path, "--format", "json")
    assert res.exit_code == 1, res.output
    assert json.loads(res.stdout) == json.loads(json.dumps(analyze(load_run(str(path))).to_dict()))


def test_several_paths_each_carry_their_own_listing(tmp_path):
    multi = _text(tmp_path / "a.log", _healthy, _diverging)
    single = _csv(tmp_path / "b.csv", _healthy)
    res = invoke("analyze", multi, single, "--format", "json")
    assert res.exit_code == 1, res.output
    first, second = json.loads(res.stdout)
    assert first["curve"] == "diverged" and [e["reported"] for e in first["runs_in_file"]] == [False, True]
    assert second["curve"] == "healthy" and "runs_in_file" not in second


def test_report_shows_the_worst_run_and_lists_the_others(bad_then_good, tmp_path):
    out = tmp_path / "out"
    res = invoke("report", bad_then_good, "-o", out, "--format", "md")
    assert res.exit_code == 1, res.output
    assert "Run 1 of 2 in this log (the worst)" in res.stdout
    (page,) = out.glob("*.md")
    assert "the log holds 2 runs, each judged" in page.read_text()


@pytest.mark.parametrize("config, n", [
    ({"import_runs": {"count": 3, "read": 3, "runs": [], "note": "x"}}, 3),
    ({"import_runs": {"count": "3"}}, 1),
    # The count is a structured key: the wording of a warning does not count.
    ({"import_warnings": ["the log holds 4 runs (the step went back to its start)"]}, 1),
    ({"text_lines": {"runs": 3, "run": 3}}, 1),
    ({}, 1),
])
def test_runs_in_log_reads_the_importers_count(config, n):
    assert runs_in_log(config) == n


def _judged(severity, curve):
    from types import SimpleNamespace

    return SimpleNamespace(worst_severity=severity, curve=SimpleNamespace(label=curve))


def test_the_worst_is_the_most_severe_then_the_failed_curve():
    assert _rank(_judged("warning", "overfitting")) > _rank(_judged("warning", "healthy"))
    assert _rank(_judged("error", "healthy")) > _rank(_judged("warning", "overfitting"))
    assert _rank(_judged(None, "insufficient_data")) == _rank(_judged(None, "healthy"))


SEVEN = Path(__file__).resolve().parents[3] / "shared" / "real-logs" / "autotrainer" / "DL_tools"


@pytest.mark.skipif(not SEVEN.is_dir(), reason="shared/real-logs is not beside the checkout")
def test_the_log_of_seven_runs_shows_the_one_that_overfits():
    # Issue 20: "a log of seven runs whose analyzed run overfits while the verdict is healthy".
    (log,) = [p for p in SEVEN.rglob("nohup.out") if "Overfit" in str(p)]
    obj = json.loads(invoke("analyze", log, "--format", "json", "--fail-on", "never").stdout)
    assert len(obj["runs_in_file"]) == 7
    assert obj["curve"] == "overfitting" and obj["headline"].startswith("Run 1 of 7")
