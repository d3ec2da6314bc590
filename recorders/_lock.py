"""One writer per run directory and rank: a marker file created with ``O_EXCL``.

Two processes writing the same rank of one run would each compact away (or
overwrite) the other's parts. The first writer creates
``<run>/.writer-r{rank}.lock`` (a dot-name, so readers ignore it) holding
its pid, host and start time; a second writer finds it and is refused with
a one-line :class:`WriterBusyError` at construction, before training
starts. The marker is removed on close.

A marker left by a writer that died (SIGKILL, OOM) must not block the
resume: it is stale when its pid is gone (same host; a zombie counts as
gone), when it names this very process but no live writer here holds it,
or, for another host, when the run's heartbeat is older than
``3 * flush_seconds`` (the reader's own rule for a killed run).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["WriterBusyError", "WriterLock"]

# (realpath, rank) of writers alive in this process: a pid check cannot tell
# two writers of one process apart.
_HELD: set[tuple[str, int]] = set()
_HELD_LOCK = threading.Lock()


class WriterBusyError(RuntimeError):
    """Another live writer holds this run directory and rank."""


def lock_name(rank: int) -> str:
    return f".writer-r{rank}.lock"


def _pid_alive(pid: int) -> bool:
    if pid <= 0 or pid >= 1 << 31:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    try:  # a killed child its parent has not reaped yet is a zombie: dead for our purpose
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


class WriterLock:
    """The marker of one writer; :meth:`acquire` raises WriterBusyError when another holds it."""

    def __init__(self, run_dir: Path, rank: int, heartbeat_age: Callable[[], float | None],
                 stale_after: float) -> None:
        self.path = run_dir / lock_name(rank)
        self.rank = rank
        self._key = (os.path.realpath(run_dir), rank)
        self._heartbeat_age = heartbeat_age
        self._stale_after = stale_after
        self.held = False

    def acquire(self) -> None:
        with _HELD_LOCK:
            if self._key in _HELD:
                raise WriterBusyError(self._busy_message({"pid": os.getpid(), "host": socket.gethostname()}))
            for _ in range(3):
                try:
                    created = self._create()
                except OSError:
                    # Disk full or folder unwritable: the run's own writes will fail and say so
                    # once; refusing here would stop training over a marker file.
                    return
                if created:
                    _HELD.add(self._key)
                    self.held = True
                    return
                holder = self._read()
                if not self._stale(holder):
                    raise WriterBusyError(self._busy_message(holder))
                try:
                    os.remove(self.path)
                except FileNotFoundError:
                    pass
            raise WriterBusyError(self._busy_message(self._read()))

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"pid": os.getpid(), "host": socket.gethostname(), "rank": self.rank,
                           "started": time.time()}, f)
        except OSError:
            try:  # an empty marker left behind would read as stale anyway; remove it if we can
                os.remove(self.path)
            except OSError:
                pass
            raise
        return True

    def _read(self) -> dict:
        try:
            with open(self.path, encoding="utf-8") as f:
                holder = json.load(f)
            return holder if isinstance(holder, dict) else {}
        except (OSError, ValueError):
            return {}  # half-written or garbage: judged by the heartbeat below

    def _stale(self, holder: dict) -> bool:
        pid, host = holder.get("pid"), holder.get("host")
        if host == socket.gethostname() and isinstance(pid, int):
            return pid == os.getpid() or not _pid_alive(pid)  # our own pid: not in _HELD, so left over
        age = self._heartbeat_age()
        return age is None or age > self._stale_after

    def _busy_message(self, holder: dict) -> str:
        who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
        return (f"runlens: {self.path.parent} (rank {self.rank}) is already being written by {who}; "
                f"a second writer would lose rows. Use another run directory or rank, or delete "
                f"{self.path.name} if that process is gone")

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        with _HELD_LOCK:
            _HELD.discard(self._key)
        try:
            os.remove(self.path)
        except OSError:
            pass
