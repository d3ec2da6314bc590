"""Faults while writing: the recorder must never stop the training it observes.

Each scenario runs a real training child for a fixed number of steps while
the run directory misbehaves (disk full, turned read-only, deleted, slow).
Figures: steps completed (must be all), warnings the recorder emitted, and
how much data is still on disk afterwards.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import _harness as h


@dataclass(frozen=True)
class FaultResult:
    fault: str
    steps: int
    steps_completed: int
    exit_code: int
    warnings: int
    rows_on_disk: int
    step_ms_median: float | None
    detail: str = ""


def _limit_file_size(limit: int):
    def preexec():
        # Without ignoring SIGXFSZ the kernel kills the writer instead of failing the write.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def _finish(fault: str, proc: subprocess.Popen, run: Path, progress: Path, steps: int,
            detail: str = "") -> FaultResult:
    out, err = proc.communicate(timeout=300)
    summary = {}
    for line in out.decode(errors="replace").splitlines()[::-1]:
        if line.startswith("{"):
            summary = json.loads(line)
            break
    rows = 0
    if (run / "run.json").exists():
        try:
            rows = len(h.recorded_steps(run))
        except Exception as exc:  # noqa: BLE001 - reported as a figure
            detail += f" load failed: {exc}"
    if proc.returncode != 0:
        detail += " stderr: " + err.decode(errors="replace")[-400:]
    return FaultResult(fault, steps, len(h.progress_steps(progress)), proc.returncode,
                       summary.get("warnings", -1), rows, summary.get("step_ms_median"), detail.strip())


def disk_full(workdir: Path, steps: int = 400) -> FaultResult:
    run, progress = workdir / "run", workdir / "progress"
    # run.json and the first parts fit; later parts do not.
    proc = h.start_child(run, progress, "--steps", str(steps), "--flush-every", "20", "--report",
                         preexec=_limit_file_size(24_000))
    return _finish("disk full (RLIMIT_FSIZE 24 kB)", proc, run, progress, steps)


def _remount(mnt: Path, mode: str) -> bool:
    return subprocess.run(["mount", "-o", f"remount,{mode}", str(mnt)], capture_output=True).returncode == 0


def read_only(workdir: Path, steps: int = 400) -> FaultResult | None:
    """The run directory's filesystem turns read-only mid-run, then writable again.

    Needs a tmpfs it can remount (root); returns None where that is not possible.
    """
    mnt = workdir / "mnt"
    mnt.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        return None
    try:
        run, progress = mnt / "run", workdir / "progress"
        proc = h.start_child(run, progress, "--steps", str(steps), "--flush-every", "10",
                             "--flush-seconds", "0.2", "--step-sleep", "0.005", "--report")
        h.wait_for(lambda: len(h.progress_steps(progress)) >= steps // 4 or proc.poll() is not None, 120)
        _remount(mnt, "ro")
        h.wait_for(lambda: len(h.progress_steps(progress)) >= steps // 2 or proc.poll() is not None, 120)
        _remount(mnt, "rw")
        return _finish("read-only filesystem for half the run", proc, run, progress, steps)
    finally:
        _remount(mnt, "rw")
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def deleted(workdir: Path, steps: int = 400) -> FaultResult:
    run, progress = workdir / "run", workdir / "progress"
    proc = h.start_child(run, progress, "--steps", str(steps), "--flush-every", "10",
                         "--step-sleep", "0.003", "--report")
    h.wait_for(lambda: len(h.progress_steps(progress)) >= steps // 3 or proc.poll() is not None, 120)
    shutil.rmtree(run, ignore_errors=True)
    return _finish("run directory deleted at 1/3", proc, run, progress, steps)


def slow(workdir: Path, steps: int = 300, delay: float = 0.25) -> FaultResult:
    run, progress = workdir / "run", workdir / "progress"
    proc = h.start_child(run, progress, "--steps", str(steps), "--flush-every", "25",
                         "--slow-io", str(delay), "--report")
    return _finish(f"slow filesystem ({delay * 1000:.0f} ms per rename)", proc, run, progress, steps)


def baseline(workdir: Path, steps: int = 300) -> FaultResult:
    run, progress = workdir / "run", workdir / "progress"
    proc = h.start_child(run, progress, "--steps", str(steps), "--flush-every", "25", "--report")
    return _finish("no fault (reference)", proc, run, progress, steps)


def campaign(workdir: Path, steps: int = 400) -> list[FaultResult]:
    results = []
    for name, fn in [("baseline", baseline), ("disk_full", disk_full), ("read_only", read_only),
                     ("deleted", deleted), ("slow", slow)]:
        sub = workdir / name
        shutil.rmtree(sub, ignore_errors=True)
        sub.mkdir(parents=True)
        result = fn(sub, steps)
        if result is not None:
            results.append(result)
    return results
