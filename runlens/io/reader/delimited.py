"""Delimited tables by structure: any delimiter, padded or quoted cells, with or without a header.

The delimiter is the one (tab, comma, semicolon, then runs of
spaces) that splits the head of the file into the same number of cells
on most lines. A header is a row whose cells are mostly not numbers, the
one nearest above the first rows (lines above it, a banner or the call that
printed the table, are not the table: :mod:`.layout`); the same header
repeated further down (appended runs, concatenated files, a header printed
before every epoch) starts nothing new and is skipped, as is every row that
carries no number. A ``#`` line is a comment, but one of names as many as the
cells, right above the first row when no header is, is the header commented
out (numpy.savetxt, DeePMD's ``lcurve.out``). Rows under another header as wide (a validation block)
are another table: the one holding a training signal is read.
A ``e/N`` cell (YOLO's ``0/299``) is its counter ``e``. Pipe tables are
Markdown's, read by :mod:`runlens.io.importers.markdown` with the same cell
values (:func:`runlens.io.reader.values.parse`).

A well-formed comma/tab table is handed to :func:`pyarrow.csv.read_csv`
(columns it cannot type are re-read cell by cell); the rest is split here.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from runlens.io.reader import layout
from runlens.io.reader.chosen import with_signal
from runlens.io.reader.source import decode
from runlens.io.reader.table import MAX_COLUMNS, Table
from runlens.io.reader.values import parse

_DELIMS = ("\t", ",", ";", " ")  # pipe tables are Markdown: runlens.io.importers.markdown reads them
_MARK = ("<<<<<<<", "=======", ">>>>>>>")
_COUNTER = re.compile(r"^\s*(\d+)\s*/\s*\d+\s*$")
_RULE = re.compile(r"^[\s|:+-]+$")
# Known headerless layouts, named by their first cell and width: YOLOv5/YOLOv7 ``results.txt``.
_YOLO_TXT = ("epoch", "gpu_mem", "train/box_loss", "train/obj_loss", "train/cls_loss", "train/total_loss",
             "labels", "img_size", "metrics/precision", "metrics/recall", "metrics/mAP_0.5",
             "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss")


def split(line: str, delim: str) -> list[str]:
    if delim == " ":
        return line.split()
    if delim == "|":
        s = line.strip()
        return [c.strip() for c in s.strip("|").split("|")]
    return next(csv.reader([line], delimiter=delim, skipinitialspace=True), [])


def sniff(lines: list[str]) -> tuple[str, int] | None:
    """``(delimiter, width)`` of the table the lines hold, or None when they are not one.

    Lines above the table (the call that printed it, a banner: :func:`layout.start`) are not held
    against it.
    """
    rows = [ln for ln in lines[:200] if ln.strip() and not ln.lstrip().startswith("#") and not ln.startswith(_MARK)]
    if len(rows) < 2:
        return None
    for delim in _DELIMS:
        if delim == " " and sum("|" in r for r in rows) >= 0.8 * len(rows):
            return None  # cells between pipes, outer pipes or not: a Markdown table, not a spaced one
        if delim != " ":
            at = next((i for i, r in enumerate(rows) if delim in r), len(rows))
            if sum(delim in r for r in rows[at:]) < 0.8 * len(rows[at:]):
                continue
        found = _width(rows, delim)
        if found is not None:
            return delim, found
    return None


def _width(rows: list[str], delim: str) -> int | None:
    cells = [split(_row(r, delim), delim) for r in rows if not _RULE.match(r)]
    widths = [len(c) for c in cells]
    if not widths:
        return None
    width = max(set(widths), key=widths.count)
    numeric = [_numeric_share(c) >= 0.5 for c in cells]
    at = layout.start(cells, numeric, width)
    widths, numeric = widths[at:], numeric[at:]
    n_numeric = sum(numeric[1:40])
    if width >= 2 and widths.count(width) >= 0.8 * len(widths) and n_numeric >= 0.5 * min(len(widths) - 1, 39) \
            and len(widths) >= 2:
        return width
    return None


def _row(line: str, delim: str) -> str:
    return layout.untail(line) if delim == " " else line


def _numeric_share(cells: list[str]) -> float:
    """The share of numbers among the cells that hold anything (Lightning rows are mostly empty)."""
    full = [c for c in cells if c.strip() and c.strip() not in ("_", "-")]
    if not full:
        return 0.0
    return sum(_cell(c) is not None for c in full) / len(full)


def _cell(text: str) -> float | None:
    v = parse(text)
    if v is None and "/" in text and (m := _COUNTER.match(text)):
        return float(m.group(1))
    return v


def resolve_conflict(lines: list[str], side: str | None) -> tuple[list[str], str | None]:
    """The lines of one side of git merge-conflict markers (default: ``theirs``, the last) and a note.

    A file holding markers carries two versions of the log; reading both would splice two runs into one curve.
    """
    marks = [i for i, ln in enumerate(lines) if ln.startswith(_MARK)]
    if not marks:
        return lines, None
    side = side or "theirs"
    keep, state = [], "common"
    for ln in lines:
        if ln.startswith(_MARK):
            state = {"<": "ours", "=": "theirs", ">": "common"}[ln[0]]
            continue
        if state in ("common", side):
            keep.append(ln)
    other = "ours" if side == "theirs" else "theirs"
    note = (f"git merge-conflict markers at lines {', '.join(str(i + 1) for i in marks)}: read the {side!r} side; "
            f"--conflict {other} reads the other")
    return keep, note


def read(text_lines: Iterable[str], delim: str, width: int, conflict: str | None = None) -> Table:
    """The table held by ``text_lines`` split on ``delim`` (``width`` cells a row)."""
    lines, note = resolve_conflict(list(text_lines), conflict)
    blocks = layout.Blocks(width)
    remark: list[str] | None = None
    for line in lines:
        if not line.strip() or _RULE.match(line):
            continue
        if line.lstrip().startswith("#"):
            remark = split(_row(line.lstrip()[1:], delim), delim)
            continue
        cells = split(_row(line, delim), delim)
        if _numeric_share(cells) < 0.5:
            blocks.name_row([c.strip().strip("\"'") for c in cells])
            remark = None
            continue
        if remark is not None and not blocks.rows and not blocks.names and len(remark) == width \
                and layout.all_names(remark):
            # A header commented out, right above the first row (numpy.savetxt's, DeePMD's lcurve.out,
            # gnuplot data): the only names the table has.
            blocks.name_row([c.strip().strip("\"'") for c in remark])
        remark = None
        nums = [_cell(c) for c in cells]
        if any(v is not None for v in nums):
            blocks.data_row(cells, nums)
    if delim == " ":
        _realign(blocks, lines)
    table = _chosen(blocks)
    if note:
        table.notes.append(note)
    return table


def _realign(blocks: layout.Blocks, lines: list[str]) -> None:
    """Each header of a space-aligned table not one word a column cut by where its columns lie."""
    for header in [h for h in blocks.rows if h is not None and len(h) != blocks.width]:
        at = next((i for i, ln in enumerate(lines) if [c.strip("\"'") for c in split(ln, " ")] == list(header)), None)
        rows = blocks.rows[header]
        if len(header) == blocks.width - 1 and all(r[-1] is None for r in rows):
            # One name short, and the last cell of every row holds no number (fastai v1's ``(00:13)``
            # after each epoch): the names are the leading cells', in order, however they are padded.
            names: list[str] | None = [*header, ""]
        else:
            names = layout.aligned(lines[at], lines[at + 1:at + 60], blocks.width) if at is not None else None
        rows = blocks.rows.pop(header)
        # A line of words that no column lines up under (a sentence above the log: "The cost after
        # iteration 100 dropped, as expected.") names nothing: its rows stay unnamed, where they would
        # take the sentence's first words as names, one column's numbers under another's word.
        blocks.rows.setdefault(tuple(names) if names is not None else None, []).extend(rows)


def _chosen(blocks: layout.Blocks) -> Table:
    """The table of the paste: of several under different headers, the one holding a training signal
    (the most rows among them); the others are named in a note."""
    tables = {h: _table(list(h) if h is not None else _default_names(blocks.width), rows,
                        "delimited" if h is not None else "delimited, no header") for h, rows in blocks.rows.items()}
    if len(tables) <= 1:
        return next(iter(tables.values()), _table(_default_names(blocks.width), [], "delimited, no header"))
    return with_signal(tables, lambda h: ", ".join(h or ("no header",)))


def _default_names(width: int) -> list[str]:
    if width in (len(_YOLO_TXT), len(_YOLO_TXT) + 1):
        return list(_YOLO_TXT) + ["column_16"][: width - len(_YOLO_TXT)]
    return [f"column_{i + 1}" for i in range(width)]


def _table(names: list[str], rows: list[list[float | None]], shape: str) -> Table:
    names = _unique([n or f"column_{i + 1}" for i, n in enumerate(names)])[:MAX_COLUMNS]
    values, present = {}, {}
    n = len(rows)
    for j, name in enumerate(names):
        col = [r[j] if j < len(r) else None for r in rows]
        mask = np.array([v is not None for v in col], dtype=bool)
        values[name] = np.array([np.nan if v is None else v for v in col], dtype=np.float64)
        present[name] = mask
    return Table(n, values, present, shape)


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}_{k + 1}")
    return out


def read_fast(source: str | io.BytesIO, delim: str) -> Table | None:
    """A headed comma/tab/semicolon table through pyarrow; None when pyarrow cannot read it."""
    try:
        data = pacsv.read_csv(source, parse_options=pacsv.ParseOptions(delimiter=delim),
                              convert_options=pacsv.ConvertOptions(strings_can_be_null=True,
                                                                   null_values=["", "_", "-", "null", "None"]),
                              read_options=pacsv.ReadOptions(block_size=1 << 22))
    except (pa.ArrowInvalid, OSError, ValueError):
        return None
    if data.num_columns > MAX_COLUMNS or data.num_columns < 2:
        return None
    values, present = {}, {}
    for name, col in zip(_unique([n.strip() for n in data.column_names]), data.columns, strict=True):
        arr, mask = _column(col)
        if mask.any():
            values[name], present[name] = arr, mask
    return Table(data.num_rows, values, present, "delimited")


def _column(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_null(col.type):
        arr = col.cast(pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        mask = ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        return np.where(mask, arr, np.nan), mask
    cells = [_cell(c) if isinstance(c, str) else None for c in col.to_pylist()]
    mask = np.array([v is not None for v in cells], dtype=bool)
    return np.array([np.nan if v is None else v for v in cells], dtype=np.float64), mask


def read_text(text: str, delim: str, width: int, conflict: str | None = None) -> Table:
    """:func:`read_fast` for a clean headed table, else the cell-by-cell reader."""
    if _headed(text[:_HEAD_CHARS], delim) and "\n=======" not in text:
        fast = read_fast(io.BytesIO(text.encode("utf-8")), delim)
        if fast is not None:
            return fast
    return read(text.splitlines(), delim, width, conflict)


def read_data(data: bytes, delim: str, width: int, conflict: str | None = None) -> Table:
    """:func:`read_text` of the file's bytes: a clean headed UTF-8 table goes to pyarrow as it is
    (no decoding to text and encoding back, no list of a million lines)."""
    raw = data
    while raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    if raw[:2] not in (b"\xff\xfe", b"\xfe\xff") and b"\n=======" not in raw \
            and _headed(decode(raw[:_HEAD_CHARS]), delim):
        fast = read_fast(io.BytesIO(raw), delim)
        if fast is not None:
            return fast
    return read_text(decode(data), delim, width, conflict)  # bad bytes replaced first, as before


_BOM = b"\xef\xbb\xbf"
_HEAD_CHARS = 1 << 16


def _headed(head: str, delim: str) -> bool:
    """Whether the table is pyarrow's to read: a comma/tab/semicolon table whose first row is a header."""
    if delim not in (",", "\t", ";"):
        return False
    lines = [ln for ln in head.splitlines()[:6] if ln.strip()]
    if len(lines) < 2:
        return False
    first, second = split(lines[0], delim), split(lines[1], delim)
    # A header as wide as the row under it: a line above the header (a banner, a progress line) is
    # the cell-by-cell reader's to drop.
    return _numeric_share(first) < 0.5 and len(first) == len(second)


def read_parquet(path: str | os.PathLike[str]) -> Table:
    """A Parquet table of metrics (a pandas dump): its numeric columns."""
    import pyarrow.parquet as pq

    try:
        data = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        from runlens.errors import ImportFailedError

        raise ImportFailedError(f"{path}: not a readable Parquet file ({exc})") from None
    values, present = {}, {}
    for name, col in list(zip(data.column_names, data.columns, strict=True))[:MAX_COLUMNS]:
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_string(col.type):
            arr, mask = _column(col)
            if mask.any():
                values[name], present[name] = arr, mask
    return Table(data.num_rows, values, present, "parquet")
