"""One reader that goes by structure: any log becomes named numeric series over an index.

:func:`read_table` finds the shape of a file (a JSON document or a Python
literal, JSON lines, a YAML list of records, a delimited or pipe table, a
long table pivoted, a TensorBoard scalar download named by its file, header
lines and the rows under them among other output) and
reads it into a :class:`~.table.Table`;
:mod:`.roles` decides which column is which and says why; :mod:`.build`
turns that into the importers' series, with the log's own step numbers.
Text console logs are read line by line by :mod:`runlens.io.importers.text`
and Trainer console dicts by :mod:`runlens.io.importers.hf`; tracker folders
by their own modules, whose series go through the same role names.
"""

from __future__ import annotations

import re
from pathlib import Path

from runlens.errors import ImportFailedError
from runlens.io.bounded import loads_json
from runlens.io.reader import (
    blocks,
    delimited,
    headed,
    jsonshape,
    pyliteral,
    scalars,
    sequence,
    tidy,
    yamlshape,
)
from runlens.io.reader.source import MAX_JSON, check_regular, decode, head_bytes, read_all
from runlens.io.reader.table import Table

__all__ = ["read_table", "shape_of"]


def shape_of(head: bytes) -> str | None:
    """``parquet``, ``json``, ``jsonl``, ``sequence`` (numbers alone), ``yaml``, ``blocks``, ``delimited``
    or ``headed`` (header lines and the rows under them, other output between) for a file starting with
    ``head``; None otherwise."""
    if head[:4] == b"PAR1":
        return "parquet"
    if b"\x00" in head[:8192] and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    text = decode(head)
    s = text.lstrip()
    lines = text.splitlines()
    if len(head) >= 262_144 and lines:
        lines = lines[:-1]
    if (s.startswith("[") and _JSON_ARRAY.match(s)) or pyliteral.prompted(s):
        return "json"
    if s.startswith("{"):
        first, _, more = s.partition("\n")
        # One object on one line is a document (a Keras history dumped without indent), not JSON lines.
        one_line = len(head) < 262_144 and not more.strip()
        return "jsonl" if not one_line and first.strip().endswith("}") and _is_object(first.strip()) else "json"
    if sequence.read(lines) is not None:
        return "sequence"
    if yamlshape.looks(lines):
        return "yaml"
    if blocks.looks(lines):
        return "blocks"
    if delimited.sniff(lines) is not None:
        return "delimited"
    if headed.looks(lines):  # after the delimited tables: what one delimiter splits is read as before
        return "headed"
    return None


# A JSON array opens on a value; ``[60/60 07:12, Epoch 0/1]`` (a notebook's progress line above a
# table) or ``[1,  2000] loss:`` opens on a number followed by something no JSON value has.
_JSON_ARRAY = re.compile(r"\[\s*(?:[\[{\"\]]|-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?\s*[,\]]|true|false|null|NaN|-?Infinity)")


def _is_object(line: str) -> bool:
    try:
        return isinstance(loads_json(line), dict)
    except ValueError:
        return False


_LAST: list = []  # (key, table): sniffing and reading one file parse it once


def read_table(path: Path, conflict: str | None = None) -> Table | None:
    """The table held by the file at ``path``, or None when it is not a structured log.

    ``conflict`` picks the side of git merge-conflict markers in a delimited table (``ours`` or
    ``theirs``, the default).
    """
    st = check_regular(path)
    key = (str(path), st.st_mtime_ns, st.st_size, st.st_ino, conflict)
    if _LAST and _LAST[0][0] == key:
        return _LAST[0][1]
    table = _read_table(path, conflict)
    _LAST[:] = [(key, table)]
    return table


def _read_table(path: Path, conflict: str | None) -> Table | None:
    head = head_bytes(path)
    shape = shape_of(head)
    if shape is None:
        return None
    if shape == "parquet":
        return delimited.read_parquet(path)
    if shape == "json":
        text = decode(read_all(path, MAX_JSON))  # decoded once: each reading below is of the same text
        try:
            doc = loads_json(text)
        except ValueError:
            return _python_literal(text) or jsonshape.read_lines(text.splitlines()) or sequence.read(text.splitlines())
        except RecursionError:
            raise ImportFailedError(f"{path}: JSON nested too deeply to be a metrics log") from None
        return jsonshape.read_document(doc) or sequence.read(text.splitlines())
    data = read_all(path)
    if shape == "sequence":
        return sequence.read(decode(data).splitlines())
    if shape == "yaml":
        return yamlshape.read(decode(data).splitlines())
    if shape == "blocks":
        return blocks.read(decode(data).splitlines())
    if shape == "headed":
        return headed.read(decode(data).splitlines())
    if shape == "jsonl":
        return jsonshape.read_lines(decode(data).splitlines())
    lines = decode(head).splitlines()
    found = delimited.sniff(lines[:-1] if len(head) >= 262_144 else lines)  # a full window may cut its last line
    if found is None:
        return None
    table = scalars.named(delimited.read_data(data, *found, conflict), path)
    if sum(bool(p.any()) for p in table.present.values()) <= 3 and tidy.pivot(lines, found[0]) is not None:
        # A counter and one value (and a row number): a long table, its text cells naming the series.
        return tidy.pivot(decode(data).splitlines(), found[0]) or table
    return table


def _python_literal(text: str) -> Table | None:
    """The table of a history printed by Python (``{'loss': [0.9, nan]}``), or None when it is not one."""
    try:
        doc = pyliteral.loads(text)
    except ValueError:
        return None
    table = jsonshape.read_document(doc)
    if table is not None:
        table.shape = "Python literal"
    return table
