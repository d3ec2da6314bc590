"""The tests mirror the detector modules, so a contributor finds a detector's tests by its code.

Every registered detector has its test file under ``tests/detectors/``, laid out as
``runlens/detectors/`` is: ``test_<code>.py`` for a top-level module, ``<package>/test_<module>.py``
for a module of a package (``crash/test_crash_oom.py``) and ``<package>/test_<code>.py`` for the
step a package registers itself (``curve/test_curve.py``). A code that is also a curve label is
tested with its label in ``curve/test_<label>.py``, and every curve label has that file. Test
module names stay unique: pytest's default import mode imports a test file by its basename.
"""

from __future__ import annotations

import ast
import importlib
import shutil
from pathlib import Path

import pytest
import tomllib

from runlens.detectors import REGISTRY
from runlens.diagnosis import CURVES

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
DETECTORS = ROOT / "runlens" / "detectors"
# The curve's modules are staged by label (validation.py: overfitting, short.py: insufficient_data)
# around shared features and parameters: its tests follow the labels, not the modules.
BY_LABEL = {"curve"}


def expected_test_file(code: str, module: str, tests: Path = TESTS) -> Path:
    """Where the tests of the detector registered as ``code`` by ``module`` live."""
    here = tests / "detectors"
    parts = module.split(".")[2:]  # below runlens.detectors
    if code in CURVES:
        return here / "curve" / f"test_{code}.py"
    if len(parts) > 1:
        return here.joinpath(*parts[:-1]) / f"test_{parts[-1]}.py"
    if hasattr(importlib.import_module(module), "__path__"):
        return here / parts[0] / f"test_{code}.py"
    return here / f"test_{parts[0]}.py"


def _holds_a_test(path: Path) -> bool:
    """A ``def test_...``/``class Test...``, or tests bound to ``test_`` names (a shared factory's)."""
    tree = ast.parse(path.read_text(), str(path))
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names += [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return any(name.lower().startswith("test") for name in names)


def missing_test_files(tests: Path = TESTS) -> list[str]:
    """Each detector code, curve label and detector package without its test file, or whose file
    holds no test, as ``what: expected path``."""
    wanted = {f"detector {code}": expected_test_file(code, det.__module__, tests)
              for code, det in sorted(REGISTRY.items())}
    wanted |= {f"curve label {label}": tests / "detectors" / "curve" / f"test_{label}.py" for label in CURVES}
    for package in sorted(p.parent for p in DETECTORS.glob("*/__init__.py")):
        if package.name in BY_LABEL:
            continue
        for module in sorted(package.glob("[!_]*.py")):
            wanted.setdefault(f"module {package.name}.{module.stem}",
                              tests / "detectors" / package.name / f"test_{module.stem}.py")
    return [f"{what}: {path.relative_to(tests.parent)}" for what, path in wanted.items()
            if not path.is_file() or not _holds_a_test(path)]


def test_every_detector_label_and_crash_module_has_its_test_file():
    assert missing_test_files() == []


def test_a_missing_test_file_is_reported(tmp_path):
    copy = tmp_path / "tests"
    shutil.copytree(TESTS / "detectors", copy / "detectors", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "detectors" / "crash" / "test_crash_oom.py").unlink()
    (copy / "detectors" / "test_plateau.py").write_text('"""No tests left."""\n')
    (copy / "detectors" / "curve" / "test_insufficient_data.py").unlink()
    already = missing_test_files()
    assert [m for m in missing_test_files(copy) if m not in already] == [
        "detector crash_oom: tests/detectors/crash/test_crash_oom.py",
        "detector plateau: tests/detectors/test_plateau.py",
        "curve label insufficient_data: tests/detectors/curve/test_insufficient_data.py",
        "module crash.crash_oom: tests/detectors/crash/test_crash_oom.py",
    ]


def test_the_expected_files_follow_the_module_layout():
    here = TESTS / "detectors"
    assert expected_test_file("plateau", "runlens.detectors.plateau") == here / "test_plateau.py"
    assert (expected_test_file("crash_oom", "runlens.detectors.crash.crash_oom")
            == here / "crash" / "test_crash_oom.py")
    assert expected_test_file("curve", "runlens.detectors.curve") == here / "curve" / "test_curve.py"
    assert expected_test_file("diverged", "runlens.detectors.diverged") == here / "curve" / "test_diverged.py"


def test_test_module_basenames_are_unique_under_the_default_import_mode():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    if "importlib" in str(options.get("addopts", "")):
        pytest.skip("importlib import mode names each test module by its path: duplicates are fine there")
    seen: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        if not (path.parent / "__init__.py").exists():  # inside a package the name is qualified
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
