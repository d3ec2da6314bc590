"""Reads racing compaction: a run read over and over while a child writes and compacts it.

Before each read the reader takes the last step the writer has on disk; the
read must hold every step up to it exactly once in ``scalars`` (keyed) and
in ``events`` (never deduplicated, so a part read twice shows as a
duplicate, and a part missed as a loss).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._harness import ROOT, child_env


@dataclass(frozen=True)
class RaceFigures:
    reads: int
    compactions_during: int
    reads_short: int
    rows_lost: int
    rows_duplicated: int
    example: str = ""


def _progress(progress: Path) -> tuple[int, int]:
    """(last step on disk, compactions done) as the writer last wrote them."""
    try:
        step, compactions = progress.read_text().split()
        return int(step), int(compactions)
    except (OSError, ValueError):
        return -1, 0


def _check(steps: np.ndarray, upto: int) -> tuple[int, int]:
    """(rows lost, rows duplicated) among steps 0..upto."""
    seen = np.bincount(steps[(steps >= 0) & (steps <= upto)], minlength=upto + 1)[:upto + 1]
    return int((seen == 0).sum()), int(np.clip(seen - 1, 0, None).sum())


def _steps(table) -> np.ndarray:
    # A read that lost every part has no table at all: every row is lost, not a crash of the check.
    return np.empty(0, np.int64) if table is None else np.asarray(table.column("step"), dtype=np.int64)


def race(workdir: Path, reads: int = 100, load=None) -> RaceFigures:
    """Read the run ``reads`` times while the writer child compacts it; ``load`` is the
    reader under test (``runlens.io.loader.load_run`` by default)."""
    if load is None:
        from runlens.io.loader import load_run as load
    run, progress = workdir / "run", workdir / "progress"
    child = subprocess.Popen([sys.executable, "-m", "tests.reliability._compacting_writer", str(run),
                              str(progress)], cwd=ROOT, env=child_env(), stderr=subprocess.PIPE)
    lost = dup = short = done = 0
    first = last = 0
    example = ""
    try:
        deadline = time.monotonic() + 60
        while _progress(progress)[0] < 0 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.01)
        for _ in range(reads):
            if child.poll() is not None:
                example = example or f"writer ended: {child.stderr.read().decode()[-300:]}"
                break
            upto, compactions = _progress(progress)
            first = first or compactions
            got = load(run, columns={"scalars": None, "events": None})
            done += 1
            last = _progress(progress)[1]
            counts = [_check(_steps(getattr(got, t)), upto) for t in ("scalars", "events")]
            if any(c != (0, 0) for c in counts):
                short += 1
                lost += sum(c[0] for c in counts)
                dup += sum(c[1] for c in counts)
                example = example or f"read {done}: up to step {upto}, (lost, duplicated) {counts}; {got.warnings[:1]}"
    finally:
        child.kill()
        child.wait()
    return RaceFigures(done, last - first, short, lost, dup, example)
