"""Header lines and the rows printed under them, with other output in between: one row a record.

Detection trainers (YOLOv5/v7, Ultralytics) print a line of column names and,
under it, one line of values per epoch, the header again every epoch, and
between them a validation header and its rows, tqdm redraws and blank lines.
No delimiter splits such a paste into rows of one width (the validation lines
are as wide as the training ones or not), so :mod:`.delimited` does not read
it; read as pairs of a header and the rows that match it, it is a table.

The rules, by structure alone:

- a line's cells are its whitespace-separated words before a tqdm bar or a
  word ending in a colon (``640: 100%|...``, ``mAP50-95): 100% ━━━``): what
  follows is progress, not cells;
- a header is a line of 3 or more names: each cell holds a letter and none is
  a number;
- a row is a line of as many cells as the nearest header above it (at most a
  few lines above), as split by whitespace or, where one column is a phrase of
  numbers and words, by wide gaps (2 spaces or a tab), each a number, a number with a unit (``0.868G``: matched,
  not read, for ``868M`` and ``1.2G`` are on different scales) or, first, a
  counter ``i/N`` (the epoch ``i`` of ``N``); a line that matches no header
  (``all 281 1.55e+03 ...``: a label first, a validation row) is not read;
- the rows under headers of the same names are one table; a row with the
  counter of the row before it (a tqdm redraw) replaces it: the last drawing
  is the record;
- it is a log only when the headers and rows are at least half of the
  non-blank lines (a validation header over its labelled row counts too): one
  header and row in a long text log is a summary, left to the text reader;
- of several tables, the one holding a training signal (the most rows among
  them) is read and the others named in a note, as :mod:`.delimited` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from runlens.io.reader import layout
from runlens.io.reader.chosen import with_signal
from runlens.io.reader.table import Records, Table
from runlens.io.reader.values import parse

_COUNT = re.compile(r"^(\d+)/(\d+)$")
_UNIT = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[A-Za-z%]{1,3}$")
_NEAR = 3  # a row is read under a header at most this many non-blank lines above it (a redraw between)


def _cells(line: str) -> list[str]:
    """The cells of ``line``: its words before a tqdm bar or a word ending in a colon."""
    words = layout.untail(line).split()
    for i, w in enumerate(words):
        if w.endswith(":"):
            return [*words[:i], w.rstrip(":")] if w.rstrip(":") else words[:i]
    return words


def _names(words: list[str]) -> tuple[str, ...] | None:
    if len(words) < 3 or any(not any(ch.isalpha() for ch in w) or _value(w) is not None for w in words):
        return None
    return tuple(words)


def _value(word: str) -> float | str | None:
    """A cell's number; ``""`` for a number with a unit (matched, not read); None for a word."""
    v = parse(word)
    if v is not None:
        return v
    return "" if _UNIT.match(word) else None


def _row(words: list[str], width: int) -> tuple[list[float | None], int | None] | None:
    """The values of a row ``width`` cells wide (None: a unit cell) and its counter; None for another line."""
    if len(words) != width:
        return None
    counter = None
    m = _COUNT.match(words[0])
    # ``0/249`` (YOLOv5 counts from 0) or ``1/300`` (Ultralytics from 1): a first cell past its total is
    # no epoch counter (a date, a ratio), and the line is not a row.
    if m is not None and int(m.group(1)) <= int(m.group(2)) + 1:
        counter = int(m.group(1))
    out: list[float | None] = [float(counter)] if counter is not None else []
    for w in words[len(out):]:
        v = _value(w)
        if v is None:
            return None
        out.append(v if isinstance(v, float) else None)
    return out, counter


_GAP = re.compile(r"\t|\s{2,}")


def _aligned(line: str, width: int) -> tuple[list[float | None], int | None] | None:
    """A row whose columns are set apart by wide gaps, one of them a phrase of its own (tf_cnn_benchmarks'
    ``1   images/sec: 5741.7 +/- 0.0 (jitter = 0.0)   9.428`` under ``Step  Img/sec  total_loss``): as
    many gap-split cells as the header, the first a number; a phrase cell is matched, not read."""
    cells = _GAP.split(layout.untail(line).strip())
    if len(cells) != width or width < 3 or parse(cells[0]) is None:
        return None
    out = [v if isinstance(v := parse(c), float) else None for c in cells]
    if any(v is None and not any(ch.isdigit() for ch in c) for v, c in zip(out, cells, strict=True)) \
            or sum(v is not None for v in out) < 2:
        return None
    return out, None


def _labelled(words: list[str], width: int) -> bool:
    """A label then numbers, as wide as the header above (``all 281 1.55e+03 ...``): a validation row."""
    return len(words) == width and _value(words[0]) is None and all(_value(w) is not None for w in words[1:])


@dataclass
class _Scan:
    tables: dict[tuple[str, ...], list[tuple[list[float | None], int | None]]] = field(default_factory=dict)
    taken: int = 0  # lines of headers with rows, and the rows
    nonblank: int = 0


def _scan(lines: list[str]) -> _Scan:
    scan = _Scan()
    header: tuple[str, ...] | None = None
    since, header_counted = 0, False
    for line in lines:
        if not line.strip():
            continue
        scan.nonblank += 1
        words = _cells(line)
        names = _names(words)
        if names is not None:
            header, since, header_counted = names, 0, False
            continue
        since += 1
        if header is None or since > _NEAR:
            continue
        got = _row(words, len(header)) or _aligned(line, len(header))
        if got is None:
            if _labelled(words, len(header)):
                scan.taken += 1 + (not header_counted)
                header_counted = True
            continue
        since = 0  # the next row may follow this one as closely as this one followed its header
        scan.taken += 1 + (not header_counted)
        header_counted = True
        rows = scan.tables.setdefault(header, [])
        if rows and got[1] is not None and rows[-1][1] == got[1]:
            rows[-1] = got  # a redraw of the same epoch's line: the last one is the record
        else:
            rows.append(got)
    return scan


def _history(lines: list[str]) -> _Scan | None:
    scan = _scan(lines)
    if not scan.tables or scan.taken < 0.5 * scan.nonblank:
        return None
    return scan


def looks(lines: list[str]) -> bool:
    """Whether the head ``lines`` are headers and rows matching them (see the module's rules)."""
    return _history(lines[:4000]) is not None


def read(lines: list[str]) -> Table | None:
    """The table of the headers and rows in ``lines``; None when they are not a log of them."""
    scan = _history(lines)
    if scan is None:
        return None
    tables = {h: _table(h, rows) for h, rows in scan.tables.items()}
    if len(tables) == 1:
        return next(iter(tables.values()))
    return with_signal(tables, ", ".join)


def _table(header: tuple[str, ...], rows: list[tuple[list[float | None], int | None]]) -> Table:
    names: list[str] = []
    for n in header:
        names.append(n if n not in names else f"{n}_{len(names) + 1}")
    rec = Records("header rows")
    for values, _ in rows:
        rec.add({n: v for n, v in zip(names, values, strict=True) if v is not None})
    table = rec.table()
    if all(c is not None for _, c in rows) and names[0] in table.values:
        table.counter = names[0]  # ``5/249``: the epoch, the index even when one row cannot show it rising
    return table
