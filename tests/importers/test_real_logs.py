"""Every file under ../shared/real-logs/ is read by ``runlens analyze FILE`` with no flags, or refused
in one line naming what it holds when it has neither a loss nor a gradient signal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from runlens.cli import main

REAL_LOGS = Path(__file__).resolve().parents[3] / "shared" / "real-logs"

FILES = sorted(p for p in REAL_LOGS.rglob("*") if p.is_file()) if REAL_LOGS.is_dir() else []
# Files that hold no training loss, gradient norm, loss scale or validation loss: prose, a config,
# and AutoTrainer's monitor output (epoch and time only).
NO_SIGNAL = {"README.md", "hparams.yaml", "monitor_detection.log"}

pytestmark = pytest.mark.skipif(not FILES, reason=f"{REAL_LOGS} is not beside the checkout")


@pytest.mark.parametrize("path", FILES or [None], ids=lambda p: str(p.relative_to(REAL_LOGS)) if p else "none")
def test_analyze_reads_it_or_says_what_it_holds(path):
    res = CliRunner().invoke(main, ["analyze", str(path), "--format", "json"])
    if path.name in NO_SIGNAL:
        assert res.exit_code == 2, res.output
        assert res.output.count("\n") == 1 and res.output.startswith("runlens: ")
        assert "found:" in res.output or "no line carries a training step" in res.output
        return
    assert res.exit_code in (0, 1), res.output  # 1: --fail-on's default found an error-level finding
    out = json.loads(res.output)
    assert out["curve"] in ("healthy", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data")
    assert any(w.startswith("import (") for w in out["warnings"])  # the import notes are in the analysis
    assert not [w for w in out["warnings"] if "crashed" in w], out["warnings"]
