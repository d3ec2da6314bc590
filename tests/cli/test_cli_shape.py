"""One CLI shape: exit statuses, one-line errors, runs and folders alike, one --fail-on default,
one naming rule for report files, --set/--config, --color, help texts with examples."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from runlens.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_runs"


def invoke(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("runlens: "), lines
    assert "Traceback" not in result.output and "Error:" not in lines[0], lines
    return lines[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A folder of three runs: healthy, crashed (an error finding), plateau (warnings only)."""
    root = tmp_path_factory.mktemp("cli") / "runs"
    for name in ("healthy", "crash_oom", "no_validation"):
        shutil.copytree(SAMPLES / name, root / name)
    return root


# -- exit statuses and error lines --------------------------------------------

CLASS_NAME = re.compile(r"\b[A-Z][a-z]+(Error|Exception)\b")


@pytest.mark.parametrize("args", [
    ["analyze", "{tmp}/missing"],
    ["report", "{tmp}/missing"],
    ["audit", "{tmp}/missing"],
    ["compare", "{tmp}/missing", "{runs}/healthy"],
    ["report", "{runs}/healthy", "-o", "/proc/nope"],
    ["audit", "{runs}/healthy", "-o", "/missing/dir/x.md"],
    ["compare", "{runs}/healthy", "{runs}/healthy", "-o", "/missing/x.md"],
    ["analyze", "{runs}/healthy", "--set", "no_such_code.x=1"],
    ["analyze", "{runs}/healthy", "--set", "loss_spikes.z_mn=1"],
    ["analyze", "{runs}/healthy", "--set", "nonsense"],
    ["analyze", "{runs}/healthy", "--config", "{tmp}/missing.json"],
    ["explain", "no_such_code"],
    ["analyze", "--no-such-option", "x"],
    ["no-such-command"],
    ["compare", "{runs}/healthy"],
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, runs, args):
    result = invoke(*[a.format(tmp=tmp_path, runs=runs) for a in args])
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert not CLASS_NAME.search(line), line
    assert result.stdout == ""


@pytest.mark.parametrize("value", ["true", "12", '"x"', "[1]", '[{"name": 3}]'])
@pytest.mark.parametrize("command", ["analyze", "report"])
def test_wrong_types_in_run_json_are_exit_2(tmp_path, value, command):
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "healthy", run)
    meta = json.loads((run / "run.json").read_text())
    meta["layers"] = json.loads(value)
    (run / "run.json").write_text(json.dumps(meta))  # hand-made: a run.json with wrong types on purpose
    args = [command, run] + (["-o", tmp_path / "out"] if command == "report" else [])
    result = invoke(*args)
    assert result.exit_code == 2
    assert "layers" in one_error_line(result)


def test_an_internal_error_is_exit_3_never_1(monkeypatch, runs):
    import runlens.analysis

    def boom(*a, **k):
        raise KeyError("no such column")

    monkeypatch.setattr(runlens.analysis, "analyze", boom)
    result = invoke("analyze", runs / "healthy")
    assert result.exit_code == 3
    line = one_error_line(result)
    assert "internal error" in line and "report" in line and "KeyError" not in line


def test_exit_status_is_documented_in_the_help():
    text = invoke("--help").output
    for code in ("0 ok", "1 a finding reached --fail-on", "2 bad input", "3 an internal error"):
        assert code in text


def test_a_real_process_prints_one_line_and_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "runlens", "report", str(SAMPLES / "healthy"),
                           "-o", "/proc/nope"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("runlens: ") and len(proc.stderr.splitlines()) == 1


# -- did you mean --------------------------------------------------------------

def test_a_mistyped_command_or_code_gets_a_suggestion():
    assert "did you mean 'analyze'?" in invoke("analize", "x").stderr
    assert "did you mean 'vanishing_gradients'?" in invoke("explain", "vanishing_gradient").stderr
    assert "did you mean 'baseline_new_nonfinite'?" in invoke("explain", "baseline_new_nonfinit").stderr


# -- runs and folders alike ------------------------------------------------------

def test_analyze_takes_several_runs_and_folders(runs):
    one = invoke("analyze", runs / "healthy", "--format", "json")
    assert one.exit_code == 0 and json.loads(one.stdout)["name"] == "healthy"
    folder = invoke("analyze", runs, "--format", "json", "--fail-on", "never")
    assert folder.exit_code == 0, folder.output
    assert sorted(o["name"] for o in json.loads(folder.stdout)) == ["crash_oom", "healthy", "no_validation"]
    two = invoke("analyze", runs / "healthy", runs / "crash_oom", "--format", "json", "--fail-on", "never")
    assert [o["name"] for o in json.loads(two.stdout)] == ["healthy", "crash_oom"]
    text = invoke("analyze", runs, "--fail-on", "never").stdout
    assert "healthy  (" in text and "crash_oom  (" in text


def test_report_takes_a_folder_like_audit(runs, tmp_path):
    result = invoke("report", runs, "-o", tmp_path / "out", "--format", "html")
    assert result.exit_code == 1, result.output  # crash_oom's error reaches the default --fail-on
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert len(names) == 4 and "index.html" in names


def test_empty_folder_is_no_run_found(tmp_path):
    (tmp_path / "empty").mkdir()
    for command in ("analyze", "report"):
        result = invoke(command, tmp_path / "empty")
        assert result.exit_code == 2 and "no run found" in one_error_line(result)


def test_compare_takes_the_baseline_positionally_or_as_an_option(runs):
    a = invoke("compare", runs / "healthy", runs / "no_validation", "--format", "json")
    b = invoke("compare", runs / "healthy", "--baseline", runs / "no_validation", "--format", "json")
    assert a.exit_code == b.exit_code == 0, a.output
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert json.loads(a.stdout)["baseline_name"] == "no_validation"
    clash = invoke("compare", runs / "healthy", runs / "crash_oom", "--baseline", runs / "no_validation")
    assert clash.exit_code == 2 and "two baselines" in one_error_line(clash)


# -- one --fail-on, one naming rule ----------------------------------------------

def _fail_on_default(command: str) -> str | None:
    import importlib

    module, attr = COMMANDS[command].split(":")
    cmd = getattr(importlib.import_module(module), attr)
    opts = [p for p in cmd.params if p.name == "fail_on"]
    return opts[0].default if opts else None


def test_one_fail_on_default_and_it_gates_analyze(runs):
    defaults = {c: _fail_on_default(c) for c in ("analyze", "audit", "compare")}
    assert set(defaults.values()) == {"error"}, defaults
    assert invoke("analyze", runs / "crash_oom").exit_code == 1
    assert invoke("analyze", runs / "crash_oom", "--fail-on", "never").exit_code == 0
    assert invoke("analyze", runs / "no_validation").exit_code == 0
    assert invoke("analyze", runs / "no_validation", "--fail-on", "info").exit_code == 1


def test_report_and_audit_name_report_files_alike(runs, tmp_path):
    run = str(runs / "crash_oom")
    assert invoke("report", run, "-o", tmp_path / "r", "--format", "html", "--fail-on", "never").exit_code == 0
    assert invoke("audit", run, "-q", "--workers", "1", "--reports", tmp_path / "a",
                  "--fail-on", "never").exit_code == 0
    ours = sorted(p.name for p in (tmp_path / "r").glob("*.html"))
    theirs = sorted(p.name for p in (tmp_path / "a").glob("*.html"))
    assert ours == theirs and re.fullmatch(r"crash_oom-[0-9a-f]{8}\.html", ours[0])


# -- detector parameters -----------------------------------------------------------

def test_set_and_config_reach_the_detector(runs, tmp_path):
    spiky = SAMPLES / "loss_spikes"

    def codes(*extra):
        result = invoke("analyze", spiky, "--format", "json", "--fail-on", "never", *extra)
        assert result.exit_code == 0, result.output
        return [f["code"] for f in json.loads(result.stdout)["findings"]]

    assert "loss_spikes" in codes()
    assert "loss_spikes" not in codes("--set", "loss_spikes.z_min=1000")
    cfg = tmp_path / "params.json"
    cfg.write_text(json.dumps({"loss_spikes": {"z_min": 1000}}))
    assert "loss_spikes" not in codes("--config", cfg)
    toml = tmp_path / "params.toml"
    toml.write_text("[loss_spikes]\nz_min = 1000\n")
    assert "loss_spikes" not in codes("--config", toml)
    run = runs / "no_validation"
    # A value the detector's constraints refuse is a usage error, checked at construction.
    bad = invoke("analyze", run, "--set", "exploding_gradients.min_decades=-1")
    assert bad.exit_code == 2 and "min_decades" in one_error_line(bad)
    cfg.write_text(json.dumps({"exploding_gradients": {"min_decades": -1}}))
    assert invoke("analyze", run, "--config", cfg).exit_code == 2
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert "not valid JSON" in one_error_line(invoke("analyze", run, "--config", broken))


# -- colour ----------------------------------------------------------------------

def test_color_follows_the_option_and_no_color(runs, monkeypatch):
    run = runs / "crash_oom"
    always = invoke("analyze", run, "--color", "always", "--fail-on", "never", color=True)
    assert "\x1b[" in always.stdout
    never = invoke("analyze", run, "--color", "never", "--fail-on", "never", color=True)
    assert "\x1b[" not in never.stdout
    auto = invoke("analyze", run, "--fail-on", "never", color=True)  # CliRunner's stdout is no TTY
    assert "\x1b[" not in auto.stdout
    from runlens.cli.common import use_color

    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color("auto", Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", Tty()) and use_color("always", Tty())


# -- help texts ------------------------------------------------------------------

@pytest.mark.parametrize("command", [None, *sorted(COMMANDS)])
def test_help_is_plain_words_with_an_example(command):
    args = ["--help"] if command is None else [command, "--help"]
    text = invoke(*args).output
    assert "``" not in text, text
    assert "Example" in text, text
