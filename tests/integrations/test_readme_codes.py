"""The README's list of what runlens finds names every finding code a detector can emit."""

from __future__ import annotations

import re
from pathlib import Path

from runlens.detectors import REGISTRY

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_detector_code_is_in_the_readme():
    section = README.read_text(encoding="utf-8").split("## What it finds", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z_]+)`", section))
    assert sorted(set(REGISTRY) - {"curve"} - named) == []
