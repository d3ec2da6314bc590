"""Numbers and mappings as console lines print them: ``nan``, ``-inf``, PaddleOCR's ``nanxxx``, MSVC's
``1.#QNAN``, a JSON object or a Python dict repr with a bare ``nan``.

A leaf of the console-line reader (:mod:`runlens.io.importers._textline`), which builds its field
pattern from these.
"""

from __future__ import annotations

import math
import re

from runlens.io.bounded import loads_json
from runlens.io.reader import pyliteral

# PaddleOCR pads: nanxxx; MSVC's C runtime prints 1.#QNAN, 1.#SNAN, -1.#IND and 1.#INF.
MSVC = r"[-+]?\d\.#(?:QNAN|SNAN|IND|INF)0*"
WORDNUM = rf"[-+]?(?:nan(?:x+)?|NaN|NAN|inf(?:inity)?|Inf(?:inity)?|INF)|{MSVC}"
NUM = rf"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|{WORDNUM}"
NUM_ONLY = re.compile(NUM)


def _as_float(value: int | float) -> float:
    # JSON spells integers of any length; one beyond a float's range is +-inf, not OverflowError.
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def to_float(text: str) -> float:
    t = text.lower().lstrip("+")
    if "inf" in t:
        return -math.inf if t.startswith("-") else math.inf
    if t.lstrip("-").startswith("nan") or "#" in t:  # 1.#QNAN, -1.#IND
        return math.nan
    return float(t)


def parse_mapping(text: str) -> dict | None:
    """A JSON object or Python dict repr (``nan``/``inf`` bare or quoted, NumPy or torch scalars
    ``np.float64(0.5)``, ``tensor(0.5)``), else None."""
    try:
        value = loads_json(text)
    except ValueError:
        try:
            value = pyliteral.literal(text)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def mapping_fields(d: dict, prefix: str = "") -> list[tuple[str, float]]:
    """Numeric items of a dict (nested dicts flattened with ``/``); numeric strings count."""
    out = []
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.extend(mapping_fields(v, name + "/"))
        elif isinstance(v, bool):
            continue
        elif isinstance(v, (int, float)):
            out.append((name, _as_float(v)))
        elif isinstance(v, str) and NUM_ONLY.fullmatch(v.strip()):
            out.append((name, to_float(v.strip())))
    return out


def braced(text: str) -> str | None:
    """From the first ``{`` to the last ``}`` (what ``\\{.*\\}`` finds, without its quadratic search)."""
    i = text.find("{")
    j = text.rfind("}")
    return text[i:j + 1] if 0 <= i < j else None
