"""Where a pasted table starts and which rows belong to it: the lines around a table are not the table.

A table pasted from a console rarely stands alone. Above it there is the
call that printed it (``learn.fit_one_cycle(5, 3e-3)``), a banner, a
progress line; within it a tool may print its header again before every
row block (YOLO), or interleave a second table under its own header (a
validation block). The rules, by structure:

- the header is the row of names nearest above the first data rows: prose
  or code above it is not part of the table;
- a header whose words do not fall one to a column (spaCy's ``LOSS NER``,
  pandas' unnamed index column) is cut by where the columns lie: the dash
  rule under it when there is one, else the extent of the cells below;
- a data row before the header that is not as wide as the table is prose
  that happens to hold numbers;
- a later row of names as wide as the table starts a table of its own (the
  same names again: the same table continuing); a data row joins the table
  whose rows have numbers in the same cells (a train row after a
  validation block goes back to the train table);
- a tqdm bar glued to a row (``640: 100%|####| 330/330 [02:13<00:00]``)
  is not cells of the row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from runlens.io.reader.values import parse as _number

_BAR = re.compile(r":\s*\d{1,3}%\|.*$")


def untail(line: str) -> str:
    """``line`` without a tqdm bar glued after a row of at least three cells.

    A one- or two-word description before a bar (``Epoch 0: 100%|...``) is a progress label whose
    values sit in the bar's postfix, so such a line is kept whole: only a row of cells loses its bar.
    """
    m = _BAR.search(line)
    if m is None:
        return _unnoted(line)
    head = line[: m.start()]
    return head if len(head.split()) >= 3 else line


def _unnoted(line: str) -> str:
    """``line`` without the words a tool prints after a row's numbers (Stan's ``MAY BE DIVERGING...
    INSPECT ELBO``, a ``best`` at the best epoch): a note beside the row, not cells of it. Only a row
    whose numbers run unbroken, three at least, loses its tail, and only words: a cell with no letter
    (fastai's ``00:13``) is a column; a word between numbers names them."""
    tail = line.rsplit(None, 1)[-1] if line.strip() else ""
    if not any(ch.isalpha() for ch in tail):  # most rows end in a number: nothing to parse
        return line
    cells = list(_RUN.finditer(line))
    nums = [_number(c.group()) is not None for c in cells]
    if nums[-1] or True not in nums:
        return line
    first = nums.index(True)
    last = len(nums) - 1 - nums[::-1].index(True)
    if last - first + 1 < 3 or not all(nums[first:last + 1]) or \
            not all(any(ch.isalpha() for ch in c.group()) for c in cells[last + 1:]):
        return line
    return line[: cells[last].end()]


def start(cells: list[list[str]], numeric: list[bool], width: int) -> int:
    """Index of the table's first line (its header, or its first row) among the lines' ``cells``.

    The table begins at the first data row as wide as the table; the row of names just above it, if
    any, is its header. Everything before is preamble.
    """
    first = next((i for i, (c, num) in enumerate(zip(cells, numeric, strict=True)) if num and len(c) == width), 0)
    return first - 1 if first > 0 and not numeric[first - 1] else first


@dataclass
class Blocks:
    """The rows of a paste grouped under the header each belongs to (None: rows with no header)."""

    width: int
    rows: dict[tuple[str, ...] | None, list[list[float | None]]] = field(default_factory=dict)
    names: list[list[str]] = field(default_factory=list)  # rows of names seen since the last data row
    current: tuple[str, ...] | None = None

    def name_row(self, cells: list[str]) -> None:
        self.names.append(cells)

    def data_row(self, cells: list[str], nums: list[float | None]) -> None:
        if not self.rows:
            if (len(cells) != self.width and not self.names) or len(cells) < self.width - 1:
                # Numbers in the prose above the table (a headerless one; or a matrix a warning printed,
                # ``1 1`` under ``y is not positive definite:``, two cells or more short of a row).
                return
            self.current = self._first_header()
        elif self.names and len(self.names[-1]) == self.width and self.current is not None \
                and all_names(self.names[-1]):
            self.current = tuple(self.names[-1])  # a header again (the same or another table's)
        self.names.clear()
        self.rows.setdefault(self._owner(nums), []).append(nums)

    def _first_header(self) -> tuple[str, ...] | None:
        # The nearest: it may be narrower or wider than the rows (an index column with no name, a
        # name of two words), which :func:`aligned` mends; what is above it is prose.
        if len(self.names) >= 2 and len(self.names[-1]) == 1 and len(self.names[-2]) == self.width - 1:
            # pandas prints a named index's name on a line of its own, under the other columns' names.
            return (self.names[-1][0], *self.names[-2])
        return tuple(self.names[-1]) if self.names else None

    def _owner(self, nums: list[float | None]) -> tuple[str, ...] | None:
        """The header whose rows have numbers where this row has them (the current one when none does)."""
        own = self.rows.get(self.current)
        if not own or _kinds(own[0]) == _kinds(nums):
            return self.current
        return next((h for h, rows in self.rows.items() if _kinds(rows[0]) == _kinds(nums)), self.current)


def all_names(cells: list[str]) -> bool:
    """Whether every cell is a name: a row of dashes or empty cells between rows is not a header."""
    return all(c and c not in ("-", "_") and _number(c) is None for c in cells)


def _kinds(nums: list[float | None]) -> tuple[bool, ...]:
    return tuple(v is not None for v in nums)


_RUN = re.compile(r"\S+")
_NAME_RUN = re.compile(r"\S+(?: \S+)*")
_DASH_RULE = re.compile(r"^[\s=-]+$")
_DASH_RUN = re.compile(r"[-=]+")


def aligned(header: str, below: list[str], width: int) -> list[str] | None:
    """The names of a space-aligned table's ``width`` columns, from the ``header`` line and the lines
    ``below`` it (a column no word stands over gets ""); None when the words do not line up."""
    spans = _spans(below, width)
    if spans is None:
        return None
    # Names of several words are spaced by one space, columns by two or more (``Epoch    Train Loss
    # Valid Loss``): as many such groups as columns, each over its own column in order, are the names,
    # whichever way the words hang over the numbers.
    groups = [(m.start(), m.end(), m.group()) for m in _NAME_RUN.finditer(header)]
    if len(groups) == width and all(_overlap((a, b), spans[j]) > 0 or _between(a, b, spans, j)
                                    for j, (a, b, _) in enumerate(groups)):
        return [g for _, _, g in groups]
    words = [(m.start(), m.end(), m.group()) for m in _RUN.finditer(header)]
    owner: list[int] = []  # the column each word stands over; -1: none
    for a, b, _ in words:
        overlap = [_overlap((a, b), span) for span in spans]
        best = max(range(width), key=overlap.__getitem__)
        owner.append(best if overlap[best] > 0 else -1)
    # A word over no column is the first word of a name whose last word stands over one
    # (``LOSS TOK2VEC`` right-aligned over its numbers).
    for i in reversed(range(len(owner) - 1)):
        if owner[i] < 0:
            owner[i] = owner[i + 1]
    if not owner or owner[-1] < 0 or owner != sorted(owner):
        return None
    names: list[list[str]] = [[] for _ in range(width)]
    for o, (_, _, word) in zip(owner, words, strict=True):
        names[o].append(word)
    return [" ".join(n) for n in names]


def _overlap(word: tuple[int, int], span: tuple[int, int]) -> int:
    return min(word[1], span[1]) - max(word[0], span[0])


def _between(a: int, b: int, spans: list[tuple[int, int]], j: int) -> bool:
    """Whether the name at ``a..b`` lies between column ``j - 1``'s end and column ``j + 1``'s start."""
    return (j == 0 or spans[j - 1][1] <= a) and (j == len(spans) - 1 or b <= spans[j + 1][0])


def _spans(below: list[str], width: int) -> list[tuple[int, int]] | None:
    """Where each column lies: the runs of a dash rule right under the header, else from the first
    cell's start to the last cell's end over the rows below that are ``width`` cells wide."""
    lines = [ln for ln in below if ln.strip()]
    if lines and _DASH_RULE.match(lines[0]):
        runs = [(m.start(), m.end()) for m in _DASH_RUN.finditer(lines[0])]
        if len(runs) == width:
            return runs
    rows = [[(m.start(), m.end()) for m in _RUN.finditer(untail(ln))] for ln in lines[:50]]
    rows = [r for r in rows if len(r) == width]
    if not rows:
        return None
    return [(min(r[j][0] for r in rows), max(r[j][1] for r in rows)) for j in range(width)]
