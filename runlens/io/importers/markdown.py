"""Markdown tables of metrics: the epoch tables people write into notes, issues and PR comments.

A table is a GitHub-flavoured one: a header row of ``|``-separated names,
a separator row (``|---|:---:|``), then its rows. The table read is the
one with a loss column (training or validation, by the reader's words:
``Train Loss``, ``Eval Loss``, ``val_loss``...) and the most rows; the
others are named in a note. Cells drop their emphasis (``**0.15**``);
``-``, ``n/a`` and empty cells are "not logged"; a cell that holds words
leaves its column out (``Observation``). The step is a ``Step`` column,
else the epoch when every epoch is a whole number, else the row: a
fractional epoch (``0.83``) stays the ``epoch`` scalar.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.bounded import bounded_steps
from runlens.io.importers._common import Imported, Series, require_file
from runlens.io.importers._names import Mapper, is_step_key, map_name, normalise
from runlens.io.importers._textfile import check_text_file
from runlens.io.reader.values import parse

_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
# A rule under a header: GitHub's ``|---|:---:|``, a console table's ``|=====|`` or ``+------+------+``.
_BORDER_CHARS = re.compile(r"^[\s|+:=-]+$")  # one class, no nesting: linear on any line
_HEAD_ROWS = 3


# GitHub's delimiter row in its shortest forms: ``-- | --``, ``:-|-:`` (outer pipes optional, one dash a cell).
_DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$")


def _is_rule(line: str) -> bool:
    return (("---" in line or "===" in line) and _BORDER_CHARS.match(line) is not None) or bool(
        "|" in line and _DELIMITER_ROW.match(line))
_MARKUP = re.compile(r"[*`~]+|^_+|_+$")  # emphasis; an underscore inside a name (val_loss) stays
_MISSING = frozenset({"", "-", "--", "—", "–", "n/a", "na", "none", "null", "nan?"})


@dataclass
class Table:
    first_line: int
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)

    @property
    def last_line(self) -> int:
        return self.first_line + 1 + len(self.rows)


def _cells(line: str, bare: bool = False) -> list[str]:
    """A row's cells; ``bare``: also a row without its outer pipes (``epoch | loss``), which GitHub
    reads as a table row under a header that has a delimiter row."""
    m = _ROW.match(line)
    if m:
        return [c.strip() for c in m.group(1).split("|")]  # a rule's one cell is checked apart
    return [c.strip() for c in line.strip().strip("|").split("|")] if bare and "|" in line else []


def tables(lines: list[str]) -> list[Table]:
    """Every header-rule-rows table in ``lines`` (1-based line numbers): GitHub's, and the bordered
    tables consoles print (MATLAB's ``trainNetwork``, PrettyTable), whose rules are ``=`` or ``+---+``
    and whose header may take up to 3 rows under a top rule, joined cell by cell (``Mini-batch`` over
    ``Loss`` is ``Mini-batch Loss``)."""
    out: list[Table] = []
    i = 0
    while i < len(lines) - 1:
        head: list[list[str]] = []
        j = i
        while j < len(lines) and len(head) < _HEAD_ROWS and not _is_rule(lines[j]) and (cells := _cells(lines[j])):
            head.append(cells)
            j += 1
        # GitHub's table without outer pipes: one header row right above a delimiter row, cell for cell.
        bare = not head and i + 1 < len(lines) and _DELIMITER_ROW.match(lines[i + 1]) is not None and len(
            cells := _cells(lines[i], bare=True)) == len(_cells(lines[i + 1], bare=True)) >= 2
        if bare:
            head, j = [cells], i + 1
        # More than one header row only under a top rule: a Markdown header is one row.
        topped = i > 0 and _is_rule(lines[i - 1])
        if head and j < len(lines) and _is_rule(lines[j]) and len({len(r) for r in head}) == 1 \
                and (len(head) == 1 or topped):
            t = Table(i + 1, [" ".join(p for p in parts if p) for parts in zip(*head, strict=True)])
            i = j + 1
            while i < len(lines) and ((cells := _cells(lines[i], bare)) and not _is_rule(lines[i])
                                      or _rule_between_rows(lines, i, len(t.header), bare)
                                      or _elided(lines, i, len(t.header), bare)):
                if not _is_rule(lines[i]) and not _ELISION.match(lines[i]):
                    t.rows.append((cells + [""] * len(t.header))[:len(t.header)])
                i += 1
            out.append(_grouped(t))
            continue
        i += 1
    return out


# Rows left out by the person who pasted: ``....``, ``...`` or ``…`` on a line of its own (in cells or not).
# Three dots exactly, then one class: no two parts of the pattern can take the same dot, so a line of
# a million dots and a letter fails in linear time.
_ELISION = re.compile(r"^[\s|]*(?:\.{3}|…|⋮)[\s|.…⋮]*$")


def _elided(lines: list[str], i: int, width: int, bare: bool) -> bool:
    """An elision line between rows (Turi Create's table pasted with ``....`` where thousands of
    iterations were cut), not the table's end: the line after it is a row as wide as the header. The
    rows' own step column keeps the gap."""
    return _ELISION.match(lines[i]) is not None and _row_follows(lines, i, width, bare)


def _rule_between_rows(lines: list[str], i: int, width: int, bare: bool) -> bool:
    """A rule under every row (Turi Create's and PrettyTable's ``hrules=ALL`` tables), not the table's end:
    the line after it is a row as wide as the header."""
    return _is_rule(lines[i]) and _row_follows(lines, i, width, bare) and not _is_rule(lines[i + 1])


def _row_follows(lines: list[str], i: int, width: int, bare: bool) -> bool:
    """Whether the line after line ``i`` is a row as wide as the header."""
    return i + 1 < len(lines) and len(_cells(lines[i + 1], bare)) == width


def _grouped(t: Table) -> Table:
    """A header of groups over a first row of names, as people write a two-level header in GitHub's
    one-row tables (``| train | | | validate |`` over ``| epoch | Loss | | epoch |``): the first row
    is the names, each under the group cell at or left of it (a group spans the empty cells to its
    right). Only where that row holds words alone and numbered rows follow it."""
    if len(t.rows) < 2 or not all(_words_only(c) for c in t.rows[0]) or not any(c for c in t.rows[0]) \
            or not any(isinstance(cell_value(c), float) for r in t.rows[1:] for c in r):
        return t
    group, names = "", []
    for top, name in zip(t.header, t.rows[0], strict=True):
        group = top or group
        names.append(" ".join(p for p in (group, name) if p))
    return Table(t.first_line + 1, names, t.rows[1:])


def _words_only(text: str) -> bool:
    value = cell_value(text)
    return value is None or value is WORDS


WORDS = object()  # a cell that holds words: its column is not a metric


def cell_value(text: str) -> float | None | object:
    """The number in a table cell (NaN/Inf kept as data), None for an empty or missing one,
    :data:`WORDS` for text."""
    c = _MARKUP.sub("", text).strip()
    if c.lower() in _MISSING:
        return None
    v = parse(c.replace(",", ""))  # every spelling of NaN/Inf is a value (nanxxx, 1.#QNAN, tensor(nan))
    return WORDS if v is None else v


def _roles(header: list[str]) -> list[tuple[bool, str]]:
    return [map_name(_MARKUP.sub("", h).strip()) for h in header]


def has_loss(t: Table) -> bool:
    return any(col in ("loss", "val_loss") or col.startswith("val_loss@") for _, col in _roles(t.header))


def pick(found: list[Table]) -> Table | None:
    """The table to read: a loss column and the most rows (the first of equals)."""
    with_loss = [t for t in found if has_loss(t) and t.rows]
    return max(with_loss, key=lambda t: len(t.rows), default=None)


def read(source: str | Path, *, step: str | None = None, loss: str | None = None,
         val_loss: str | None = None) -> Imported:
    """Read the metrics table of a Markdown (or any text) file; ``step``/``loss``/``val_loss``
    name header cells (case and emphasis ignored) that take those roles."""
    path = Path(source)
    require_file(path, "markdown")
    encoding = check_text_file(path)
    with open(path, encoding=encoding, errors="replace") as f:
        found = tables(f.read().splitlines())
    t = pick(found)
    if t is None:
        raise ImportFailedError(f"{path}: no Markdown table with a loss column (a header row, a |---| rule, rows)")
    imp = Imported(kind="markdown", source=path)
    others = [o for o in found if o is not t and has_loss(o)]
    if others:
        imp.warnings.append(f"the file holds {len(found)} tables, {len(others) + 1} with a loss column; imported "
                            f"the one at lines {t.first_line}-{t.last_line} ({len(t.rows)} rows, the most)")
    for name, role in ((loss, "loss"), (val_loss, "val_loss")):
        _index(path, t.header, name, role)  # a name the table lacks is refused, not ignored
    mapper = Mapper(loss, val_loss)
    roles = [mapper(_MARKUP.sub("", h).strip()) for h in t.header]
    values = [[cell_value(r[j]) for r in t.rows] for j in range(len(t.header))]
    steps, how, step_j = _steps(t, roles, values, imp.warnings, given=_index(path, t.header, step, "step"))
    used = {"step": how}
    for j, ((is_eval, col), name) in enumerate(zip(roles, t.header, strict=True)):
        if j == step_j:
            continue
        col_vals = values[j]
        if any(v is WORDS for v in col_vals):
            imp.warnings.append(f"column {name!r} holds words, not numbers: not imported")
            continue
        keep = np.array([v is not None for v in col_vals]) & (steps >= 0)
        if not keep.any():
            continue
        s = Series(steps[keep], np.array([v for v, k in zip(col_vals, keep, strict=True) if k], dtype=np.float64))
        target = imp.evals if is_eval else imp.train
        if col in target:
            imp.warnings.append(f"column {name!r} maps to {col!r} like an earlier one: not imported")
            continue
        target[col] = s
        used[col] = name
    imp.config["import_columns"] = used
    return imp


def _index(path: Path, header: list[str], name: str | None, role: str) -> int | None:
    """The column a ``--step``/``--loss``/``--val-loss`` name picks (None when none is given)."""
    if name is None:
        return None
    names = [normalise(_MARKUP.sub("", h)) for h in header]
    if normalise(name) not in names:
        raise ImportFailedError(f"{path}: no column {name!r} for the {role} in the table (columns: "
                                f"{', '.join(repr(h) for h in header)})")
    return names.index(normalise(name))


def _steps(t: Table, roles: list[tuple[bool, str]], values: list[list[float | None | object]], warnings: list[str], *, given: int | None = None
           ) -> tuple[np.ndarray, str, int | None]:
    """The step of each row, how it was found, and the column it came from (None: the row)."""
    n = len(t.rows)
    for j, h in enumerate(t.header):
        if j == given or (given is None and is_step_key(_MARKUP.sub("", h).strip())):
            return bounded_steps([None if v is WORDS else v for v in values[j]], repr(h), warnings), \
                f"column {h!r}", j
    for j, (_, col) in enumerate(roles):
        ep = [v for v in values[j] if isinstance(v, float)]
        if col == "epoch" and len(ep) == len(values[j]) and all(math.isfinite(v) and v == int(v) for v in ep) \
                and len({int(v) for v in ep}) == n:
            return bounded_steps(ep, repr(t.header[j]), warnings), f"column {t.header[j]!r} (one row per epoch)", None
    return np.arange(n, dtype=np.int64), "row index (no step column, no whole-number epochs)", None
