"""RunWriter: the framework-free writer of run-log format v1 (docs/format.md).

Rows are buffered in memory on the calling (training) thread and handed, as
one batch, to a bounded queue every ``flush_every`` scalar rows or
``flush_seconds`` seconds; a background thread (:mod:`recorders._writer_io`)
encodes and writes the parts, rewrites run.json and refreshes its
``heartbeat_at`` every ``flush_seconds``, so neither a Parquet encode nor a
slow disk lands on a training step. On close, on ``flush()``, on SIGTERM
(the recorder's handler) and at interpreter exit the queue is drained
before run.json is finalized.

Slow disk: when the queue is full, the training thread blocks for at most
``block_seconds``; if the writer is still behind, the rows stay buffered
for the next flush, a ``user`` event says so and the ``on_behind``
callbacks run (the torch recorder doubles its ``layers_every`` there).
Memory stays bounded: ``queue_batches`` batches in the queue plus at most
``max_pending_rows`` buffered rows per table (the oldest dropped beyond).

Ranks: each rank's writer writes its own parts (``r{rank}-{seq}``). Rank 0
owns run.json; any other rank keeps the same metadata in ``run-r{rank}.json``
beside it (readers ignore unknown files), so ranks never race on one file and
a rank's crash is still on disk. A second live writer of the same directory
and rank is refused at construction (:class:`WriterBusyError`).

Writes never raise into training: a failing write (disk full, permissions,
deleted directory) becomes one warning (``warnings.warn`` and
:attr:`RunWriter.warnings`), the rows stay buffered for the next flush and,
once writing works again, a ``user`` event records what happened.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from recorders import _meta, _parts
from recorders._buffer import Buffers
from recorders._lock import WriterBusyError, WriterLock
from recorders._parts import now as _now
from recorders._parts import plain_number as _num
from recorders._rewind import StepRewinds
from recorders._writer_io import Batch, Close, Sync, WriterIO
from recorders.format import EVENT_KINDS, TABLES

__all__ = ["RunWriter", "UnsupportedRunError", "WriterBusyError"]

UnsupportedRunError = _meta.UnsupportedRunError


class RunWriter:
    """Writes one rank's share of a run directory in format v1.

    Creates ``path`` or resumes the run already there (seq numbers continue,
    ``attempts`` grows, the previous attempt's status and error move into its
    ``attempts`` entry). Refuses a run.json with an unknown ``format_version``
    and a directory another live writer of this rank holds.
    """

    def __init__(self, path: str | Path, *, name: str | None = None,
                 config: Mapping[str, Any] | None = None, seed: int | None = None,
                 rank: int = 0, world_size: int = 1, flush_every: int = 100,
                 flush_seconds: float = 30.0, environment: Mapping[str, Any] | None = None,
                 start_step: int | None = None, heartbeat: bool = True,
                 compact_on_close: bool = True, max_pending_rows: int = 1_000_000,
                 fsync_meta: bool = True, queue_batches: int = 4, block_seconds: float = 0.25) -> None:
        self.path = Path(path)
        self.rank = int(rank)
        self.flush_every = max(1, int(flush_every))
        self.flush_seconds = float(flush_seconds)
        self.compact_on_close = compact_on_close
        self.max_pending_rows = int(max_pending_rows)
        self.fsync_meta = fsync_meta
        self.block_seconds = float(block_seconds)
        self.warnings: list[str] = []
        self.on_behind: list[Callable[[int], None]] = []
        self.behind = 0
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, int(queue_batches)))
        self.meta_lock = threading.RLock()
        self._lock = threading.RLock()  # the pending buffers
        self._closed = False
        self._unsent: deque[str] = deque()
        self._reported: set[str] = set()
        self._pid = os.getpid()
        self._steps = 0
        self._rewinds = StepRewinds()
        self.dropped: dict[str, int] = {}
        self._buf = Buffers(self.max_pending_rows, self._warn_once, self.count_dropped)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass  # disk full or unwritable: the first write fails, warns once and keeps the rows
        self.meta_path = self.path / ("run.json" if self.rank == 0 else f"run-r{self.rank}.json")
        self._marker = WriterLock(self.path, self.rank, self._heartbeat_age, 3 * max(self.flush_seconds, 1.0))
        self._marker.acquire()
        try:
            seq = self._open_tables()
            # The earlier attempts' highest step, from disk; this attempt's is its rewinds' ``top``.
            self._before: int | None = _parts.max_step([self.path / "scalars"])
            env = {**_meta.default_environment(self.rank, int(world_size)), **(environment or {})}
            self.meta = self._open_meta(name=name, config=config, seed=seed, environment=env,
                                        first_step=None if start_step is None else int(start_step))
            self._first_step_known = self.meta["attempts"][-1].get("first_step") is not None
            earlier = self.meta.get("rows_dropped")  # a resumed run keeps counting what it lost
            self.dropped = {str(k): int(v) for k, v in earlier.items() if isinstance(v, int)} \
                if isinstance(earlier, dict) else {}
            self._io = WriterIO(self, seq, heartbeat=heartbeat)
            self._io.write_meta(durable=True)
            self._io.start()
        except BaseException:
            self._marker.release()
            raise
        atexit.register(self._at_exit)

    def _open_meta(self, **kw: Any) -> dict[str, Any]:
        # Without an explicit start, an attempt's first_step is the first row it writes.
        kw.update(flush_every=self.flush_every, flush_seconds=self.flush_seconds)
        if self.meta_path.exists():
            return _meta.resume_meta(_meta.read_meta(self.meta_path), **kw)
        return _meta.new_meta(self.path, **kw)

    def _heartbeat_age(self) -> float | None:
        try:
            beat = _meta.read_meta(self.meta_path).get("heartbeat_at")
            return time.time() - datetime.fromisoformat(str(beat).replace("Z", "+00:00")).timestamp()
        except (UnsupportedRunError, ValueError, TypeError, OSError):
            return None

    def _open_tables(self) -> dict[str, int]:
        seq = {}
        for table in TABLES:
            folder = self.path / table
            _parts.remove_stale_temps(folder, self.rank)
            try:  # a kill inside an earlier compaction: its merged part wins, the replaced go
                _parts.finish_interrupted_compaction(folder, self.rank)
            except OSError as e:
                self.note(f"runlens: cleaning up {table} after an interrupted compaction failed: {e}")
            parts = _parts.list_parts(folder, self.rank)
            seq[table] = parts[-1][0] + 1 if parts else 0
        return seq

    # -- metadata -------------------------------------------------------------
    def set_layers(self, layers: list[dict[str, Any]]) -> None:
        """Set run.json ``layers`` (``{name, index, module, kind, shape, numel}``, depth order)."""
        with self.meta_lock:
            self.meta["layers"] = [dict(layer) for layer in layers]
        with self._lock:
            for layer in layers:
                self._buf.layer_id(str(layer["name"]))
        self._write_meta_now()

    def update_config(self, **kv: Any) -> None:
        with self.meta_lock:
            self.meta["config"].update(kv)
        self._write_meta_now()

    def set_meta(self, **kv: Any) -> None:
        """Set top-level run.json keys; written with the next flush, heartbeat or close (no write now)."""
        with self.meta_lock:
            self.meta.update(kv)

    def count_dropped(self, table: str, rows: int) -> None:
        """Rows lost because they could not be written within the memory bound (run.json ``rows_dropped``)."""
        with self.meta_lock:
            self.dropped[table] = self.dropped.get(table, 0) + int(rows)
            self.meta["rows_dropped"] = dict(self.dropped)

    def update_environment(self, **kv: Any) -> None:
        with self.meta_lock:
            self.meta["environment"].update(kv)
        self._write_meta_now()

    def _write_meta_now(self) -> None:
        # Rare (layers known, config changes): written at once so a reader sees it.
        if os.getpid() == self._pid and not self._closed:
            self._io.write_meta()
        self._emit()

    @property
    def last_step(self) -> int | None:
        """The highest step written to this run, over every attempt (None before the first)."""
        steps = [s for s in (self._rewinds.top, self._before) if s is not None]
        return max(steps) if steps else None

    # -- rows -------------------------------------------------------------------
    def add_scalars(self, step: int, loss: float | None, *, time: float | None = None, **columns: Any) -> None:
        """One training step's row: ``loss`` plus lr, grad_norm, epoch, ... and user scalars."""
        with self._lock:
            self._buf.rows["scalars"].append(self._buf.row("scalars", step, time, {"loss": _num(loss), **columns}))
            self._steps += 1
            self._buf.since_flush += 1
            due = self._buf.since_flush >= self.flush_every or self._due()
        rewinds = self._rewinds
        if rewinds.top is None or step > rewinds.top:
            # The hot path: one compare and one int() per row; the highest step is this one maximum.
            rewinds.top = rewinds.prev = int(step)
        else:  # taken after the buffer lock, like every meta update here (never both at once)
            with self.meta_lock:
                rewinds.back(int(step), self.meta["attempts"][-1])
        if not self._first_step_known:
            self._first_step_known = True
            with self.meta_lock:
                self.meta["attempts"][-1]["first_step"] = int(step)
        if due:
            self._handover()

    def add_eval(self, step: int, val_loss: float | None, *, time: float | None = None, **columns: Any) -> None:
        """One validation pass, run after training step ``step``."""
        with self._lock:
            self._buf.rows["evals"].append(self._buf.row("evals", step, time, {"val_loss": _num(val_loss), **columns}))
        if self._due():
            self._handover()

    def add_layers(self, step: int, names: Sequence[str], grad_norm: np.ndarray | None,
                   weight_norm: np.ndarray | None, *, update_norm: np.ndarray | None = None,
                   grad_abs_max: np.ndarray | None = None, grad_zero_frac: np.ndarray | None = None,
                   nonfinite: np.ndarray | None = None, copy: bool = True) -> None:
        """Per-parameter rows of one step; arrays align with ``names``.

        A masked array's masked entries (or a None column) are written as
        null: e.g. ``grad_norm`` of a parameter that had no gradient.
        ``copy=False`` hands the arrays over as they are: the caller promises
        never to touch them again (the recorder's arrays are new every step).
        """
        cols = {"grad_norm": grad_norm, "weight_norm": weight_norm, "update_norm": update_norm,
                "grad_abs_max": grad_abs_max, "grad_zero_frac": grad_zero_frac, "nonfinite": nonfinite}
        if copy:  # a caller may reuse its buffers for the next step
            cols = {k: None if v is None else np.ma.array(v, copy=True) if np.ma.isMaskedArray(v)
                    else np.array(v, copy=True) for k, v in cols.items()}
        with self._lock:
            self._buf.add_layers(step, names, cols)
        if self._due():
            self._handover()

    def add_event(self, step: int, kind: str, message: str, *, layer: str | None = None,
                  value: float | None = None, time: float | None = None) -> None:
        """An anomaly flag; ``kind`` is one of the format's event kinds."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"The 'kind' parameter of RunWriter.add_event must be one of "
                             f"{sorted(EVENT_KINDS)}. Got {kind!r} instead.")
        row = {"step": int(step), "time": _now(time), "kind": kind, "layer": layer,
               "value": None if value is None else float(value), "message": str(message)}
        with self._lock:
            self._buf.rows["events"].append(row)
        if self._due():
            self._handover()

    # -- handing rows to the writer thread ------------------------------------
    def _due(self) -> bool:
        return time.monotonic() - self._buf.last_flush >= self.flush_seconds

    def take_if_due(self) -> Batch | None:
        """For the writer thread's timer: the rows that have waited ``flush_seconds``."""
        if not self._lock.acquire(timeout=1.0):
            return None
        try:
            return self._buf.take() if self._due() else None
        finally:
            self._lock.release()

    def _handover(self, block: float | None = None) -> bool:
        """Queue the pending rows; True when they were taken (or there were none)."""
        if os.getpid() != self._pid or self._closed:
            return False  # a forked copy (a DataLoader worker) must never write the parent's run
        with self._lock:
            batch = self._buf.take()
        ok = True
        if batch is not None:
            try:
                self.queue.put(batch, timeout=self.block_seconds if block is None else block)
            except queue.Full:
                with self._lock:
                    self._buf.give_back(batch)
                self._fell_behind()
                ok = False
        self._emit()
        return ok

    def _fell_behind(self) -> None:
        self.behind += 1
        if self.behind == 1 or self.behind % 100 == 0:
            self.add_event(self.last_step or 0, "user",
                           f"runlens writer: the disk is slower than training ({self.queue.maxsize} batches "
                           f"queued, {self.behind} time(s)); rows stay buffered")
        for callback in list(self.on_behind):
            try:
                callback(self.behind)
            except Exception as e:  # noqa: BLE001
                self.report_error("slowing the recorder down", e)

    def flush(self, timeout: float | None = 60.0) -> bool:
        """Write pending rows as parts now and rewrite run.json; waits for the writer thread.

        Returns False when the writer did not finish within ``timeout`` seconds.
        """
        if os.getpid() != self._pid or self._closed:
            return False
        self._handover(block=timeout)
        sync = Sync()
        try:
            self.queue.put(sync, timeout=timeout)
        except queue.Full:
            return False
        done = sync.done.wait(timeout)
        self._emit()
        return done

    def summary(self) -> dict[str, Any]:
        """Progress without runlens: steps recorded, parts and bytes written, the last flush."""
        stats = self._io.stats
        last = stats.last_flush
        return {"path": str(self.path), "status": self.meta.get("status"), "steps": self._steps,
                "last_step": self.last_step, "parts": stats.parts, "bytes": stats.bytes,
                "rows": dict(stats.rows), "last_flush": None if last is None else
                datetime.fromtimestamp(last).astimezone().isoformat(timespec="seconds"),
                "unwritten_steps": self._steps - stats.rows["scalars"], "queued": self.queue.qsize(),
                "writer_behind": self.behind, "warnings": len(self.warnings)}

    # -- warnings -------------------------------------------------------------------
    def report_error(self, what: str, error: BaseException) -> None:
        """A failure outside writing (e.g. in a recorder's hook): one warning per kind, never raised."""
        self._warn_once(what, f"runlens: {what} failed ({type(error).__name__}: {error}); training goes on "
                        f"without it")

    def note(self, message: str, key: str | None = None) -> None:
        """A warning from any thread; shown (``warnings.warn``) on the training thread's next call."""
        if key is not None:
            if key in self._reported:
                return
            self._reported.add(key)
        self.warnings.append(message)
        self._unsent.append(message)

    def _emit(self) -> None:
        while self._unsent:
            warnings.warn(self._unsent.popleft(), RuntimeWarning, stacklevel=3)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._reported:
            self._reported.add(key)
            self.warnings.append(message)
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    # -- closing -------------------------------------------------------------
    def close(self, status: str = "finished", error: Mapping[str, Any] | None = None,
              timeout: float | None = 600.0) -> None:
        """Drain the queue, compact the parts, and write the final run.json. Idempotent."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            if self._closed:
                return
            batch = self._buf.take()
            self._closed = True
        atexit.unregister(self._at_exit)
        item = Close(status=status, error=dict(error) if error else None)
        try:
            if batch is not None:
                self.queue.put(batch, timeout=timeout)
            self.queue.put(item, timeout=timeout)
            finished = item.done.wait(timeout)
        except queue.Full:
            finished = False
        if not finished:
            self.note(f"runlens: the writer did not finish within {timeout}s; {self.path} may lack its "
                      "last rows")
        self._marker.release()
        self._emit()

    def _at_exit(self) -> None:
        # The interpreter is exiting without close(): write what is buffered
        # (daemon threads still run during atexit); the status stays as it is.
        if not self._closed and os.getpid() == self._pid:
            self.flush(timeout=30.0)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            self.close()
        else:
            step = None if self.last_step is None else self.last_step + 1
            self.close("crashed", _meta.error_object(exc, step))
