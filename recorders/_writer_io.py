"""The writer's background thread: every disk write of a run happens here.

:class:`recorders.writer.RunWriter` only buffers rows on the training
thread and hands a :class:`Batch` to a bounded queue when a flush is due;
this thread encodes the parts, renames them into place, rewrites run.json
(the heartbeat included), and on close drains the queue, compacts and
writes the final run.json. A failing write becomes one warning per failure
spell and the rows are kept for a retry (bounded), exactly as when the
writer wrote on the training thread.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from recorders import _meta, _parts
from recorders.format import TABLES

ROW_TABLES = ("scalars", "evals", "events")


@dataclass
class Batch:
    """Rows handed over by the training thread; nothing in it is touched there again."""

    rows: dict[str, list[dict[str, Any]]]
    layers: list[tuple[int, np.ndarray, dict[str, Any]]]
    user_types: dict[str, dict[str, pa.DataType]]
    dictionary: list[str]


@dataclass
class Sync:
    """Everything queued before it is written once ``done`` is set."""

    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class Close(Sync):
    status: str = "finished"
    error: dict[str, Any] | None = None


@dataclass
class Stats:
    parts: int = 0
    bytes: int = 0
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    last_flush: float | None = None


class WriterIO(threading.Thread):
    """Consumes the writer's queue; owns the seq counters, retries and run.json writes."""

    def __init__(self, writer: Any, seq: dict[str, int], *, heartbeat: bool) -> None:
        # writer: the RunWriter (not imported: it imports this module)
        super().__init__(name=f"runlens-writer-r{writer.rank}", daemon=True)
        self.w = writer
        self.seq = seq
        self.period = writer.flush_seconds if heartbeat and writer.flush_seconds > 0 else None
        self.stats = Stats()
        self.failing: str | None = None
        self._failed_writes = 0
        self._retry: dict[str, list[dict[str, Any]]] = {t: [] for t in ROW_TABLES}
        self._retry_layers: list[tuple[int, np.ndarray, dict[str, Any]]] = []
        self._meta_written = -1e9
        self._last_types: dict[str, dict[str, pa.DataType]] = {t: {} for t in ROW_TABLES}
        self._dictionary: list[str] = []

    # -- the loop ---------------------------------------------------------------
    def run(self) -> None:
        q = self.w.queue
        while True:
            try:
                item = q.get(timeout=self.period)
            except queue.Empty:
                self._guarded(self._idle)
                continue
            if isinstance(item, Batch):
                self._guarded(self.write, item)
            elif isinstance(item, Close):
                self._guarded(self._close, item)
                item.done.set()
                return
            elif isinstance(item, Sync):
                self._guarded(self.write_meta)
                item.done.set()

    def _guarded(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - the thread must outlive any one failure
            self.w.note(f"runlens: writer thread: {type(e).__name__}: {e}")

    def _idle(self) -> None:
        """No batch for ``flush_seconds``: flush rows that waited that long, else just the heartbeat."""
        batch = self.w.take_if_due()
        if batch is not None:
            self.write(batch)
        else:
            self.write_meta()

    # -- writing ------------------------------------------------------------------
    def write(self, batch: Batch | None) -> bool:
        """Write one batch (and any rows kept from failed writes); True when all went to disk."""
        if batch is not None:
            for t in ROW_TABLES:
                self._retry[t].extend(batch.rows[t])
                self._last_types[t] = batch.user_types[t]
            self._retry_layers.extend(batch.layers)
            self._dictionary = batch.dictionary
        if self._meta_written > 0 and not self.w.meta_path.exists():
            # The run directory (or its run.json) was removed under a live run: keep
            # recording into a new one, but say so: what was flushed before is gone.
            self.w.note(f"runlens: {self.w.meta_path} was removed while recording; writing it anew, "
                        "rows flushed before are lost", key="vanished")
        ok = all([self._write_rows(t) for t in ROW_TABLES] + [self._write_layers()])
        ok = self._refresh_meta() and ok
        if ok and self.failing is not None:
            self._recovered()
        return ok

    def _write_part(self, table: str, data: pa.Table) -> None:
        path = _parts.write_part(self.w.path / table, self.w.rank, self.seq[table], data)
        self.seq[table] += 1
        self.stats.parts += 1
        self.stats.rows[table] += data.num_rows
        self.stats.last_flush = time.time()
        try:
            self.stats.bytes += os.stat(path).st_size
        except (OSError, TypeError):
            pass

    def _write_rows(self, table: str) -> bool:
        rows = self._retry[table]
        if not rows:
            return True
        try:
            self._write_part(table, _parts.rows_table(table, rows, self._last_types[table]))
        except Exception as e:  # noqa: BLE001 - the writer must never break training
            self._failed(f"writing {table} part", e)
            if len(rows) > self.w.max_pending_rows:
                self.w.count_dropped(table, len(rows) - self.w.max_pending_rows)
                del rows[: len(rows) - self.w.max_pending_rows]
            return False
        self._retry[table] = []
        return True

    def _write_layers(self) -> bool:
        chunks = self._retry_layers
        if not chunks:
            return True
        try:
            self._write_part("layers", _parts.layers_table(chunks, self._dictionary))
        except Exception as e:  # noqa: BLE001
            self._failed("writing layers part", e)
            while sum(len(c[1]) for c in chunks) > self.w.max_pending_rows and len(chunks) > 1:
                self.w.count_dropped("layers", len(chunks.pop(0)[1]))
            return False
        self._retry_layers = []
        return True

    def _refresh_meta(self) -> bool:
        # A flush every few steps need not rename run.json each time (a rename
        # costs milliseconds on some filesystems): the heartbeat keeps it
        # fresh, and a second-old heartbeat is as good as a new one.
        if time.monotonic() - self._meta_written < 1.0:
            return True
        return self.write_meta()

    def write_meta(self, durable: bool = False) -> bool:
        """Rewrite run.json atomically (any thread; serialised by the writer's meta lock)."""
        w = self.w
        with w.meta_lock:
            w.meta["heartbeat_at"] = _meta.now_iso()
            try:
                w.meta_path.parent.mkdir(parents=True, exist_ok=True)
                _meta.atomic_write_json(w.meta_path, w.meta, fsync=durable and w.fsync_meta)
                self._meta_written = time.monotonic()
            except Exception as e:  # noqa: BLE001
                self._failed(f"writing {w.meta_path.name}", e)
                return False
        return True

    # -- failures ---------------------------------------------------------------
    def _failed(self, what: str, error: BaseException) -> None:
        """Turn a failing write into one warning per failure spell; training goes on."""
        self._failed_writes += 1
        if self.failing is None:
            self.failing = f"{what}: {type(error).__name__}: {error}"
            self.w.note(f"runlens: {self.failing} (training goes on; rows kept for a retry)")
            # Other tables may still be writable: say so in the run itself too.
            self._retry["events"].append(self._event(f"runlens writer: {self.failing}"))

    def _recovered(self) -> None:
        message = (f"runlens writer: {self._failed_writes} write(s) failed before this step "
                   f"({self.failing}); buffered rows were written late")
        self.failing, self._failed_writes = None, 0
        self._retry["events"].append(self._event(message))
        self._write_rows("events")

    def _event(self, message: str) -> dict[str, Any]:
        return {"step": self.w.last_step or 0, "time": time.time(), "kind": "user", "layer": None,
                "value": None, "message": message}

    # -- closing ------------------------------------------------------------------
    def _close(self, item: Close) -> None:
        self.write(None)
        if self.w.compact_on_close and self.failing is None:
            for table in TABLES:
                try:
                    self.seq[table] = _parts.compact(self.w.path / table, table, self.w.rank, self.seq[table],
                                                     on_warn=self.w.note)
                except Exception as e:  # noqa: BLE001 - the parts are still there, just many
                    self.w.note(f"runlens: compacting {table} failed ({type(e).__name__}: {e}); parts left "
                                "as they are")
        with self.w.meta_lock:
            self.w.meta.update(status=item.status, error=dict(item.error) if item.error else None,
                               ended_at=_meta.now_iso())
        self.write_meta(durable=True)
