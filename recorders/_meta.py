"""run.json helpers: JSON-safe values, atomic rewrites, new and resumed metadata.

Kept apart from :mod:`recorders.writer` so the writer reads as the life of a
run (open, add rows, flush, close) and this module as the file's details.
"""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import traceback
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from recorders.format import FORMAT, FORMAT_VERSION


class UnsupportedRunError(ValueError):
    """The directory holds a run.json this writer must not append to."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def json_safe(value: Any) -> Any:
    """``value`` with everything JSON cannot hold made representable.

    Non-finite floats become null (the format says so); numpy and torch
    scalars become Python numbers; unknown objects become their ``str`` so a
    config holding, say, an optimizer class never makes the write fail.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "ndim"):  # numpy/torch scalars and arrays
        return json_safe(value.tolist())
    return str(value)


def atomic_write_json(path: Path, obj: Mapping[str, Any], *, fsync: bool = True) -> None:
    """Write ``obj`` to ``path`` so a reader sees the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    data = json.dumps(json_safe(obj), indent=1, allow_nan=False).encode("utf-8")
    with open(tmp, "wb") as f:
        f.write(data)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def default_environment(rank: int, world_size: int) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "rank": rank,
        "world_size": world_size,
    }


def new_meta(run_dir: Path, *, name: str | None, config: Mapping[str, Any] | None,
             seed: int | None, environment: Mapping[str, Any], flush_every: int,
             flush_seconds: float, first_step: int | None) -> dict[str, Any]:
    started = now_iso()
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "run_id": uuid.uuid4().hex,
        # A directory name that is not valid UTF-8 would make run.json hold a lone surrogate.
        "name": name or os.fsencode(run_dir.resolve().name).decode("utf-8", "replace"),
        "status": "running",
        "started_at": started,
        "ended_at": None,
        "heartbeat_at": started,
        "flush_every": flush_every,
        "flush_seconds": flush_seconds,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "config": dict(config or {}),
        "seed": seed,
        "environment": dict(environment),
        "layers": [],
        "attempts": [{"started_at": started, "first_step": first_step}],
        "error": None,
    }


def read_meta(path: Path) -> dict[str, Any]:
    """Load an existing run.json, refusing anything this writer cannot extend."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # RecursionError: absurdly nested JSON
        raise UnsupportedRunError(f"{path}: cannot resume: run.json is unreadable ({e})") from e
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UnsupportedRunError(f"{path}: cannot resume: not a runlens run.json")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise UnsupportedRunError(
            f"{path}: cannot resume: run.json has format_version {version!r}; "
            f"this writer only writes version {FORMAT_VERSION}")
    return meta


def resume_meta(meta: dict[str, Any], *, name: str | None, config: Mapping[str, Any] | None,
                seed: int | None, environment: Mapping[str, Any], flush_every: int,
                flush_seconds: float, first_step: int | None) -> dict[str, Any]:
    """``meta`` turned into a new running attempt; the old outcome moves into ``attempts``."""
    started = now_iso()
    attempts = [a for a in meta.get("attempts") or [] if isinstance(a, dict)]
    if attempts:
        attempts[-1] = {**attempts[-1], "status": meta.get("status"), "error": meta.get("error")}
    attempts.append({"started_at": started, "first_step": first_step})
    config_all = dict(meta.get("config") or {})
    config_all.update(config or {})
    env = dict(meta.get("environment") or {})
    env.update(environment)
    meta.update({
        "status": "running", "error": None, "ended_at": None, "heartbeat_at": started,
        "host": socket.gethostname(), "pid": os.getpid(), "attempts": attempts,
        "config": config_all, "environment": env,
        "flush_every": flush_every, "flush_seconds": flush_seconds,
    })
    if name:
        meta["name"] = name
    if seed is not None or "seed" not in meta:
        meta["seed"] = seed
    meta.setdefault("layers", [])
    meta.setdefault("run_id", uuid.uuid4().hex)
    meta.setdefault("started_at", started)
    return meta


def exception_type(exc: BaseException) -> str:
    """Class name, module-qualified unless builtin (``RuntimeError``, ``torch.OutOfMemoryError``)."""
    cls = type(exc)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def error_object(exc: BaseException, step: int | None) -> dict[str, Any]:
    """run.json ``error`` for ``exc`` raised while executing ``step``."""
    return {"type": exception_type(exc), "message": str(exc),
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            "step": step}
