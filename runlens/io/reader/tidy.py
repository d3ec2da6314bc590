"""A long ("tidy") history table: one value a row, its meaning spelled in text columns beside it.

R's ``as.data.frame(history)`` (keras for R) and pandas' ``melt`` write a
history as ``epoch,value,metric,data`` rows (``1,0.90,loss,training``,
``1,0.95,loss,validation``): one counter, one number, and text cells that
say which series the number belongs to. Read as a wide table it holds no
loss column at all. Pivoted, each combination of the text cells
(``loss_training``, ``loss_validation``) is a column over the counter, and
the roles read those names as every other table's.

The shape is told by structure only: exactly one counter column (a step or
epoch word), exactly one other numeric column, and at least one column of
text alone, whose combinations repeat (a few series over many rows).
"""

from __future__ import annotations

import numpy as np

from runlens.io.reader.delimited import split
from runlens.io.reader.names import is_epoch, is_step, tokens
from runlens.io.reader.table import MAX_COLUMNS, Table
from runlens.io.reader.values import parse


def _cells(lines: list[str], delim: str) -> tuple[list[str], list[list[str]]] | None:
    kept = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    rows = [split(ln, delim) for ln in kept]
    # The header is the first line right above a row of numbers that the rows below fit (as wide, or
    # one wider: R's row names): the calls that printed the frame (``> df``) may stand above it.
    top = next((i for i in range(min(len(rows), 10)) if len(rows) - i > 3
                and any(parse(c) is not None for c in rows[i + 1]) and sum(
        len(r) in (len(rows[i]), len(rows[i]) + 1) for r in rows[i + 1:]) >= 0.8 * (len(rows) - i - 1)), 0)
    rows, kept = rows[top:], kept[top:]
    if len(rows) < 3:
        return None
    header = [c.strip().strip("\"'") for c in rows[0]]
    body = [[c.strip().strip("\"'") for c in r] for r in rows[1:]]
    # R's print(df) numbers its rows with blanks above them (a right-aligned header, split on spaces).
    if delim == " " and kept[0][:1].isspace() and sum(len(r) == len(header) + 1 for r in body) >= 0.8 * len(body):
        body = [r[1:] for r in body if len(r) == len(header) + 1]
    return header, [r for r in body if len(r) == len(header)]


def _kinds(header: list[str], body: list[list[str]]) -> tuple[list[int], list[int]] | None:
    """The text columns and the numeric ones; None when a column is neither."""
    text, numeric = [], []
    for j in range(len(header)):
        cells = [r[j] for r in body if r[j]]
        nums = sum(parse(c) is not None for c in cells)
        if cells and nums == 0:
            text.append(j)
        elif cells and nums >= 0.8 * len(cells):
            numeric.append(j)
        else:
            return None
    return text, numeric


def pivot(lines: list[str], delim: str) -> Table | None:
    """The wide table of a long history in ``lines``, or None when they are not one."""
    got = _cells(lines, delim)
    if got is None or len(got[1]) < 4:
        return None
    header, body = got
    kinds = _kinds(header, body)
    if kinds is None:
        return None
    text, numeric = kinds
    counters = [j for j in numeric if is_step(tokens(header[j])) or is_epoch(tokens(header[j]))]
    values = [j for j in numeric if j not in counters]
    if len(values) > 1:
        # R's write.csv and pandas' to_csv write the row names as a column (``""``, ``X``): numbered
        # 1..n or 0..n-1 in order, they are no series' values.
        values = [j for j in values if not _row_numbers([parse(r[j]) for r in body])]
    if not text or len(counters) != 1 or len(values) != 1:
        return None
    keys = ["_".join(r[j] for j in text) for r in body]
    series = list(dict.fromkeys(keys))
    if len(series) > MAX_COLUMNS or 2 * len(series) > len(body):
        return None  # a text cell that differs on most rows is a label, not a series' name
    at, value = counters[0], values[0]
    counts = np.array([parse(r[at]) for r in body], dtype=np.float64)  # None -> nan
    steps = np.unique(counts[np.isfinite(counts)])
    out = {header[at]: steps.copy()}
    present = {header[at]: np.ones(len(steps), dtype=bool)}
    for name in series:
        out[name], present[name] = np.full(len(steps), np.nan), np.zeros(len(steps), dtype=bool)
    for r, key, c in zip(body, keys, counts, strict=True):
        v = parse(r[value])
        if np.isfinite(c) and v is not None:
            i = int(np.searchsorted(steps, c))  # a counter written twice for one series keeps the last
            out[key][i], present[key][i] = v, True
    return Table(len(steps), out, present, "long table (pivoted)")


def _row_numbers(cells: list[float | None]) -> bool:
    first = cells[0] if cells else None
    return first in (0.0, 1.0) and cells == [first + i for i in range(len(cells))]
