"""CLI tests build their runs with the engine tests' builder (pyarrow alone, no torch)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
