"""The public API, ``runlens analyze`` / ``runlens explain``, and the generated reference page."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from engine_runs import meta, write_healthy, write_run

import runlens
from runlens.cli import main
from runlens.detectors.catalog import PAGE, documented, render_markdown

SPEC_KEYS = ["run", "name", "status", "curve", "findings", "warnings"]
# Added keys (docs/format.md, "Added keys in the analysis output"), after the spec's.
ADDED_KEYS = ["headline", "key_numbers", "verdict_step"]
FINDING_KEYS = ["code", "severity", "title", "step", "layers", "evidence", "advice"]


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_public_api_is_pinned():
    assert runlens.__all__ == [
        "CurveVerdict", "DetectorOutcome", "Diagnosis", "Finding", "ImportFailedError", "LayerMatrix",
        "Run", "RunFormatError", "RunlensError", "UnsupportedVersionError", "UsageError", "analyze",
        "load_run", "report",
    ]
    assert runlens.__all__ == sorted(runlens.__all__) == sorted([*runlens._EXPORTS, "report"])
    for name in runlens.__all__:
        assert getattr(runlens, name) is not None


def test_import_runlens_is_light_and_analysis_never_imports_torch():
    code = ("import sys, runlens; assert 'scipy' not in sys.modules and 'runlens.detectors' not in "
            "sys.modules; import runlens.analysis, runlens.cli.analyze, runlens.render.report.text; "
            "runlens.analyze; assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_analyze_json_is_exactly_the_spec_object_and_byte_identical(tmp_path):
    path = write_healthy(tmp_path / "h", n=300)
    first = invoke("analyze", path, "--format", "json")
    assert first.exit_code == 0, first.output
    obj = json.loads(first.output)
    assert list(obj) == SPEC_KEYS + ADDED_KEYS
    assert obj["run"] == str(path) and obj["name"] == "h" and obj["status"] == "finished"
    assert all(list(f) == FINDING_KEYS for f in obj["findings"])
    assert first.output == json.dumps(obj, indent=2) + "\n"
    assert invoke("analyze", path, "--format", "json").output == first.output


def test_analyze_text_puts_the_verdict_first_and_shows_evidence(tmp_path):
    cols_meta = meta("boom", status="crashed", error={"type": "RuntimeError", "step": 2,
                                                      "message": "mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)"})
    path = write_run(tmp_path / "c", run_meta=cols_meta,
                     scalars={"step": [0, 1], "time": [0.0, 1.0], "loss": [2.0, 1.9]})
    result = invoke("analyze", path)
    assert result.exit_code == 1  # an error finding reaches the default --fail-on (error)
    lines = result.output.splitlines()
    assert lines[2].startswith("status: crashed") and "curve:" in lines[2]  # after the headline
    assert "ERROR crash_shape_mismatch" in result.output and "fix:" in result.output
    verbose = invoke("analyze", path, "-v").output  # the evidence is behind -v
    assert "64x512" in verbose and "try:" in verbose
    assert result.output.index("ERROR") < result.output.index("INFO")


def test_fail_on(tmp_path):
    path = write_healthy(tmp_path / "h", n=300, evals_every=10_000)  # no evals -> an info finding
    assert invoke("analyze", path, "--fail-on", "warning").exit_code == 0
    assert invoke("analyze", path, "--fail-on", "info").exit_code == 1


def _unreadable(tmp_path, setup):
    target = tmp_path / setup
    if setup != "missing":
        target.mkdir()
    # hand-made: an unreadable run.json (broken JSON, a future version) is what this case is about
    if setup == "bad_json":
        (target / "run.json").write_text("{")
    if setup == "future_version":
        (target / "run.json").write_text(json.dumps(meta(format_version=9)))
    return target


@pytest.mark.parametrize("setup", ["empty_dir", "bad_json", "future_version"])
def test_unreadable_input_exits_2_with_one_line(tmp_path, setup):
    result = invoke("analyze", _unreadable(tmp_path, setup))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("runlens: ")


def test_unreadable_input_from_a_real_process_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "runlens", "analyze", str(_unreadable(tmp_path, "missing"))],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("runlens: ") and len(proc.stderr.splitlines()) == 1
    assert "Error" not in proc.stderr  # no exception class names


def test_explain_lists_codes_and_prints_a_detectors_doc():
    listing = invoke("explain")
    assert listing.exit_code == 0
    assert {line.split()[0] for line in listing.output.splitlines()} == set(documented())
    doc = invoke("explain", "nonfinite_loss")
    assert doc.exit_code == 0
    for section in ("What it detects:", "Why it matters:", "How it decides:", "What to try:", "Parameters:"):
        assert section in doc.output
    assert "explosion_ratio" in doc.output


def test_explain_unknown_code_exits_2():
    result = invoke("explain", "no_such_code")
    assert result.exit_code == 2
    assert "unknown code" in result.output


def test_reference_page_is_up_to_date():
    assert PAGE.exists(), "run: python -m runlens.detectors.catalog"
    assert PAGE.read_text(encoding="utf-8") == render_markdown(), \
        "docs/detectors.md is stale: run python -m runlens.detectors.catalog"
    for code in documented():
        assert f"## {code}\n" in render_markdown()


def test_no_runlens_module_imports_torch():
    import re
    from pathlib import Path

    pattern = re.compile(r"^\s*(import torch\b|from torch\b)", re.MULTILINE)
    root = Path(runlens.__file__).parent
    offenders = [str(p.relative_to(root)) for p in sorted(root.rglob("*.py")) if pattern.search(p.read_text())]
    assert offenders == []


def test_text_renderer_keeps_huge_evidence_short():
    from runlens.diagnosis import CurveVerdict, Diagnosis, Finding
    from runlens.render.report.text import render

    f = Finding("x", "warning", "many layers", step=3, layers=[f"l{i}" for i in range(10_000)],
                evidence={"per_layer": {f"l{i}": i for i in range(10_000)}, "ratio": 0.123456})
    text = render(Diagnosis(path="p", name="n", status="finished",
                            curve=CurveVerdict("healthy", "fine"), findings=(f,)), verbose=True)
    assert "(+9994 more)" in text and "ratio: 0.1235" in text
    assert len(text.splitlines()) < 20


def test_json_is_byte_identical_across_processes_and_hash_seeds():
    # Set iteration order changes with PYTHONHASHSEED: evidence built from sets would show it here.
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "sample_runs"
    runs = [str(p.parent) for p in sorted(root.glob("*/run.json"))]
    if not runs:
        pytest.skip("no sample runs")
    code = ("import sys, json; from runlens.analysis import analyze; "
            "print(json.dumps([analyze(r).to_dict() for r in sys.argv[1:]], indent=2))")
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-c", code, *runs], capture_output=True, text=True,
                              env=env, timeout=600, check=True)
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
