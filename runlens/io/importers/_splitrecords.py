"""Records a loop prints over two lines, joined into the one line the text reader knows.

Two shapes, each a line of names with no number and, right under it, the numbers alone:

- a label that ends in a colon, its value alone on the next line (``print("current training loss
  is :")`` then ``print(loss)``): ``current training loss: 2.04e-06``;
- a row of names, comma-separated, with an optional prefix (``DEV: loss, acc, precision, recall,
  f1``), over a row of as many numbers (``0.0104 0.9992 0.7756 0.7645 0.77``): each name beside its
  number, the prefix on each (``DEV loss: 0.0104, DEV acc: 0.9992, ...``).

Only one line of numbers alone is joined to the line above it, and only when the counts agree: a
line of names over a line of anything else, or over several lines of numbers (a table: a CSV's
header and its rows), stays as it was. The text reader tries this only on a log none
of whose lines it could read otherwise, so a log it reads costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from runlens.io.importers._mapping import NUM, NUM_ONLY

# "current training loss is :", "Validation loss =": words, then a colon or an equals sign, nothing after.
_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z _\-/()]*?)(?:\s+(?:is|was|are))?\s*[:=]\s*$")
_ALONE = re.compile(rf"^\s*({NUM})\s*$")
# "DEV: loss, acc, f1" or "loss, acc, f1": two names or more, comma-separated, each of words that begin
# with a letter ("f1" is a name, "epoch 1" is not).
_WORDS = r"[A-Za-z][\w\-]*(?: [A-Za-z][\w\-]*)*"
_NAMES = re.compile(rf"^\s*(?:([A-Za-z][\w\-]*)\s*:\s*)?({_WORDS}(?:\s*,\s*{_WORDS})+)\s*$")
_VALUES = re.compile(rf"^\s*(?:{NUM})(?:(?:\s*,\s*|\s+)(?:{NUM}))+\s*,?\s*$")


def join_split(lines: Iterable[str]) -> list[str]:
    """``lines`` with each two-line record (see the module) joined into one line."""
    src = list(lines)
    out: list[str] = []
    i = 0
    while i < len(src):
        line, below = src[i], src[i + 1] if i + 1 < len(src) else ""
        # One record: a second line of numbers under the first makes a table (a CSV's header and rows).
        after = src[i + 2] if i + 2 < len(src) else ""
        if _VALUES.match(after) or _ALONE.match(after):
            out.append(line)
            i += 1
            continue
        if _ALONE.match(below) and (m := _LABEL.match(line)):
            out.append(f"{m.group(1)}: {below.strip()}")
            i += 2
            continue
        if _VALUES.match(below) and (m := _NAMES.match(line)):
            names = [n.strip() for n in m.group(2).split(",")]
            values = NUM_ONLY.findall(below)
            if len(names) == len(values):
                prefix = f"{m.group(1)} " if m.group(1) else ""
                out.append(", ".join(f"{prefix}{n}: {v}" for n, v in zip(names, values, strict=True)))
                i += 2
                continue
        out.append(line)
        i += 1
    return out
