"""The recorded runs of ``tests/fixtures/verdicts`` (written by its ``generate.py``) and their measured truth."""

from __future__ import annotations

import json
from pathlib import Path

from runlens.analysis import analyze

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "verdicts"
TRUTH = json.loads((ROOT / "truth.json").read_text())


def analysed(name: str):
    return analyze(ROOT / name)


def codes(diag, at_least: str = "warning") -> set[str]:
    keep = ("error",) if at_least == "error" else ("warning", "error")
    return {f.code for f in diag.findings if f.severity in keep}
