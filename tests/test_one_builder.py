"""One run builder and one run writer for the tests (issue 22, item 5).

Runs in memory come from :func:`runlens.testing.build_run` (or ``dataclasses.replace`` of a
built run), run folders from ``tests/runs.py``. A test module that constructs a ``Run`` itself
or writes Parquet itself starts a seventh builder whose output drifts from the format as the
format moves; only the modules below, which write off-format or corrupt parts on purpose (or
a file that is not a run at all), may do so, each for the reason given.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
WRITER = TESTS / "runs.py"

FORBIDDEN = {
    "runlens.io.run.Run": "constructs a Run from tables (use runlens.testing.build_run)",
    "runlens.Run": "constructs a Run from tables (use runlens.testing.build_run)",
    "pyarrow.parquet.write_table": "writes a Parquet part itself (use tests/runs.py)",
    "pyarrow.parquet.ParquetWriter": "writes a Parquet part itself (use tests/runs.py)",
}

WRITE, STREAM = "pyarrow.parquet.write_table", "pyarrow.parquet.ParquetWriter"
# module -> (why it writes by hand, the one call it may make)
ALLOWED = {
    "tests/cli/test_validate.py": ("parts retyped, stripped of a required column or breaking the table rules, "
                                   "for the validator to find", WRITE),
    "tests/cli/test_validate_from_format.py": ("sample parts edited in place (a narrowed, repeated or nulled "
                                               "column) for the validator to judge", WRITE),
    "tests/detectors/test_gradients_required_columns.py": ("sample parts stripped to the required columns", WRITE),
    "tests/engine/test_loader.py": ("a part in many row groups whose footer is then falsified", WRITE),
    "tests/integrations/test_importers.py": ("a Parquet log for an importer to read, not a run folder", WRITE),
    "tests/reliability/fuzz.py": ("parts of the wrong schema", WRITE),
    "tests/reliability/round3_cases.py": ("a part of 200 million rows encoded row group by row group", STREAM),
    "tests/reliability/test_reliability.py": ("generated hostile tables (negative and repeated steps) beside "
                                              "generated hostile metadata", WRITE),
}


def _bindings(tree: ast.AST) -> dict[str, str]:
    """Local name -> the dotted name it was imported as, from every import in the module."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(func: ast.expr, names: dict[str, str]) -> str | None:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in names:
        return None
    return ".".join([names[func.id], *reversed(parts)])


def hand_built(source: str) -> list[tuple[int, str]]:
    """(line, dotted name of the call) of every call in ``source`` that builds a Run or writes Parquet
    itself."""
    tree = ast.parse(source)
    names = _bindings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            target = _dotted(node.func, names)
            if target in FORBIDDEN:
                found.append((node.lineno, target))
    return sorted(found)


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if p != WRITER and "__pycache__" not in p.parts)


def test_no_test_module_builds_or_writes_a_run_by_hand():
    offenders = []
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        allowed = ALLOWED.get(rel, ("", None))[1]
        offenders += [f"{rel}:{line}: {FORBIDDEN[target]}"
                      for line, target in hand_built(path.read_text(encoding="utf-8")) if target != allowed]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("rel", sorted(ALLOWED))
def test_every_allowed_module_still_needs_its_exception(rel):
    path = ROOT / rel
    assert path.is_file(), f"{rel} is gone: drop it from ALLOWED"
    calls = {target for _, target in hand_built(path.read_text(encoding="utf-8"))}
    assert ALLOWED[rel][1] in calls, f"{rel} makes no {ALLOWED[rel][1]} call now: drop it from ALLOWED"


@pytest.mark.parametrize("source", [
    "import pyarrow.parquet as pq\npq.write_table(t, run / 'scalars' / 'r0-00000000.parquet')",
    "import pyarrow.parquet\npyarrow.parquet.write_table(t, p)",
    "from pyarrow import parquet\nwith parquet.ParquetWriter(p, s) as w:\n    w.write_table(t)",
    "from pyarrow.parquet import write_table as wt\nwt(t, p)",
    "def f():\n    from runlens.io.run import Run\n    return Run(path='x', meta={}, status='finished')",
    "from runlens import Run as R\nR(path='x', meta={}, status='finished', scalars=t)",
])
def test_the_scan_sees_a_hand_built_run(source):
    assert len(hand_built(source)) == 1


@pytest.mark.parametrize("source", [
    "import dataclasses\nfrom runlens.io.run import Run\nrun2 = dataclasses.replace(run, scalars=t)\nx: Run",
    "from runlens.testing import build_run\nbuild_run(tables={'scalars': t}, meta={})",
    "from benchmarks.heldout.train import Run\nRun('name', setup, 'adamw', 1e-3)",
    "import pyarrow.parquet as pq\nwith pq.ParquetFile(p) as f:\n    f.read()\nwriter.write_table(piece)",
])
def test_the_scan_leaves_the_one_builder_and_other_runs_alone(source):
    assert hand_built(source) == []
