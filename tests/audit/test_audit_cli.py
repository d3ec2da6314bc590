"""``runlens audit`` from the command line: exit statuses, every format parses, stdout stays clean."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner
from runtree import write_run

from runlens.cli import main


def run_cli(*args):
    return CliRunner().invoke(main, ["audit", *map(str, args)], catch_exceptions=False)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    base = tmp_path_factory.mktemp("healthy")
    write_run(base / "a", seed=11)
    write_run(base / "b", seed=12)
    return base


def test_exit_1_when_a_finding_reaches_fail_on(tree):
    result = run_cli(tree, "--workers", "1", "-q")
    assert result.exit_code == 1
    assert result.stderr == ""
    assert result.stdout.splitlines()[0].startswith("SEVERITY")


def test_fail_on_never_exits_0(tree):
    assert run_cli(tree, "--workers", "1", "-q", "--fail-on", "never").exit_code == 0


def test_healthy_runs_exit_0_and_log_to_stderr(healthy):
    result = run_cli(healthy, "--workers", "1", "--format", "json")
    assert result.exit_code == 0
    assert [o["name"] for o in json.loads(result.stdout)] == ["a", "b"]
    assert result.stderr.startswith("runlens: 2 runs")


def test_fail_on_levels(tmp_path):
    write_run(tmp_path / "info" / "no-val", evals=False, seed=3)  # no_validation: info
    write_run(tmp_path / "warn" / "spiky", kind="spiky", steps=2000, seed=3)  # loss_spikes: warning
    assert run_cli(tmp_path / "info", "-q").exit_code == 0
    assert run_cli(tmp_path / "info", "-q", "--fail-on", "warning").exit_code == 0
    assert run_cli(tmp_path / "info", "-q", "--fail-on", "info").exit_code == 1
    assert run_cli(tmp_path / "warn", "-q").exit_code == 0
    assert run_cli(tmp_path / "warn", "-q", "--fail-on", "warning").exit_code == 1


@pytest.mark.parametrize("args", [["empty"], ["missing"], ["--workers", "0", "sweep"], []])
def test_usage_errors_exit_2(tree, args):
    args = [str(tree / a) if a in ("empty", "missing", "sweep") else a for a in args]
    result = run_cli(*args, "-q")
    assert result.exit_code == 2
    assert result.stdout == ""


def test_no_runs_found_says_so_in_one_line(tree):
    result = run_cli(tree / "empty", "-q")
    assert result.stderr.count("\n") == 1 and "no runs found" in result.stderr


def test_json_is_the_list_of_spec_objects(tree):
    data = json.loads(run_cli(tree, "--format", "json", "-q", "--workers", "1").stdout)
    assert isinstance(data, list) and len(data) == 6
    assert all(list(o) == ["run", "name", "status", "curve", "findings", "warnings",
                           "headline", "key_numbers", "verdict_step"] for o in data)  # docs/format.md


def test_csv_parses_with_a_row_per_run(tree):
    rows = list(csv.DictReader(io.StringIO(run_cli(tree, "--format", "csv", "-q", "--workers", "1").stdout)))
    assert len(rows) == 6 and rows[0]["worst"] == "unreadable" and rows[0]["error"]
    by_name = {r["name"]: r for r in rows}
    assert by_name["lr-10"]["final_loss"] == "nan" and by_name["lr-0.01"]["steps"] == "600"
    assert "nonfinite_loss" in by_name["lr-10"]["findings"].split(";")


def test_junit_has_a_testcase_per_run_and_detector(tree):
    root = ET.fromstring(run_cli(tree, "--format", "junit", "-q", "--workers", "1").stdout)
    suites = root.findall("testsuite")
    assert len(suites) == 6
    diverged = next(s for s in suites if s.get("name") == "lr-10")
    cases = {c.get("name"): c for c in diverged.findall("testcase")}
    assert cases["nonfinite_loss"].find("failure") is not None
    assert len(cases) >= 5 and int(diverged.get("failures")) >= 1
    broken = next(s for s in suites if s.get("name") == "broken-json")
    assert broken.find("testcase/failure") is not None
    healthy = next(s for s in suites if s.get("name") == "lr-0.01")
    assert healthy.get("failures") == "0"
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)


def test_junit_follows_fail_on(tree):
    out = run_cli(tree / "sweep" / "lr-10", "--format", "junit", "-q", "--fail-on", "never").stdout
    assert ET.fromstring(out).get("failures") == "0"


def test_markdown_is_a_gfm_table(tree):
    out = run_cli(tree, "--format", "md", "-q", "--workers", "1").stdout
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 6
    assert set(table[1].replace("-", "").replace(":", "")) == {"|"}
    cells = [line.replace("\\|", "").count("|") for line in table]
    assert len(set(cells)) == 1  # every row has every column


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.links = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "a":
            self.links.append(dict(attrs)["href"])


def test_html_is_one_self_contained_page(tree, tmp_path):
    out = tmp_path / "audit.html"
    result = run_cli(tree, "--format", "html", "-o", out, "-q", "--workers", "1")
    assert result.stdout == ""
    parser = _Collect()
    parser.feed(out.read_text(encoding="utf-8"))
    assert parser.tags.count("tr") == 7 and "script" not in parser.tags and "link" not in parser.tags
    assert "ünïcode näme" in out.read_text(encoding="utf-8")


def test_reports_are_written_and_linked(tree, tmp_path):
    pytest.importorskip("runlens.render.report.html")
    out = tmp_path / "site" / "index.html"
    out.parent.mkdir()
    # One run: a report draws every chart, which is slow on a shared machine.
    result = run_cli(tree / "crashed run", "--format", "html", "-o", out,
                     "--reports", tmp_path / "site" / "run reports", "-q", "--workers", "1")
    assert result.exit_code == 1
    parser = _Collect()
    parser.feed(out.read_text(encoding="utf-8"))
    assert len(parser.links) == 1 and parser.links[0].startswith("run%20reports/crashed-run-")
    from urllib.parse import unquote

    for link in parser.links:
        assert (out.parent / unquote(link)).read_text(encoding="utf-8").lstrip().startswith("<!")


def test_output_file_and_stdout_hold_the_same_text(tree, tmp_path):
    out = tmp_path / "a.json"
    run_cli(tree, "--format", "json", "-o", out, "-q", "--workers", "1")
    assert out.read_text(encoding="utf-8") == run_cli(tree, "--format", "json", "-q", "--workers", "1").stdout


def test_baseline_adds_regression_findings(tmp_path):
    base = write_run(tmp_path / "base", seed=1)
    write_run(tmp_path / "runs" / "twin", seed=2)
    write_run(tmp_path / "runs" / "worse", kind="regressed", seed=3)
    result = run_cli(tmp_path / "runs", "--baseline", base, "--format", "json", "-q")
    by_name = {o["name"]: [f["code"] for f in o["findings"]] for o in json.loads(result.stdout)}
    assert "baseline_regression_loss" in by_name["worse"]
    assert not [c for c in by_name["twin"] if c.startswith("baseline_")]
    assert result.exit_code == 1


def test_unreadable_baseline_is_a_usage_error(tree):
    result = run_cli(tree / "sweep", "--baseline", tree / "broken-json", "-q")
    assert result.exit_code == 2 and result.stderr.startswith("runlens: ") and "Error" not in result.stderr


def test_progress_bar_draws_on_stderr_and_clears(capsys):
    from runlens.cli.audit import Progress

    bar = Progress(enabled=True, width=10)
    bar.update(0, 4)
    bar.update(4, 4)
    bar.close()
    err = capsys.readouterr().err
    assert "[..........] 0/4 runs" in err and "[##########] 4/4 runs" in err and err.endswith("\r\033[K")
    silent = Progress(enabled=False)
    silent.update(1, 2)
    silent.close()
    assert capsys.readouterr().err == ""
