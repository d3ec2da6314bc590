"""The detector tests import their run builders by bare name, wherever in ``tests/detectors`` they sit.

pytest's default import mode puts only a test file's own folder on ``sys.path``; the tests of the
packages (``curve/``, ``crash/``) build runs with the builders beside this file, and the tests
that came from ``tests/engine`` with ``engine_runs`` / ``edge_runs``, whose own conftest is not
loaded when ``tests/detectors`` is run alone (or collected first).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent / "engine", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
