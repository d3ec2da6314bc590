"""A bare sequence of numbers: the one series a person pastes with no name beside each value.

A list of losses copied out of a notebook (one per line), a NumPy array as
printed (``[698.79 549.57 ...]`` wrapped over lines, or ``array([434.29,
317.39, ...])``), a JSON or Python list: no line carries a step or a name,
so the text and table readers find nothing. Read by structure:

- at most two title lines first, with letters and no number
  (``=== Loss Array ===``, ``val_loss:``), or a name assigned on the array's
  own line (``losses = [...]``): their words name the series;
- then nothing but numbers: one per line, or a one-dimensional array's (an
  opening ``[``, ``array([`` or ``tensor([``, commas or spaces between the
  numbers, the closing bracket possibly cut off with the paste); a nested
  bracket is a matrix, not a series, and several numbers on a line with no
  bracket are a table's row (:mod:`.delimited` reads those);
- at least ``MIN_VALUES`` numbers: fewer are no curve.

The series is the table's one column, named by the title or else
:data:`UNNAMED`; its index is the row number. :mod:`.roles` reads a
loss-named title as it reads any name, and the unnamed series of this shape
as the training loss, saying so.
"""

from __future__ import annotations

import re

import numpy as np

from runlens.io.reader.table import Table
from runlens.io.reader.values import parse

SHAPE = "bare sequence"
UNNAMED = "values"
MIN_VALUES = 4
_TITLES = 2
_OPEN = re.compile(r"^(?:(?:array|tensor|np\.array|torch\.tensor)\(\s*)?\[\s*")
# What closes a printed array: the bracket, and NumPy's or PyTorch's keywords after it.
_CLOSE = re.compile(r"\s*\](?:\s*,\s*(?:dtype|device|requires_grad|grad_fn)=[^)]*)?\s*\)?\s*$")
_SPLIT = re.compile(r"[,\s]+")
_ASSIGNED = re.compile(r"^([A-Za-z_][\w.]*)\s*[:=]\s*(?=(?:array|tensor|np\.array|torch\.tensor)?\(?\s*\[)")
_WORD = re.compile(r"[A-Za-z_][\w./-]*")


def read(lines: list[str]) -> Table | None:
    """The sequence held by ``lines``, or None when they are not only (a title and) numbers."""
    printed = _r_vector(lines)
    if printed is not None:
        return printed
    body = [ln.strip() for ln in lines if ln.strip()]
    titles: list[str] = []
    while body and len(titles) < _TITLES and _is_title(body[0]):
        titles.append(body.pop(0))
    if not body:
        return None
    named = _ASSIGNED.match(body[0])
    if named is not None and not titles:  # ``losses = [...]``, ``val_loss: [...]``: the name is on the line
        titles, body = [named.group(1)], [body[0][named.end():], *body[1:]]
    values = _bracketed(body) if _OPEN.match(body[0]) else _one_per_line(body)
    if values is None or len(values) < MIN_VALUES:
        return None
    return _series(" ".join(w for t in titles for w in _WORD.findall(t)) or UNNAMED, values)


def _series(name: str, values: list[float]) -> Table:
    col = np.asarray(values, dtype=np.float64)
    # Whatever its name, the one series is what ``--loss`` would name: the refusal says so.
    return Table(col.size, {name: col}, {name: np.ones(col.size, bool)}, SHAPE, aliases={name: name})


def _r_vector(lines: list[str]) -> Table | None:
    """The one numeric vector R printed among the lines (``[1] -289968.9 -290266.2 ...`` then ``[8] ...``,
    ``#>`` before each in a reprex), named by the expression on the line above it when that is one word.

    Each line's bracket holds the position of its first value, so the positions check the lines
    belong together and none is missing: code and messages around the print are not the series.
    """
    runs: list[tuple[int, list[float]]] = []
    values: list[float] = []
    at = -1
    for i, line in enumerate(lines):
        m = _R_LINE.match(line)
        nums = _numbers(m.group(2)) if m else None
        if m is None or nums is None or int(m.group(1)) != len(values) + 1:
            if len(values) >= MIN_VALUES:
                runs.append((at, values))
            at, values = -1, []
            if m is None or nums is None or m.group(1) != "1":
                continue
        if not values:
            at = i
        values.extend(nums)
    if len(values) >= MIN_VALUES:
        runs.append((at, values))
    if len(runs) != 1:
        return None  # none, or several vectors: which one is the loss is not the shape's to say
    at, values = runs[0]
    above = lines[at - 1].strip().removeprefix(">").strip() if at > 0 else ""
    return _series(above if re.fullmatch(r"[A-Za-z_.][\w.$@]*", above) else UNNAMED, values)


# A position of at most nine digits (a billion values, no log's): a hostile line's 5,000-digit one is no
# position, where int() would refuse it.
_R_LINE = re.compile(r"^\s*(?:#>)?\s*\[(\d{1,9})\]((?:\s+\S+)+)\s*$")


def _is_title(line: str) -> bool:
    return bool(_WORD.search(line)) and not any(parse(w) is not None for w in _SPLIT.split(line.strip(" =-:#[]")))


def _numbers(text: str) -> list[float] | None:
    out = []
    for cell in _SPLIT.split(text.strip()):
        if not cell:
            continue
        v = parse(cell)
        if v is None:
            return None
        out.append(v)
    return out


def _one_per_line(body: list[str]) -> list[float] | None:
    out = []
    for line in body:
        nums = _numbers(line.rstrip(","))
        if nums is None or len(nums) != 1:
            return None
        out.append(nums[0])
    return out


def _bracketed(body: list[str]) -> list[float] | None:
    text = _OPEN.sub("", " ".join(body), count=1)
    closed = _CLOSE.search(text)
    if closed is not None:
        text = text[:closed.start()]
    if "[" in text or "]" in text:  # a matrix, or something after the array
        return None
    return _numbers(text)
