"""The last reading of a console log: a table of numbers under a line of column names, between other lines.

A script that prints its own table (``Epoch  Train Loss  Val Loss``, then a row
of numbers per epoch) between a banner and a closing message, or a CLI tool whose
every line opens with a status tag (``[ ACTION ]``, ``[   20%   ]``), is neither
a table (the other lines break its rows) nor lines the text reader knows (no
step is named on them). When nothing else reads the log, this one looks for the
table by structure alone:

- a line's cells are its whitespace-separated words once a log prefix and a
  leading bracketed tag are taken off;
- a header is a line of 2 or more cells, at least one a name (holding a
  letter) and fewer than half numbers;
- its rows are the lines right under it, 3 at least, each of the same number
  of cells, every one a number (or ``nan``/``inf``); a bracketed list of numbers
  (DeepXDE's ``[1.11e+00, 5.56e-01]``, one per term of the loss) is one cell, the
  sum of its terms, and an empty one (``[]``) a missing value;
- one name heads each column: the header's words when there are as many as
  the columns, else the header cut at its runs of two or more spaces (a name
  of two words, ``Train log_loss``, is one column's);
- of several such blocks, the longest whose names give a training signal (a
  loss, a validation loss) is read, as the table reader reads any table.

The import warnings say which header was read and on which line, so a reader
can check it; ``--loss NAME`` names another column.
"""

from __future__ import annotations

import functools
import io
import math
import re
from pathlib import Path

from runlens.errors import ImportFailedError
from runlens.io.importers._clean import strip_prefixes
from runlens.io.importers._common import Take
from runlens.io.importers._ranks import one_rank
from runlens.io.importers._textblock import blocks
from runlens.io.reader.source import open_limited

#: The fewest rows under a header read as a table: two rows and a header can be anything.
MIN_ROWS = 3
_MAX_LINE = 4096
_MAX_LINES = 200_000  # a table a person prints sits in the first lines; a huge log is not scanned whole
_TAG = re.compile(r"^\s*\[[^\]]{0,40}\]\s*")
_WIDE = re.compile(r"\s{2,}|\t")
_NUMBER = re.compile(r"^[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)$", re.IGNORECASE)


def _text(raw: str) -> str:
    """The line without its log prefix and a leading bracketed tag, each bracketed list of numbers one
    cell (:func:`_vector`)."""
    text = _TAG.sub("", strip_prefixes(raw[:_MAX_LINE]), count=1)
    return _VECTOR.sub(_vector, text) if "[" in text else text


# A cell that prints a list of numbers: DeepXDE's ``[1.11e+00, 5.56e-01, 5.81e-04]`` under ``Train loss``,
# one number per term of the loss (the PDE's residual, each boundary condition), ``[]`` when a metric
# was not asked for.
_TERM = r"(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
_VECTOR = re.compile(rf"\[\s*({_TERM}(?:\s*,\s*{_TERM})*)?\s*\]", re.IGNORECASE)
#: What an empty list leaves in its column: a cell with no number, read as missing.
_EMPTY = "-"


def _vector(m: re.Match[str]) -> str:
    """A list's cell: the sum of its terms, as the table reader sums a loss's parts (NaN when one is)."""
    if not m.group(1):
        return _EMPTY
    return repr(math.fsum(float(v) for v in m.group(1).split(",")))


def _header(cells: list[str]) -> bool:
    numbers = sum(bool(_NUMBER.match(c)) for c in cells)
    return len(cells) >= 2 and 2 * numbers < len(cells) and any(ch.isalpha() for c in cells for ch in c)


def _row(cells: list[str]) -> bool:
    return len(cells) >= 2 and all(_NUMBER.match(c) or c == _EMPTY for c in cells) and not all(
        c == _EMPTY for c in cells)


def find(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Each block of a header and its rows (``MIN_ROWS`` at least) in ``lines``, longest first: ``(line
    number of the header, [header, row, ...])``, tab-separated, one name over each column."""
    found: list[tuple[int, list[str]]] = []
    cells = [_text(raw).split() for raw in lines]
    i = 0
    while i < len(cells):
        if not _header(cells[i]):
            i += 1
            continue
        j = i + 1
        width = len(cells[j]) if j < len(cells) and _row(cells[j]) else 0
        while j < len(cells) and _row(cells[j]) and len(cells[j]) == width:
            j += 1
        names = _names(lines[i], cells[i], width)
        if j - i - 1 >= MIN_ROWS and names is not None:
            found.append((i, ["\t".join(c) for c in (names, *cells[i + 1:j])]))
        i = max(j, i + 1)
    return sorted(found, key=lambda b: -len(b[1]))


def _names(raw: str, words: list[str], width: int) -> list[str] | None:
    """One name per column: the header's words, or, when a name has several words (``Train log_loss``),
    the header cut at its runs of two or more spaces; None when neither gives ``width`` names."""
    if len(words) == width:
        return words
    cut = [c for c in _WIDE.split(_text(raw).strip()) if c]
    return cut if len(cut) == width else None


def read(path: Path, encoding: str = "utf-8") -> Take | None:
    """The log at ``path`` as the table it holds between other lines; None when it holds none with a
    training signal."""
    from runlens.io.importers.table import noted, table_runs
    from runlens.io.reader import delimited

    with io.TextIOWrapper(open_limited(path), encoding=encoding, errors="replace") as f:
        lines = []
        for chunk in one_rank(blocks(f, _MAX_LINE)):
            lines.extend(chunk)
            if len(lines) >= _MAX_LINES:
                break
    for at, block in find(lines):
        shape = delimited.sniff(block)
        if shape is None:
            continue
        table = delimited.read(block, *shape)
        if table.n < MIN_ROWS:
            continue
        try:
            take = table_runs(table, path, kind="text")
        except ImportFailedError:
            continue  # no training signal among its names: another block may hold one
        note = (f"no line is in a format runlens knows: read the table of {table.n} rows under the header on "
                f"line {at + 1} ({', '.join(block[0].split(chr(9)))[:120]}); --loss NAME names another column")
        if any(_VECTOR.search(raw) for raw in lines[at + 1:at + len(block)]):
            note += "; a bracketed list of numbers in a cell is read as one value, the sum of its terms"
        return functools.partial(noted, take, [note])
    return None


def finds(lines: list[str]) -> bool:
    """Whether ``lines`` (a log's head) hold a header and ``MIN_ROWS`` rows under it (what the sniff asks;
    the read checks the names)."""
    return bool(find(lines))

