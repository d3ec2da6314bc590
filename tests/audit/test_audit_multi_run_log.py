"""Audit of a log holding several runs (one row per run) and of loose logs that prove unreadable
(named as skipped, as analyze and report do): issue 20.5 and issue 19.5."""

from __future__ import annotations

import json

from click.testing import CliRunner
from runtree import write_run

from runlens.audit import audit
from runlens.cli import main
from tests.multirun_logs import diverging as _diverging
from tests.multirun_logs import healthy as _healthy
from tests.multirun_logs import write_csv as _csv


def _cli(*args):
    return CliRunner().invoke(main, ["audit", *map(str, args)])


def test_each_run_of_a_log_is_its_own_row(tmp_path):
    log = _csv(tmp_path / "train.csv", _diverging, _healthy)
    result = audit([log], workers=1)
    rows = {r.run: r for r in result.rows}
    assert sorted(rows) == [f"{log}#run-1", f"{log}#run-2"]
    first, second = rows[f"{log}#run-1"], rows[f"{log}#run-2"]
    assert first.curve == "diverged" and first.worst == "error"
    assert second.curve == "healthy" and second.worst != "error"
    assert first.name.endswith("#run-1") and second.name.endswith("#run-2")
    assert first.steps == second.steps == 120
    assert "--run 1" in first.warnings[0] and "--run 2" in second.warnings[0]
    assert result.failed("error") and result.rows[0] is first


def test_a_log_of_one_run_keeps_one_row_under_its_own_path(tmp_path):
    log = _csv(tmp_path / "train.csv", _healthy)
    (row,) = audit([log], workers=1).rows
    assert row.run == str(log) and row.curve == "healthy" and "#run-" not in row.name


def test_a_log_of_several_runs_in_a_folder_through_the_pool_and_the_cli(tmp_path):
    (tmp_path / "sweep").mkdir()
    _csv(tmp_path / "sweep" / "train.csv", _healthy, _diverging, _healthy)
    write_run(tmp_path / "sweep" / "recorded", steps=200)
    result = audit([tmp_path / "sweep"], workers=2)
    names = sorted(r.run.rsplit("/", 1)[-1] for r in result.rows)
    assert names == ["recorded", "train.csv#run-1", "train.csv#run-2", "train.csv#run-3"]
    res = _cli(tmp_path / "sweep", "--format", "json", "--workers", "1")
    assert res.exit_code == 1, res.output
    objs = json.loads(res.stdout)
    assert objs[0]["run"].endswith("train.csv#run-2") and objs[0]["curve"] == "diverged"


def _folder_with_an_unreadable_log(tmp_path):
    root = tmp_path / "work"
    write_run(root / "recorded", steps=200)
    (root / "exp").mkdir()
    # A header that names a loss and no row under it: the sniff takes it, the table reader refuses it.
    (root / "exp" / "metrics.csv").write_text("step,loss\n")
    return root


def test_a_loose_log_that_cannot_be_read_is_skipped_and_named_not_an_error_row(tmp_path):
    root = _folder_with_an_unreadable_log(tmp_path)
    result = audit([root], workers=1)
    assert [r.run for r in result.rows] == [str(root / "recorded")]
    assert [p for p, _ in result.skipped] == [str(root / "exp" / "metrics.csv")]
    assert not result.failed("error")
    res = _cli(root, "--format", "json")
    assert res.exit_code == 0, res.output
    assert "runlens: skipped" in res.stderr and "metrics.csv" in res.stderr
    assert len(json.loads(res.stdout)) == 1


def test_the_same_log_named_on_the_command_line_is_still_an_error_row(tmp_path):
    root = _folder_with_an_unreadable_log(tmp_path)
    log = root / "exp" / "metrics.csv"
    result = audit([log, root / "recorded"], workers=1)
    bad = next(r for r in result.rows if r.run == str(log))
    assert bad.error and [f["code"] for f in bad.findings] == ["unreadable_run"]
    assert result.skipped == () and result.failed("error")
