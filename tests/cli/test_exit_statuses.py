"""Exit statuses everywhere: report takes --fail-on, every command says what it found in one line,
`runlens` alone prints its help, flags that do not apply are refused, --dry-run exits as the import."""

from __future__ import annotations

import re
import shutil

import pytest
from _cli import SAMPLES, invoke


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder of three runs: healthy, crashed (an error), plateau (a warning)."""
    root = tmp_path_factory.mktemp("exit") / "runs"
    for name in ("healthy", "crash_oom", "plateau"):
        shutil.copytree(SAMPLES / name, root / name)
    return root


def test_no_arguments_prints_the_normal_help():
    result = invoke()
    assert result.exit_code in (0, 2)
    text = result.output
    assert "Usage: " in text and "Commands:" in text and "analyze" in text
    assert len(text.splitlines()) > 10  # the help as click lays it out, not one long error line
    assert not text.startswith("runlens: Usage")


@pytest.mark.parametrize("fail_on,code", [("error", 1), ("never", 0)])
def test_report_takes_fail_on(runs, tmp_path, fail_on, code):
    result = invoke("report", runs / "crash_oom", "-o", tmp_path, "--fail-on", fail_on)
    assert result.exit_code == code, result.output


def test_report_of_a_clean_run_exits_0(runs, tmp_path):
    assert invoke("report", runs / "healthy", "-o", tmp_path).exit_code == 0
    assert invoke("report", runs / "plateau", "-o", tmp_path).exit_code == 0
    assert invoke("report", runs / "plateau", "-o", tmp_path, "--fail-on", "warning").exit_code == 1


def test_report_prints_verdicts_and_one_summary_not_file_paths(runs, tmp_path):
    result = invoke("report", runs, "-o", tmp_path / "out")
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"3 runs: 1 with errors, 1 with warnings, 1 clean; index: .*index\.html", lines[-1]), lines
    assert len(lines) == 4 and not any(line.endswith((".html", ".md")) for line in lines[:-1]), lines
    verbose = invoke("report", runs / "healthy", "-o", tmp_path / "one", "-v").stdout.splitlines()
    assert [line.rsplit(".", 1)[-1] for line in verbose[:-1]] == ["html", "md"], verbose
    assert re.fullmatch(r"1 run: 1 clean; report: .*\.html", verbose[-1]), verbose
    quiet = invoke("report", runs / "healthy", "-o", tmp_path / "one", "-q").stdout.splitlines()
    assert quiet == verbose[-1:]


def test_analyze_of_several_runs_says_what_it_found(runs):
    result = invoke("analyze", runs, "-q")
    assert result.exit_code == 1
    assert len(result.stdout.splitlines()) == 3
    result = invoke("analyze", runs, "--format", "json")
    assert "runlens: 3 runs: 1 with errors, 1 with warnings, 1 clean" in result.stderr


def test_an_unreadable_path_among_several_loses_no_other_diagnosis(runs, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("nothing here is a training log\n")
    result = invoke("analyze", runs / "healthy", bad, runs / "plateau", "-q")
    assert result.exit_code == 2  # bad input, whatever the readable runs show
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["healthy", "plateau"]
    assert f"could not read {bad}" in result.stderr
    as_json = invoke("analyze", runs / "healthy", bad, "--format", "json")
    assert as_json.exit_code == 2 and len(__import__("json").loads(as_json.stdout)) == 1


def test_one_unreadable_path_alone_is_its_one_line_error(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("nothing here is a training log\n")
    result = invoke("analyze", bad)
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", [["--run", "2"], ["--loss", "train_loss"], ["--step", "it"],
                                  ["--val-loss", "v"]])
def test_log_flags_on_a_run_directory_are_refused(runs, flag):
    result = invoke("analyze", runs / "healthy", *flag)
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line and flag[0] in line and "run directory" in line


def test_dry_run_exits_as_the_import_would(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("step,loss\n" + "".join(f"{i},{1 / (i + 1):.4f}\n" for i in range(50)))
    taken = tmp_path / "taken"
    shutil.copytree(SAMPLES / "healthy", taken)
    dry = invoke("import", "auto", log, taken, "--dry-run")
    real = invoke("import", "auto", log, taken)
    assert dry.exit_code == real.exit_code == 2
    assert "already holds a run" in dry.stderr
    fresh = tmp_path / "fresh"
    assert invoke("import", "auto", log, fresh, "--dry-run").exit_code == 0
    assert not fresh.exists()  # a dry run writes nothing
    assert invoke("import", "auto", log, fresh).exit_code == 0


def test_advice_names_only_what_exists():
    """No advice points at a tool users do not have or an option analyze lacks."""
    from runlens.audit.worker import error_record
    from runlens.detectors import REGISTRY

    advice = error_record("x", "unreadable", "unreadable_run")["object"]["findings"][0]["advice"]
    assert "check-runlog" not in advice and "runlens validate" in advice
    for cls in REGISTRY.values():
        doc = cls.__doc__ or ""
        assert "check-runlog" not in doc, cls.code
    import runlens.io.importers.hf as hf

    text = open(hf.__file__, encoding="utf-8").read()
    assert "pass logging_steps to fix" not in text
