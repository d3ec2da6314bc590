"""RunWriter: the framework-free writer of run-log format v1 (docs/format.md).

Rows are buffered in memory and flushed as part files every ``flush_every``
scalar rows or ``flush_seconds`` seconds, and on close. run.json is rewritten
atomically on every flush; a daemon thread refreshes its ``heartbeat_at``
every ``flush_seconds`` (and flushes rows that have waited that long), so a
long step is not mistaken for a killed run.

Ranks: each rank's writer writes its own parts (``r{rank}-{seq}``). Rank 0
owns run.json; any other rank keeps the same metadata in ``run-r{rank}.json``
beside it (readers ignore unknown files), so ranks never race on one file and
a rank's crash is still on disk.

Writes never raise into training: a failing write (disk full, permissions,
deleted directory) becomes one warning (``warnings.warn`` and
:attr:`RunWriter.warnings`), the rows stay buffered for the next flush (up to
``max_pending_rows`` per table; the oldest are dropped beyond that) and, once
writing works again, a ``user`` event records what happened.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from recorders import _meta, _parts
from recorders._parts import now as _now
from recorders._parts import plain_number as _num
from recorders.format import EVENT_KINDS, FIELDS, TABLES

__all__ = ["RunWriter", "UnsupportedRunError"]

UnsupportedRunError = _meta.UnsupportedRunError


class RunWriter:
    """Writes one rank's share of a run directory in format v1.

    Creates ``path`` or resumes the run already there (seq numbers continue,
    ``attempts`` grows, the previous attempt's status and error move into its
    ``attempts`` entry). Refuses a run.json with an unknown ``format_version``.
    """

    def __init__(self, path: str | Path, *, name: str | None = None,
                 config: Mapping[str, Any] | None = None, seed: int | None = None,
                 rank: int = 0, world_size: int = 1, flush_every: int = 100,
                 flush_seconds: float = 30.0, environment: Mapping[str, Any] | None = None,
                 start_step: int | None = None, heartbeat: bool = True,
                 compact_on_close: bool = True, max_pending_rows: int = 1_000_000,
                 fsync_meta: bool = True) -> None:
        self.path = Path(path)
        self.rank = int(rank)
        self.flush_every = max(1, int(flush_every))
        self.flush_seconds = float(flush_seconds)
        self.compact_on_close = compact_on_close
        self.max_pending_rows = int(max_pending_rows)
        self.fsync_meta = fsync_meta
        self.warnings: list[str] = []
        self._lock = threading.RLock()
        self._closed = False
        self._failing: str | None = None
        self._failed_writes = 0
        self._reported: set[str] = set()
        self._in_flush = False
        self._meta_written = -1e9
        self._pid = os.getpid()
        self._init_buffers()
        self.path.mkdir(parents=True, exist_ok=True)
        self._meta_path = self.path / ("run.json" if self.rank == 0 else f"run-r{self.rank}.json")
        self._seq = self._open_tables()
        self.last_step: int | None = _parts.max_step([self.path / "scalars"])
        env = {**_meta.default_environment(self.rank, int(world_size)), **(environment or {})}
        self.meta = self._open_meta(name=name, config=config, seed=seed, environment=env,
                                    first_step=None if start_step is None else int(start_step))
        self._write_meta(durable=True)
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None
        if heartbeat and self.flush_seconds > 0:
            self._timer = threading.Thread(target=self._beat, name=f"runlens-heartbeat-r{self.rank}",
                                           daemon=True)
            self._timer.start()

    def _open_meta(self, **kw: Any) -> dict[str, Any]:
        # Without an explicit start, an attempt's first_step is the first row it writes.
        kw.update(flush_every=self.flush_every, flush_seconds=self.flush_seconds)
        if self._meta_path.exists():
            return _meta.resume_meta(_meta.read_meta(self._meta_path), **kw)
        return _meta.new_meta(self.path, **kw)

    def _init_buffers(self) -> None:
        self._pending_rows: dict[str, list[dict[str, Any]]] = {t: [] for t in ("scalars", "evals", "events")}
        self._pending_layers: list[tuple[int, np.ndarray, dict[str, Any]]] = []
        self._layer_rows = 0
        self._user_types: dict[str, dict[str, pa.DataType]] = {"scalars": {}, "evals": {}, "events": {}}
        self._layer_dict: list[str] = []
        self._layer_index: dict[str, int] = {}
        self._names_cache: tuple[Sequence[str] | None, np.ndarray] = (None, np.empty(0, np.int32))
        self._since_flush = 0
        self._last_flush = time.monotonic()

    def _open_tables(self) -> dict[str, int]:
        seq = {}
        for table in TABLES:
            folder = self.path / table
            _parts.remove_stale_temps(folder, self.rank)
            parts = _parts.list_parts(folder, self.rank)
            seq[table] = parts[-1][0] + 1 if parts else 0
        return seq

    # -- metadata -------------------------------------------------------------
    def set_layers(self, layers: list[dict[str, Any]]) -> None:
        """Set run.json ``layers`` (``{name, index, module, kind, shape, numel}``, depth order)."""
        with self._lock:
            self.meta["layers"] = [dict(layer) for layer in layers]
            for layer in layers:
                self._layer_id(str(layer["name"]))
            self._write_meta()

    def update_config(self, **kv: Any) -> None:
        with self._lock:
            self.meta["config"].update(kv)
            self._write_meta()

    def update_environment(self, **kv: Any) -> None:
        with self._lock:
            self.meta["environment"].update(kv)
            self._write_meta()

    # -- rows -------------------------------------------------------------------
    def add_scalars(self, step: int, loss: float, *, time: float | None = None, **columns: Any) -> None:
        """One training step's row: ``loss`` plus lr, grad_norm, epoch, ... and user scalars."""
        row = self._row("scalars", step, time, {"loss": _num(loss), **columns})
        with self._lock:
            self._pending_rows["scalars"].append(row)
            if self.last_step is None or step > self.last_step:
                self.last_step = int(step)
            attempt = self.meta["attempts"][-1]
            if attempt.get("first_step") is None:
                attempt["first_step"] = int(step)
            self._since_flush += 1
            if self._since_flush >= self.flush_every or self._due():
                self.flush()

    def add_eval(self, step: int, val_loss: float, *, time: float | None = None, **columns: Any) -> None:
        """One validation pass, run after training step ``step``."""
        row = self._row("evals", step, time, {"val_loss": _num(val_loss), **columns})
        with self._lock:
            self._pending_rows["evals"].append(row)
            if self._due():
                self.flush()

    def add_layers(self, step: int, names: Sequence[str], grad_norm: np.ndarray | None,
                   weight_norm: np.ndarray | None, *, update_norm: np.ndarray | None = None,
                   grad_abs_max: np.ndarray | None = None, grad_zero_frac: np.ndarray | None = None,
                   nonfinite: np.ndarray | None = None) -> None:
        """Per-parameter rows of one step; arrays align with ``names``.

        A masked array's masked entries (or a None column) are written as
        null: e.g. ``grad_norm`` of a parameter that had no gradient.
        """
        cols = {"grad_norm": grad_norm, "weight_norm": weight_norm, "update_norm": update_norm,
                "grad_abs_max": grad_abs_max, "grad_zero_frac": grad_zero_frac, "nonfinite": nonfinite}
        # Copies: a caller may reuse its buffers for the next step.
        cols = {k: None if v is None else np.ma.array(v, copy=True) if np.ma.isMaskedArray(v)
                else np.array(v, copy=True) for k, v in cols.items()}
        with self._lock:
            idx = self._indices(names)
            self._pending_layers.append((int(step), idx, cols))
            self._layer_rows += len(idx)
            if self._layer_rows > self.max_pending_rows:
                self._drop_oldest_layers()
            if self._due():
                self.flush()

    def add_event(self, step: int, kind: str, message: str, *, layer: str | None = None,
                  value: float | None = None, time: float | None = None) -> None:
        """An anomaly flag; ``kind`` is one of the format's event kinds."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"The 'kind' parameter of RunWriter.add_event must be one of "
                             f"{sorted(EVENT_KINDS)}. Got {kind!r} instead.")
        row = {"step": int(step), "time": _now(time), "kind": kind, "layer": layer,
               "value": None if value is None else float(value), "message": str(message)}
        with self._lock:
            self._pending_rows["events"].append(row)
            if self._due():
                self.flush()

    def _row(self, table: str, step: int, t: float | None, columns: dict[str, Any]) -> dict[str, Any]:
        row = {"step": int(step), "time": _now(t)}
        fixed = FIELDS[table]
        for key, value in columns.items():
            value = _num(value)
            if key not in fixed and not self._accept_user(table, key, value):
                continue
            row[key] = value
        return row

    def _accept_user(self, table: str, key: str, value: Any) -> bool:
        typ = _parts.value_type(value) if value is not None else None
        if value is not None and typ is None:
            self._warn_once(f"drop {table}.{key}",
                            f"runlens: {table} column {key!r} dropped: {type(value).__name__} is not a number")
            return False
        known = self._user_types[table].get(key)
        if known is None:
            self._user_types[table][key] = typ or pa.float64()
        elif known == pa.int64() and typ == pa.float64():
            self._user_types[table][key] = pa.float64()  # a float seen later widens the column
        return True

    def _layer_id(self, name: str) -> int:
        i = self._layer_index.get(name)
        if i is None:
            i = self._layer_index[name] = len(self._layer_dict)
            self._layer_dict.append(name)
        return i

    def _indices(self, names: Sequence[str]) -> np.ndarray:
        cached_names, cached = self._names_cache
        if names is cached_names:  # the recorder passes the same tuple every step
            return cached
        idx = np.fromiter((self._layer_id(str(n)) for n in names), dtype=np.int32, count=len(names))
        self._names_cache = (names, idx)
        return idx

    def _drop_oldest_layers(self) -> None:
        dropped = 0
        while self._layer_rows > self.max_pending_rows and len(self._pending_layers) > 1:
            _, idx, _ = self._pending_layers.pop(0)
            self._layer_rows -= len(idx)
            dropped += len(idx)
        self._warn_once("drop layers", f"runlens: dropping the oldest buffered layer rows ({dropped} so far "
                        f"this time) that could not be written")

    # -- flushing ------------------------------------------------------------
    def _due(self) -> bool:
        return time.monotonic() - self._last_flush >= self.flush_seconds

    def flush(self) -> None:
        """Write pending rows as parts now and rewrite run.json (refreshing the heartbeat)."""
        if os.getpid() != self._pid:
            return  # a forked copy (a DataLoader worker) must never write the parent's run
        with self._lock:
            if self._in_flush:
                # Re-entered from a signal handler on this thread: the outer
                # flush owns the part being written; writing it again here
                # would truncate the file under it.
                return
            self._in_flush = True
            try:
                if self._meta_written > 0 and not self._meta_path.exists():
                    # The run directory (or its run.json) was removed under a live run: keep
                    # recording into a new one, but say so: what was flushed before is gone.
                    self._warn_once("vanished", f"runlens: {self._meta_path} was removed while "
                                    "recording; writing it anew, rows flushed before are lost")
                self._since_flush = 0
                self._last_flush = time.monotonic()
                ok = all([self._flush_rows(t) for t in ("scalars", "evals", "events")]
                         + [self._flush_layers(), self._refresh_meta()])
            finally:
                self._in_flush = False
            if ok and self._failing is not None:
                self._recovered()

    def _flush_rows(self, table: str) -> bool:
        rows = self._pending_rows[table]
        if not rows:
            return True
        try:
            data = _parts.rows_table(table, rows, self._user_types[table])
            _parts.write_part(self.path / table, self.rank, self._seq[table], data)
        except Exception as e:  # noqa: BLE001 - the writer must never break training
            self._failed(f"writing {table} part", e)
            if len(rows) > self.max_pending_rows:
                del rows[: len(rows) - self.max_pending_rows]
            return False
        self._seq[table] += 1
        self._pending_rows[table] = []
        return True

    def _flush_layers(self) -> bool:
        if not self._pending_layers:
            return True
        try:
            data = _parts.layers_table(self._pending_layers, self._layer_dict)
            _parts.write_part(self.path / "layers", self.rank, self._seq["layers"], data)
        except Exception as e:  # noqa: BLE001
            self._failed("writing layers part", e)
            return False
        self._seq["layers"] += 1
        self._pending_layers = []
        self._layer_rows = 0
        return True

    def _refresh_meta(self) -> bool:
        # A flush every few steps need not rename run.json each time (a rename
        # costs milliseconds on some filesystems): the heartbeat thread keeps
        # it fresh, and a second-old heartbeat is as good as a new one.
        if time.monotonic() - self._meta_written < 1.0:
            return True
        return self._write_meta()

    def _write_meta(self, durable: bool = False) -> bool:
        # fsync only where the moment matters (open, close): a routine
        # heartbeat costs milliseconds of fsync otherwise, and a process
        # crash cannot lose a renamed file anyway.
        self.meta["heartbeat_at"] = _meta.now_iso()
        try:
            self._meta_path.parent.mkdir(parents=True, exist_ok=True)
            _meta.atomic_write_json(self._meta_path, self.meta, fsync=durable and self.fsync_meta)
            self._meta_written = time.monotonic()
        except Exception as e:  # noqa: BLE001
            self._failed(f"writing {self._meta_path.name}", e)
            return False
        return True

    def report_error(self, what: str, error: BaseException) -> None:
        """A failure outside writing (e.g. in a recorder's hook): one warning per kind, never raised."""
        self._warn_once(what, f"runlens: {what} failed ({type(error).__name__}: {error}); training goes on "
                        f"without it")

    def _failed(self, what: str, error: BaseException) -> None:
        """Turn a failing write into one warning per failure spell; training goes on."""
        self._failed_writes += 1
        if self._failing is None:
            self._failing = f"{what}: {type(error).__name__}: {error}"
            self._warn(f"runlens: {self._failing} (training goes on; rows kept for a retry)")
            # Other tables may still be writable: say so in the run itself too.
            self._pending_rows["events"].append(
                {"step": self.last_step or 0, "time": _now(None), "kind": "user", "layer": None,
                 "value": None, "message": f"runlens writer: {self._failing}"})

    def _recovered(self) -> None:
        message = (f"runlens writer: {self._failed_writes} write(s) failed before this step "
                   f"({self._failing}); buffered rows were written late")
        self._failing, self._failed_writes = None, 0
        self.add_event(self.last_step or 0, "user", message)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._reported:
            self._reported.add(key)
            self._warn(message)

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)

    def _beat(self) -> None:
        while not self._stop.wait(self.flush_seconds):
            with self._lock:
                if self._closed:
                    return
                if self._due() and (self._layer_rows or any(self._pending_rows.values())):
                    self.flush()
                else:
                    self._write_meta()

    # -- closing -------------------------------------------------------------
    def close(self, status: str = "finished", error: Mapping[str, Any] | None = None) -> None:
        """Flush, compact the parts, and write the final run.json. Idempotent."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop.set()
            self.flush()
            if self.compact_on_close and self._failing is None:
                self._compact()
            self.meta.update(status=status, error=dict(error) if error else None,
                             ended_at=_meta.now_iso())
            self._write_meta(durable=True)

    def _compact(self) -> None:
        for table in TABLES:
            try:
                self._seq[table] = _parts.compact(self.path / table, table, self.rank, self._seq[table])
            except Exception as e:  # noqa: BLE001 - the parts are still there, just many
                self._warn(f"runlens: compacting {table} failed ({type(e).__name__}: {e}); parts left as they are")

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.close()
        else:
            step = None if self.last_step is None else self.last_step + 1
            self.close("crashed", _meta.error_object(exc, step))
