"""Helpers of the CLI tests: the sample runs, an in-process invocation, a subprocess one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from runlens.cli import main

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_runs"
SAMPLE_RUNS = sorted(p.name for p in SAMPLES.iterdir() if (p / "run.json").is_file())


def invoke(*args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def command(*args: str) -> list[str]:
    """``runlens ARGS`` as a fresh process: ``python -S`` with the interpreter's own path, so
    that the first code to run is runlens's (no site hooks before it)."""
    return [sys.executable, "-S", "-m", "runlens", *args]


def env(**over: str) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in sys.path if p]])
    out.pop("RUNLENS_DEBUG", None)
    out.update(over)
    return out


def run(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), capture_output=True, text=True, timeout=timeout, env=env(), **kw)
