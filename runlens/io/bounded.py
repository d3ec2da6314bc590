"""Integers the machine can hold: what a reader does with a number too big for int64.

JSON and text logs can spell any integer (``"pid": 1180591620717411303424``,
a CSV step of ``9223372036854775808``); Python holds it, but ``os.kill``,
numpy and Arrow raise ``OverflowError`` on it. The readers call
:func:`bounded_int` where such a value enters, so it becomes "unknown" with
a warning instead of a traceback further down.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def is_int(value: Any) -> bool:
    """Whether ``value`` is a JSON integer (``True``/``False`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def in_int64(value: int) -> bool:
    """Whether ``value`` fits a signed 64-bit integer."""
    return INT64_MIN <= value <= INT64_MAX


def bounded_int(value: Any, what: str, warnings: list[str] | None = None, *,
                minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int | None:
    """``value`` when it is an integer within ``[minimum, maximum]``, else None.

    Out of range (beyond int64 unless narrower bounds are given), a line
    naming ``what`` goes to ``warnings``; a value that is not an integer at
    all is returned as None without a warning (type errors are the caller's
    to report, with the caller's wording).
    """
    if not is_int(value):
        return None
    if minimum <= value <= maximum:
        return value
    if warnings is not None:
        limit = ("beyond what a 64-bit integer holds" if (minimum, maximum) == (INT64_MIN, INT64_MAX)
                 else f"outside {minimum}..{maximum}")
        warnings.append(f"{what} is {_short(value)}, {limit}; treated as unknown")
    return None


def parse_bounded_int(text: str, what: str, warnings: list[str] | None = None) -> int | None:
    """An int64 from the decimal text of an integer (a CSV cell, a log line); None when the
    text is not an integer or does not fit (with a warning, as :func:`bounded_int`)."""
    text = text.strip()
    if not text or len(text) > 4300:  # int() itself refuses longer digit strings
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return bounded_int(value, what, warnings)


def _short(value: int) -> str:
    digits = str(value)
    return digits if len(digits) <= 24 else f"{digits[:10]}...({len(digits)} digits)"


def bounded_steps(values: Iterable[Any], what: str, warnings: list[str]) -> np.ndarray:
    """Steps as int64 (a float truncated, as ``int()`` does), -1 (the importers' "no step")
    for a missing or negative value or one beyond int64; one line in ``warnings`` counts
    those beyond int64."""
    out, beyond = [], 0
    for v in values:
        if isinstance(v, float) and math.isfinite(v):
            v = int(v)
        if not is_int(v) or v < 0:
            out.append(-1)
        elif v > INT64_MAX:
            out.append(-1)
            beyond += 1
        else:
            out.append(v)
    if beyond:
        warnings.append(f"{beyond} row(s) with a {what} beyond what a 64-bit integer holds: skipped")
    return np.array(out, dtype=np.int64)
