"""Audit tests build run trees with pyarrow alone (``runtree``); no torch needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtree import build_tree  # noqa: E402


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """Healthy, diverged, crashed and unicode runs; a broken part, a broken run.json,
    an empty folder, a hidden run and a symlink loop (see ``runtree.build_tree``)."""
    return build_tree(tmp_path_factory.mktemp("tree") / "runs")
