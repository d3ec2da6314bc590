"""Logs that hold several runs, each a step counter starting again at 1 (how readers tell runs apart)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

STEPS = range(1, 121)
Curve = Callable[[int], float]


def healthy(step: int) -> float:
    return 2.5 * math.exp(-step / 30) + 0.1 + 0.01 * math.sin(step)


def diverging(step: int) -> float:
    return healthy(step) if step < 70 else float("nan")


def write_csv(path: Path, *runs: Curve) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("step,loss\n" + "\n".join(f"{s},{f(s)}" for f in runs for s in STEPS) + "\n")
    return path


def write_text(path: Path, *runs: Curve) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"step {s} | loss {f(s):.5f}\n" for f in runs for s in STEPS))
    return path
