"""Running the README's recording script twice writes two runs, never one run with two attempts (issue 24.2).

The script is taken from README.md as written (the python block under "## Record a run") and run as a
user runs it: ``python script.py`` in a fresh folder, twice. Each run is then judged by the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs_snippets import ROOT, blocks

RUNLENS = ROOT / ".venv" / "bin" / "runlens"


def _recording_script() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Record a run"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    (script,) = [b for b in blocks("README.md", ROOT) if b in section and "Recorder(" in b]
    return script


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


def _analyze(run: Path) -> dict:
    exe = [str(RUNLENS)] if RUNLENS.exists() else [sys.executable, "-m", "runlens"]
    proc = subprocess.run([*exe, "analyze", str(run), "--format", "json"], capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert proc.returncode == 0, (run, proc.returncode, proc.stderr[-2000:])
    return json.loads(proc.stdout)


def test_running_the_readme_script_twice_writes_two_runs(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "record.py"
    script.write_text(_recording_script(), encoding="utf-8")
    outputs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                              env=_env(), timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs.append(proc.stderr)
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir() if (p / "run.json").exists())
    assert runs == ["exp1", "exp1-2"], runs
    # The second start says, in one line, where its run went and how to append instead.
    said = [line for line in outputs[1].splitlines() if "already holds a run" in line]
    assert len(said) == 1 and "exp1-2" in said[0] and "resume=True" in said[0], outputs[1]
    assert not any("already holds a run" in line for line in outputs[0].splitlines())
    for name in runs:
        meta = json.loads((tmp_path / "runs" / name / "run.json").read_text())
        assert len(meta["attempts"]) == 1 and meta["status"] == "finished", (name, meta["attempts"])
        verdict = _analyze(tmp_path / "runs" / name)
        assert verdict["status"] == "finished", verdict
        # The toy task learns: both runs train from scratch and end healthy, with no error finding.
        assert verdict["curve"] == "healthy", (name, verdict["curve"], verdict.get("findings"))
        assert not [f for f in verdict["findings"] if f.get("severity") == "error"], verdict["findings"]
