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
from runlens.io.bounded import INT64_MAX, MAX_JSON_BYTES, bounded_int, is_int, loads_json, read_regular

# A run.json without a usable flush_seconds is judged against this interval.
DEFAULT_FLUSH_SECONDS = 30.0
PID_GONE = "writer process is gone on this host"
STALE_HEARTBEAT = "heartbeat older than 3 x flush_seconds"


def read_meta(root: Path, warnings: list[str] | None = None) -> dict[str, Any]:
    """Parse and check ``root/run.json``; one-line errors for anything unusable.

    Every key of the format's run.json table is checked by type (a wrong
    type is a :class:`RunFormatError`; a missing key or null is "unknown").
    An integer too big for int64 (a ``pid``, a layer ``index``, a ``seed``)
    is set to None, with a line in ``warnings``: it would overflow
    ``os.kill`` or numpy further on.
    """
    where = root / "run.json"
    try:
        # A FIFO or /dev/zero named run.json is refused, not waited on; a BOM some editors add is harmless.
        meta = loads_json(read_regular(where, MAX_JSON_BYTES, RunFormatError).decode("utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RunFormatError(f"{where}: not readable as JSON ({one_line(exc)})") from None
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
    check_fields(meta, where, [] if warnings is None else warnings)
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
    except (OSError, OverflowError):  # beyond pid_t: no process has it, but we cannot ask
        return True
    return True


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message, for one-line warnings and errors."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# -- field types --------------------------------------------------------------

# The format's run.json table (kinds str, int, number, object, list), kept in the format module so
# the writer, this reader and ``runlens validate`` share one definition.
FIELDS: dict[str, tuple[str, Any]] = fmt.RUN_FIELDS
_KIND_WORDS = {"str": "a string", "int": "an integer", "number": "a number", "object": "an object",
               "list": "a list"}
_PLURALS = {"int": "integers", "object": "objects"}


def check_fields(meta: dict[str, Any], where: Path | str, warnings: list[str]) -> None:
    """Check ``meta`` against :data:`FIELDS` in place (see :func:`read_meta`)."""
    _check_object(meta, FIELDS, "", where, warnings)


def _check_object(obj: dict[str, Any], spec: dict[str, tuple[str, Any]], prefix: str,
                  where: Path | str, warnings: list[str]) -> None:
    for key, (kind, nested) in spec.items():
        if key in obj:
            obj[key] = _check_value(obj[key], kind, nested, f"{prefix}{key}", where, warnings)


def _check_value(value: Any, kind: str, nested: Any, label: str, where: Path | str,
                 warnings: list[str]) -> Any:
    """``value`` checked (a RunFormatError when of the wrong kind), or None when out of range."""
    if value is None:
        return None
    if not _is_kind(value, kind):
        expected = f"a list of {_PLURALS[nested[0]]}" if kind == "list" else _KIND_WORDS[kind]
        raise RunFormatError(f"{where}: \"{label}\" is {_show(value)}, expected {expected}")
    if kind == "int":
        return bounded_int(value, f"run.json \"{label}\"", warnings)
    if kind == "number" and is_int(value) and abs(value) > INT64_MAX:
        warnings.append(f"run.json \"{label}\" is {_show(value)}, beyond what a 64-bit integer holds; "
                        "treated as unknown")
        return None
    if kind == "object" and nested:
        _check_object(value, nested, f"{label}.", where, warnings)
    if kind == "list":
        sub_kind, sub_spec = nested
        items = [_check_value(v, sub_kind, sub_spec, f"{label}[{i}]", where, warnings)
                 for i, v in enumerate(value)]
        # A shape with an unknown dimension is an unknown shape.
        if sub_kind == "int" and any(v is None for v in items):
            return None
        return items
    return value


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return is_int(value)
    if kind == "number":
        return is_int(value) or isinstance(value, float)
    if kind == "object":
        return isinstance(value, dict)
    return isinstance(value, list)


def _show(value: Any) -> str:
    """A JSON value as a short phrase for an error line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        text = json.dumps(value[:40])
        return f"the string {text}{'...' if len(value) > 40 else ''}"
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"
