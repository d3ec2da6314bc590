"""The type rules hold where they are meant to: ruff's annotation rules on runlens/ and recorders/,
``Any`` refused in a renderer's signature only, and mypy's config ignoring third-party modules alone."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
_LOOSE = "from typing import Any\n\n\ndef shown(value: Any) -> str:\n    return str(value)\n\n\ndef bare(value):\n    return value\n"


def _codes(tmp_path: Path, rel: str) -> set[str]:
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (it comes with the test extras)")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / rel
    target.parent.mkdir(parents=True)
    target.write_text(_LOOSE)
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                          "--select", "ANN", rel], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    return {word for line in out.stdout.splitlines() for word in line.split() if word.startswith("ANN")}


def test_a_renderer_may_not_take_any(tmp_path):
    assert _codes(tmp_path, "runlens/render/loose.py") == {"ANN001", "ANN201", "ANN401"}


def test_the_engine_must_annotate_but_may_say_any(tmp_path):
    assert _codes(tmp_path, "runlens/io/loose.py") == {"ANN001", "ANN201"}


def test_tests_need_no_annotations(tmp_path):
    assert _codes(tmp_path, "tests/loose.py") == set()


def test_mypy_ignores_only_third_party_modules():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert "ignore_errors" not in config and config["check_untyped_defs"] is True
    for override in config.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not [m for m in modules if m.split(".")[0] in ("runlens", "recorders", "reports")]
        assert "ignore_errors" not in override
