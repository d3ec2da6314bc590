"""JSON in the shapes training code writes it: found by structure, not by the trainer's name.

- a list of records (Chainer ``log``, ``[{"epoch": 1, "loss": ...}, ...]``);
- records nested under a key (``log_history`` of a ``trainer_state.json``,
  or any key whose value is a list of records);
- a dict of lists (Keras ``history.history``, hand-written histories with
  metadata beside the lists), the row being the index;
- JSON lines (detectron2, mmengine ``scalars.json``, DETR ``log.txt``,
  LLaMA-Factory ``trainer_log.jsonl``, ``metrics.jsonl``); lines that are not
  JSON objects are skipped and counted.

Among several candidates in one document the one with the most numbers wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from runlens.io.bounded import loads_json
from runlens.io.reader.table import Records, Table, from_columns
from runlens.io.reader.values import number

_MAX_DEPTH = 4


def read_document(doc: object) -> Table | None:
    """The best table inside a parsed JSON document, or None when it holds no series."""
    best: tuple[int, Table] | None = None
    for table in _candidates(doc, 0):
        cells = sum(int(p.sum()) for p in table.present.values())
        if table.n >= 1 and cells and (best is None or cells > best[0]):
            best = (cells, table)
    if best is None:
        return None
    table = best[1]
    if isinstance(doc, dict):
        table.config = {k: v for k, v in doc.items() if isinstance(v, (str, int, float, bool)) and k != "log_history"}
    return table


def _candidates(doc: object, depth: int) -> Iterator[Table]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(doc, list):
        dicts = [r for r in doc if isinstance(r, dict)]
        if len(dicts) >= 1 and len(dicts) >= 0.5 * len(doc):
            rec = Records("json records")
            for r in dicts:
                rec.add(r)
            yield rec.table()
        return
    if not isinstance(doc, dict):
        return
    lists = {k: v for k, v in doc.items() if isinstance(v, list) and len(v) >= 2
             and sum(number(x) is not None for x in v[:50]) >= 0.5 * min(len(v), 50)}
    if lists:
        # Lists of one length belong together (the metrics); a list of another length is something else.
        lengths: dict[int, int] = {}
        for v in lists.values():
            lengths[len(v)] = lengths.get(len(v), 0) + 1
        n = max(lengths, key=lambda k: (lengths[k], k))
        yield from_columns({k: v for k, v in lists.items() if len(v) == n}, "json columns")
    for value in doc.values():
        if isinstance(value, (dict, list)):
            yield from _candidates(value, depth + 1)


def read_lines(lines: Iterable[str]) -> Table | None:
    """JSON lines: one object per line; None when fewer than half the non-blank lines are objects."""
    rec = Records("json lines")
    seen = bad = 0
    for raw in lines:
        s = raw.strip()
        if not s:
            continue
        seen += 1
        if not (s.startswith("{") and s.endswith("}")):
            bad += 1
            continue
        try:
            obj = loads_json(s)
        except ValueError:
            bad += 1
            continue
        if isinstance(obj, dict):
            rec.add(obj)
        else:
            bad += 1
    if not seen or rec.rows == 0 or bad > seen - bad:
        return None
    table = rec.table()
    if bad:
        table.notes.append(f"{bad} of {seen} lines are not JSON objects: skipped")
    return table
