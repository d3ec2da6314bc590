"""Lines that write each value before its name: ``10.5008 loss, 0.0000167 LR, 8.83 GB used, 18.70 s``.

Most trainers print ``name value``; a few (tinygrad's examples, Darknet's progress line, many
hand-written ``print(f"{loss:.4f} loss, ...")`` loops) print the number first and its name after it,
the way a unit follows a quantity. The field reader would pair each number with the name *before* it,
the previous field's, and shift every value one name to the left. A line is read this way only when it
is nothing else: every one of its separated parts (two at least) is one number followed by a name.
"""

from __future__ import annotations

import re

from runlens.io.importers._mapping import NUM as _NUM
from runlens.io.importers._mapping import to_float

# What a postfix line opens with: a number (or nan/inf). Most lines open with a word, and are refused here
# before any split: the field reader calls this on every line.
_OPENS = re.compile(r"\s*[-+.\dnNiI]")
_PART = re.compile(rf"^\s*(?P<v>{_NUM})\s+(?P<name>[A-Za-z][A-Za-z_/()-]*(?: [A-Za-z][A-Za-z_/()-]*){{0,3}})\s*$")
# Separators between the parts: a comma or a semicolon, or a bar, each with the spaces around it.
_SEP = re.compile(r"\s*[,;|]\s*")
# A bare time unit as a part's name is the step's duration (``18.70 s``), not a metric called "s".
_TIME_UNITS = {"s": "time (s)", "sec": "time (s)", "secs": "time (s)", "seconds": "time (s)",
               "ms": "time (ms)", "min": "time (min)", "mins": "time (min)"}


def postfix_fields(text: str, offset: int = 0) -> list[tuple[str, float, tuple[int, int]]] | None:
    """``(name, value, span of the number)`` of a line whose every part is ``number name``, or None."""
    if not _OPENS.match(text) or ("," not in text and ";" not in text and "|" not in text):
        return None
    out = []
    at = 0
    for sep in [*_SEP.finditer(text), None]:
        end = sep.start() if sep is not None else len(text)
        part = text[at:end]
        if part.strip():
            m = _PART.match(part)
            if m is None:
                return None
            name = m.group("name")
            out.append((_TIME_UNITS.get(name.lower(), name), to_float(m.group("v")),
                        (offset + at + m.start("v"), offset + at + m.end("v"))))
        if sep is not None:
            at = sep.end()
    # One part is a counted thing ("3 epochs"), not a line of fields.
    return out if len(out) >= 2 else None
