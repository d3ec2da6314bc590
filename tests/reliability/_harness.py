"""Plumbing shared by the reliability campaign: child processes, run checks, the tally of figures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("_train_child.py")
TABLES = ("scalars", "evals", "layers", "events")


@dataclass
class Tally:
    """What a campaign counts: cases tried, tracebacks (must be 0), other figures a
    subclass adds; and the first ``EXAMPLES`` problems as text, for the report."""

    EXAMPLES: ClassVar[int] = 20

    cases: int = 0
    tracebacks: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if len(self.examples) < self.EXAMPLES:
            self.examples.append(text)

    def count(self, figure: str, text: str) -> None:
        """One more of the figure named ``figure``, with ``text`` as its example."""
        setattr(self, figure, getattr(self, figure) + 1)
        self.note(text)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


def start_child(run_dir: Path, progress: Path, *extra: str, preexec=None) -> subprocess.Popen:
    cmd = [sys.executable, str(CHILD), str(run_dir), str(progress), *extra]
    return subprocess.Popen(cmd, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=preexec)


class Forked:
    """A training child forked by the zygote: poll and kill it by pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return 0  # gone; the zygote reaped it, so its status is not ours to read
        return None


class Zygote:
    """``with Zygote() as z: child = z.spawn(args)``: trainers without a torch import each."""

    def __enter__(self) -> Zygote:
        self.proc = subprocess.Popen([sys.executable, str(CHILD.with_name("_zygote.py"))], env=child_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        return self

    def spawn(self, run_dir: Path, progress: Path, *extra: str) -> Forked:
        self.proc.stdin.write(json.dumps([str(run_dir), str(progress), *extra]) + "\n")
        self.proc.stdin.flush()
        return Forked(int(self.proc.stdout.readline()))

    def __exit__(self, *exc) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def progress_steps(progress: Path) -> list[int]:
    """Steps the child reported as handed to the recorder (complete lines only)."""
    if not progress.exists():
        return []
    text = progress.read_text()
    lines = text.split("\n")[:-1]  # the last piece may be a half-written line
    return [int(s) for s in lines if s.strip().isdigit()]


def wait_for(predicate, timeout: float, interval: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return False


def sigkill(proc) -> None:
    """SIGKILL a child (a Popen or a Forked one) and wait until it is gone."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if isinstance(proc, subprocess.Popen):
        proc.communicate(timeout=30)
    else:
        wait_for(lambda: proc.poll() is not None, 30)


def format_problems(run_dir: Path) -> list[str]:
    """Violations of format v1 that ``runlens validate`` finds in ``run_dir`` (empty: conforms)."""
    from runlens.io.validate import validate_run

    return [v.line() for v in validate_run(run_dir).violations]


def unreadable_parts(run_dir: Path) -> list[str]:
    """Final-named parts that pyarrow cannot read: the format says there are none, ever."""
    bad = []
    for table in TABLES:
        folder = run_dir / table
        if not folder.is_dir():
            continue
        for part in sorted(folder.iterdir()):
            if part.name.startswith(".") or not part.name.endswith(".parquet"):
                continue
            try:
                pq.read_table(part)
            except Exception as exc:  # noqa: BLE001 - any failure to read counts
                bad.append(f"{table}/{part.name}: {exc}")
    return bad


def run_json_valid(run_dir: Path) -> bool:
    try:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("format") == "runlens-run"


def recorded_steps(run_dir: Path) -> list[int]:
    """Scalar steps as runlens reads them (deduplicated, ordered)."""
    import runlens

    run = runlens.load_run(str(run_dir))
    return [int(s) for s in run.steps("scalars")]
