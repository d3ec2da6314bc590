"""One cell or JSON value as a number: every way logs spell a non-finite value counts.

``nan``, ``-nan``, ``NaN``, ``nanxxx`` (PaddleOCR pads), ``inf``, ``-inf``,
``Infinity``, ``1.#QNAN``/``1.#INF`` (MSVC), ``tensor(nan)`` and
``tensor(1.25, device='cuda:0')`` are all values: a NaN loss is a finding,
so it must never be read as "no value".
"""

from __future__ import annotations

import math

_INF_WORDS = {"inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
              "-inf": -math.inf, "-infinity": -math.inf}


def number(value: object) -> float | None:
    """``value`` as a float, or None when it is not a number (text, a list, null, a bool)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # JSON integers have no size limit
            return math.copysign(math.inf, value)
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return parse(value)
    return None


def parse(text: str) -> float | None:
    """A number from a cell of text; None for an empty cell or a word."""
    t = text.strip().strip("\"'")
    if not t or len(t) > 64:
        return None
    if t.startswith("tensor(") and t.endswith(")"):
        t = t[7:-1].split(",", 1)[0].strip()
    try:
        return float(t)
    except ValueError:
        pass
    if t.endswith(":") and t[:-1].isdigit():  # a counter labelling what follows (``123873: -5.48``)
        return float(t[:-1])
    low = t.lower()
    bare = low.lstrip("+-")
    if bare.startswith("nan") and not bare[3:].strip("x"):  # PaddleOCR pads with x: ``nanxxx``
        return math.nan
    if low in _INF_WORDS:
        return _INF_WORDS[low]
    if "#" in low:  # 1.#QNAN, -1.#IND, 1.#INF
        head, _, tail = low.partition("#")
        if head.rstrip(".").lstrip("+-").isdigit():
            if tail.startswith(("qnan", "snan", "nan", "ind")):
                return math.nan
            if tail.startswith("inf"):
                return -math.inf if head.startswith("-") else math.inf
    return None
