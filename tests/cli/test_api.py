"""The Python API a newcomer meets: a version, a clean namespace, a short repr, one-import reports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import runlens

ROOT = Path(__file__).resolve().parents[2]


def test_version_is_the_packages():
    import tomllib

    assert isinstance(runlens.__version__, str) and runlens.__version__[0].isdigit()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"  # an SPDX expression, not a table
    assert "version" in project["dynamic"]  # read from runlens.__version__: one place


def test_namespace_is_clean():
    public = [n for n in dir(runlens) if not n.startswith("_")]
    assert public == sorted(runlens.__all__)
    for leaked in ("Any", "TYPE_CHECKING", "annotations", "importlib"):
        assert not hasattr(runlens, leaked) or leaked.startswith("_"), leaked
    code = "import runlens; print(sorted(k for k in vars(runlens) if not k.startswith('_')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['report']"  # everything else arrives on first use


def test_diagnosis_repr_is_short_and_summary_is_one_line():
    d = runlens.analyze(ROOT / "sample_runs" / "crash_oom")
    assert len(repr(d)) < 300 and repr(d).startswith("<Diagnosis crash_oom: crashed, curve ")
    summary = d.summary()
    assert "\n" not in summary and "crash_oom" in summary and "1 error" in summary
    healthy = runlens.analyze(ROOT / "sample_runs" / "healthy").summary()
    assert healthy == "healthy: finished, curve healthy, no findings"


def test_report_in_one_import(tmp_path):
    written = runlens.report(runlens.analyze(ROOT / "sample_runs" / "plateau"), tmp_path / "a")
    assert sorted(p.suffix for p in written) == [".html", ".md"]
    assert all(p.name.startswith("plateau-") for p in written)
    from_path = runlens.report(ROOT / "sample_runs" / "plateau", tmp_path / "b", formats=("html",))
    assert [p.suffix for p in from_path] == [".html"]
    assert "chart-lr" in from_path[0].read_text()  # read with every column, as the CLI does
