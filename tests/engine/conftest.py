"""Engine tests build runs with pyarrow alone (``engine_runs``); no torch needed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
