"""A YAML list of records in block style: ``- step: 50`` then ``  loss: 0.9``, one record an item.

What ``yaml.dump(trainer.state.log_history)`` writes (and people save by hand):
each item starts with ``- key: value`` and goes on with indented
``key: value`` lines; a key above the list (``log_history:``) only names
it. The flow style (``- {step: 50, loss: 0.9}``) is a line of its own and
the text reader's. This subset is read here line by line: no YAML library
is needed, and nothing in it can expand (YAML's aliases are not read).
A line of another shape (a nested mapping, a multi-line string) makes the
file something else.
"""

from __future__ import annotations

import re

from runlens.io.reader.table import Records, Table

_ENTRY = re.compile(r"^(\s*)(-\s+)?([A-Za-z_][\w./ -]*?)\s*:(?:\s+(\S.*?))?\s*$")
_ITEM = re.compile(r"^\s*-\s+[A-Za-z_][\w./ -]*?\s*:\s+\S")
_SPECIAL = {".nan": "nan", ".NaN": "nan", ".NAN": "nan", ".inf": "inf", "+.inf": "inf", "-.inf": "-inf",
            ".Inf": "inf", "-.Inf": "-inf", "null": "", "~": ""}


def _meaningful(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#") and ln.strip() != "---"]


def looks(lines: list[str]) -> bool:
    """Whether the head ``lines`` are a block-style YAML list of ``key: value`` records."""
    rows = _meaningful(lines[:400])
    items = sum(bool(_ITEM.match(r)) for r in rows)
    fits = sum(bool(_ENTRY.match(r)) for r in rows)
    return items >= 2 and fits >= 0.95 * len(rows)


def read(lines: list[str]) -> Table | None:
    """The records of the list, or None when a line is not of this subset or no record holds a number."""
    rec = Records("YAML list")
    current: dict[str, str] | None = None
    for line in _meaningful(lines):
        m = _ENTRY.match(line)
        if m is None:
            return None
        if m.group(2):
            if current:
                rec.add(current)
            current = {}
        if current is None or m.group(4) is None:
            continue  # a key above the list names it; a key with nothing after it opens a nesting
        value = m.group(4).split(" #", 1)[0].strip().strip("\"'")
        current[m.group(3).strip()] = _SPECIAL.get(value, value)
    if current:
        rec.add(current)
    return rec.table() if rec.rows else None
