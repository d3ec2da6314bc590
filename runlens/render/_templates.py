"""Where the report templates are."""

from __future__ import annotations

from pathlib import Path


def templates_dir() -> Path:
    """``reports/templates``, found beside this package.

    ``reports`` and ``runlens`` are sibling top-level packages both in a
    checkout and in an installed wheel. Looking there first (rather than
    ``import reports``) keeps working when another ``reports`` directory
    shadows the package on ``sys.path``, e.g. the test suite's
    ``tests/reports`` when ``tests/`` is on the path.
    """
    sibling = Path(__file__).resolve().parents[2] / "reports" / "templates"
    if sibling.is_dir():
        return sibling
    from reports import TEMPLATES

    return Path(TEMPLATES)
