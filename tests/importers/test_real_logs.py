"""Every file under ../shared/real-logs/ is read by ``runlens analyze FILE`` with no flags or refused in
one line; every item that holds a training signal (the labeled logs, the collected items) is read, and
its analysis says which column took which role."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from runlens.cli import main

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REAL_LOGS = Path(__file__).resolve().parents[3] / "shared" / "real-logs"
LABELS = Path(__file__).resolve().parents[2] / "benchmarks" / "real_logs_labels.toml"

FILES = sorted(p for p in REAL_LOGS.rglob("*") if p.is_file()) if REAL_LOGS.is_dir() else []
LABELED = tomllib.loads(LABELS.read_text(encoding="utf-8"))["log"] if REAL_LOGS.is_dir() else []
COLLECTED = (sorted(p for p in (REAL_LOGS / "collected").iterdir() if p.name != "README.md")
             if (REAL_LOGS / "collected").is_dir() else [])
SIGNAL = [REAL_LOGS / item["path"] for item in LABELED if item["curve"] != "no_curve"] + COLLECTED
NO_SIGNAL = [REAL_LOGS / item["path"] for item in LABELED if item["curve"] == "no_curve"]

pytestmark = pytest.mark.skipif(not FILES, reason=f"{REAL_LOGS} is not beside the checkout")


def ident(p):
    return str(p.relative_to(REAL_LOGS)) if p else "none"


def run(path: Path):
    return CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "--fail-on", "never"])


@pytest.mark.parametrize("path", FILES or [None], ids=ident)
def test_every_file_is_read_or_refused_in_one_line(path):
    res = run(path)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    if res.exit_code == 2:
        assert res.output.startswith("runlens: ") and res.output.count("\n") == 1, res.output
        return
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert all("curve" in o for o in (out if isinstance(out, list) else [out]))


@pytest.mark.parametrize("path", SIGNAL or [None], ids=ident)
def test_every_item_with_a_training_signal_is_read_with_its_roles(path):
    res = run(path)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for o in out if isinstance(out, list) else [out]:
        assert o["curve"] in ("healthy", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data")
        assert "roles" in o and "index" in o["roles"], o["warnings"][:5]


@pytest.mark.parametrize("path", NO_SIGNAL or [None], ids=ident)
def test_files_without_a_training_curve_are_refused_or_too_short_to_judge(path):
    res = run(path)
    if res.exit_code == 2:
        assert res.output.count("\n") == 1, res.output
    else:  # a few numbers a person would not call a curve (three rows of a notes table)
        assert json.loads(res.stdout)["curve"] == "insufficient_data", res.output
