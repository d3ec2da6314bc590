"""Every module-level import of runlens/ and recorders/ is a declared dependency, the standard
library, or the project itself: an import a type checker wants (``typing_extensions``) goes under
``if TYPE_CHECKING``, and an optional extra (fsspec, dask, tensorboard) is imported where it is
used, so a plain ``pip install runlens`` imports every module that needs no extra."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# pyproject.toml [project] dependencies, by import name.
DECLARED = {"numpy", "pyarrow", "scipy", "click", "jinja2", "markupsafe", "matplotlib", "google_crc32c", "tomli"}
OWN = {"runlens", "recorders"}
# The recorder's framework modules need their framework, which is the extra a user of them installed.
EXTRA_BY_MODULE = {"recorders": {"torch", "lightning", "transformers"}}


def _module_level_imports(tree: ast.Module):
    """Imports run when the module is imported: not inside a function, an ``if TYPE_CHECKING``
    block, or a ``try`` that handles ImportError."""
    def walk(body):
        for node in body:
            if isinstance(node, ast.Import):
                yield from ((a.name, node.lineno) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield node.module, node.lineno
            elif isinstance(node, ast.If):
                test = ast.unparse(node.test)
                if "TYPE_CHECKING" not in test:
                    yield from walk(node.body)
                yield from walk(node.orelse)
            elif isinstance(node, ast.Try):
                caught = " ".join(ast.unparse(h.type) for h in node.handlers if h.type is not None)
                handles_import = "ImportError" in caught or "ModuleNotFoundError" in caught
                if not handles_import:
                    yield from walk(node.body)
            elif isinstance(node, (ast.With,)):
                yield from walk(node.body)
    yield from walk(tree.body)


def test_module_level_imports_are_declared():
    allowed_std = set(sys.stdlib_module_names) | {"__future__"}
    bad = []
    for package in ("runlens", "recorders"):
        allowed = allowed_std | DECLARED | OWN | EXTRA_BY_MODULE.get(package, set())
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for name, line in _module_level_imports(tree):
                if name.split(".")[0] not in allowed:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert bad == [], "module-level imports of undeclared packages:\n" + "\n".join(bad)


def test_the_check_sees_an_undeclared_import():
    tree = ast.parse("import os\nfrom typing_extensions import Buffer\nif TYPE_CHECKING:\n    import fsspec\n"
                     "def f():\n    import dask\n")
    names = [n for n, _ in _module_level_imports(tree)]
    assert names == ["os", "typing_extensions"]
