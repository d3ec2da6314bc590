"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK_RUNLOG = ROOT.parent / "shared" / "tools" / "check-runlog"

# Two cores are shared by everything: keep torch from oversubscribing them.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _check(*runs: os.PathLike | str) -> str:
    """Run ../shared/tools/check-runlog on ``runs``; fail the test if any breaks the format."""
    if not CHECK_RUNLOG.exists():
        pytest.fail(f"{CHECK_RUNLOG} is missing: the format checker must be beside the checkout")
    proc = subprocess.run([sys.executable, str(CHECK_RUNLOG), *map(str, runs)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"check-runlog rejected {runs}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


@pytest.fixture
def check_runlog():
    """``check_runlog(run_dir, ...)``: assert the runs conform to format v1."""
    return _check
