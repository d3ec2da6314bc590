"""run.json: read and check it, and tell a killed run from a live one.

The format says a reader calls a ``running`` run killed when its heartbeat
is older than ``3 * flush_seconds``, or when it was written on this host by
a pid that no longer exists. :func:`derive_status` applies exactly that and
says which rule fired, so the ``killed`` finding can show it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from recorders import format as fmt
from runlens.errors import RunFormatError, UnsupportedVersionError

# A run.json without a usable flush_seconds is judged against this interval.
DEFAULT_FLUSH_SECONDS = 30.0
PID_GONE = "writer process is gone on this host"
STALE_HEARTBEAT = "heartbeat older than 3 x flush_seconds"


def read_meta(root: Path) -> dict[str, Any]:
    """Parse and check ``root/run.json``; one-line errors for anything unusable."""
    where = root / "run.json"
    try:
        meta = json.loads(where.read_text(encoding="utf-8-sig"))  # a BOM some editors add is harmless
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunFormatError(f"{where}: not readable as JSON ({one_line(exc)})") from None
    except RecursionError:
        raise RunFormatError(f"{where}: nested too deeply to be a run.json") from None
    if not isinstance(meta, dict):
        raise RunFormatError(f"{where}: not a JSON object")
    if meta.get("format") != fmt.FORMAT:
        raise RunFormatError(f"{where}: \"format\" is {meta.get('format')!r}, expected {fmt.FORMAT!r}")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RunFormatError(f"{where}: \"format_version\" is missing or not an integer")
    if version != fmt.FORMAT_VERSION:
        raise UnsupportedVersionError(
            f"{where}: format_version {version} is not supported (this runlens reads "
            f"version {fmt.FORMAT_VERSION}); upgrade runlens to read this run")
    status = meta.get("status")
    if not isinstance(status, str) or status not in fmt.RUN_STATUSES:
        raise RunFormatError(f"{where}: \"status\" is {meta.get('status')!r}, expected one of "
                             f"{', '.join(sorted(fmt.RUN_STATUSES))}")
    return meta


def derive_status(meta: Mapping[str, Any], now: float | None = None) -> tuple[str, str]:
    """``(status, why)``: run.json's status, or ``killed`` with the rule that decided it."""
    status = meta.get("status")
    if status != "running":
        return str(status), ""
    if meta.get("host") == socket.gethostname() and not _pid_alive(meta.get("pid")):
        return "killed", PID_GONE
    flush = meta.get("flush_seconds")
    if not isinstance(flush, (int, float)) or isinstance(flush, bool) or not flush > 0:
        flush = DEFAULT_FLUSH_SECONDS
    beat = parse_time(meta.get("heartbeat_at"))
    if beat is None:
        beat = parse_time(meta.get("started_at"))
    now = time.time() if now is None else now
    if beat is not None and now - beat > 3 * float(flush):
        return "killed", STALE_HEARTBEAT
    return "running", ""


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch of an ISO-8601 stamp with an offset (``Z`` too), else None."""
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp.timestamp() if stamp.tzinfo is not None else None


def _pid_alive(pid: Any) -> bool:
    # Without a usable pid we cannot tell, and a live run must not be called killed.
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message, for one-line warnings and errors."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
