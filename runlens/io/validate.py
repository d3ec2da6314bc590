"""Check a run directory against run-log format v1 (docs/format.md), rule by rule.

``validate_run(path)`` returns the violations of the format's MUSTs, each
naming the rule it breaks, plus notes (things readers ignore, not errors).
It needs only pyarrow, so a recorder written for another framework can be
checked with ``runlens validate RUN`` before anyone analyzes its logs.

The rules (ids shown in every message, described in docs/format.md):

    layout          the run is a directory holding run.json
    json            run.json is a UTF-8 JSON object
    header          ``format`` is "runlens-run" and ``format_version`` is 1
    meta-types      every run.json key has the type the format's table gives it
    timestamps      ISO-8601 strings or null
    layers-meta     run.json ``layers``: objects with the six keys, unique names, index 0..n-1
    attempts        at least one attempt, each with started_at and first_step
    error           ``error`` is null or has type/message/traceback/step; crashed runs have one
    status          status is running/finished/crashed; finished runs have ended_at
    part-names      a table part is named r{rank}-{seq:08d}.parquet, one per (rank, seq)
    part-readable   a part that is not hidden can be read by pyarrow
    columns         required columns are present with their types
    extra-columns   extra scalars/evals columns are int64 or float64
    steps           no null step
    event-kinds     events.kind is one of the six kinds
    layer-names     every layers.layer is named in run.json ``layers``
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from recorders import format as fmt
from runlens.io.bounded import (
    MAX_JSON_BYTES,
    MAX_PART_COLUMNS,
    MAX_PART_ROWS,
    loads_json,
    read_regular,
    special_kind,
)

if TYPE_CHECKING:
    import pyarrow as pa

ARROW_WORDS = {"double": "float64", "float": "float32", "halffloat": "float16"}

RULES = {
    "layout": "a run is a directory holding run.json",
    "json": "run.json is a UTF-8 JSON object",
    "header": f'run.json "format" is "{fmt.FORMAT}" and "format_version" is {fmt.FORMAT_VERSION}',
    "meta-types": "run.json keys have the types the format lists",
    "timestamps": "timestamps are ISO-8601 strings with an offset, or null",
    "layers-meta": f'run.json "layers" lists objects with {"/".join(fmt.RUN_LAYER_FIELDS)}, '
                   "unique names, index 0..n-1",
    "attempts": 'run.json "attempts" has one entry per start, each with started_at and first_step',
    "error": '"error" is null or has type/message/traceback/step; a crashed run has one',
    "status": f'status is {", ".join(fmt.RUN_STATUS_NAMES[:-1])} or {fmt.RUN_STATUS_NAMES[-1]}; '
              'a finished run has "ended_at"',
    "part-names": "parts are named r{rank}-{seq:08d}.parquet, one file per rank and seq",
    "part-readable": "every part with a final name can be read",
    "columns": "required columns are present and have their types",
    "extra-columns": f"extra {'/'.join(t for t in fmt.TABLES if t in fmt.OPEN_TABLES)} columns are "
                     f"{' or '.join(ARROW_WORDS.get(str(t), str(t)) for t in fmt.USER_COLUMN_TYPES)}",
    "steps": "step columns, and the other columns of a table's key (layers.layer), hold no null",
    "event-kinds": f"events.kind is one of {', '.join(fmt.EVENT_KIND_NAMES)}",
    "layer-names": 'every layers.layer value is a name listed in run.json "layers"',
}

STRING = "string"
KIND_WORDS = {"str": "a string", "int": "an integer", "number": "a number", "object": "an object",
              "list": "a list"}


def table_specs() -> dict[str, dict[str, tuple[str, bool]]]:
    """table -> {column: (type word, required)}, read from the format module when called, so the
    validator checks what ``recorders.format`` says and nothing of its own."""
    return {table: {col: (_type_name(typ), col in fmt.REQUIRED[table]) for col, typ in fields.items()}
            for table, fields in fmt.FIELDS.items()}


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` is a key of RULES, ``where`` the file or key involved."""

    rule: str
    where: str
    message: str

    def line(self) -> str:
        # A message may quote a path or a value from the run (a pyarrow error names the file).
        return printable(f"{self.where}: {self.message} [rule {self.rule}: {RULES[self.rule]}]")


@dataclass
class Report:
    """What ``validate_run`` found in one run."""

    run: str
    violations: list[Violation]
    notes: list[str]

    @property
    def ok(self) -> bool:
        return not self.violations


def validate_run(path: str | Path) -> Report:
    """Every violation of format v1 in the run directory ``path`` (none: it conforms)."""
    run = Path(path)
    report = Report(str(path), [], [])
    if not run.is_dir():
        report.violations.append(Violation("layout", str(path), "not a directory"))
        return report
    meta = _check_meta(run, report.violations)
    layer_names: set[object] = set()
    if isinstance(meta, dict) and isinstance(meta.get("layers"), list):
        layer_names = {lay.get("name") for lay in meta["layers"] if isinstance(lay, dict)}
    for table, spec in table_specs().items():
        _check_table(run / table, table, spec, layer_names, report)
    return report


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_kind(value: object, kind: str) -> bool:
    """``value`` is of the format's ``kind`` (a key of KIND_WORDS); a bool is no number."""
    if kind in ("int", "number") and isinstance(value, bool):
        return False
    types: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "number": (int, float), "object": dict,
                                                 "list": list}
    return isinstance(value, types[kind])


def _iso_or_null(value: object) -> bool:
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _check_meta(run: Path, out: list[Violation]) -> dict | None:
    path = run / "run.json"
    if not os.path.lexists(path):
        out.append(Violation("layout", "run.json", "is missing"))
        return None
    try:
        meta = loads_json(read_regular(path, MAX_JSON_BYTES, _Refused).decode("utf-8"))
    except _Refused as exc:
        out.append(Violation("layout", "run.json", str(exc).partition(": ")[2]))
        return None
    except OSError as exc:
        out.append(Violation("layout", "run.json", f"cannot be read ({exc.strerror or exc})"))
        return None
    except (ValueError, UnicodeDecodeError) as exc:
        out.append(Violation("json", "run.json", f"is not valid UTF-8 JSON ({_one_line(exc)})"))
        return None
    if not isinstance(meta, dict):
        out.append(Violation("json", "run.json", f"holds a {type(meta).__name__}, not an object"))
        return None
    if meta.get("format") != fmt.FORMAT:
        out.append(Violation("header", "run.json format", f"is {meta.get('format')!r}, not {fmt.FORMAT!r}"))
    if meta.get("format_version") != fmt.FORMAT_VERSION or isinstance(meta.get("format_version"), bool):
        out.append(Violation("header", "run.json format_version",
                             f"is {meta.get('format_version')!r}, not {fmt.FORMAT_VERSION}"))
    _check_meta_types(meta, out)
    _check_layers_meta(meta.get("layers"), out)
    _check_attempts_and_status(meta, out)
    return meta


def _check_meta_types(meta: dict, out: list[Violation]) -> None:
    for key in fmt.RUN_REQUIRED:
        kind = fmt.RUN_FIELDS[key][0]
        if not _is_kind(meta.get(key), kind):
            out.append(Violation("meta-types", f"run.json {key}", f"is {_show(meta, key)}, want {KIND_WORDS[kind]}"))
    for key in fmt.RUN_PRESENT:
        if key in fmt.RUN_TIMESTAMPS:
            if key not in meta or not _iso_or_null(meta[key]):
                out.append(Violation("timestamps", f"run.json {key}", f"is {_show(meta, key)}"))
        elif key != "error" and (key not in meta or not (meta[key] is None
                                                         or _is_kind(meta[key], fmt.RUN_FIELDS[key][0]))):
            # "error" has a rule of its own (see _check_attempts_and_status).
            want = KIND_WORDS[fmt.RUN_FIELDS[key][0]]
            out.append(Violation("meta-types", f"run.json {key}", f"is {_show(meta, key)}, want {want} or null"))
    env = meta.get("environment")
    for key in fmt.RUN_ENVIRONMENT_REQUIRED:
        if isinstance(env, dict) and key not in env:
            out.append(Violation("meta-types", "run.json environment", f'has no "{key}"'))


def _show(meta: dict, key: str) -> str:
    if key not in meta:
        return "missing"
    text = json.dumps(meta[key])
    return text if len(text) <= 40 else text[:37] + "..."


def _check_layers_meta(layers: object, out: list[Violation]) -> None:
    if not isinstance(layers, list):
        return
    names, indices = set(), []
    for i, layer in enumerate(layers):
        where = f"run.json layers[{i}]"
        if not isinstance(layer, dict):
            out.append(Violation("layers-meta", where, "is not an object"))
            continue
        for key, (kind, _nested) in fmt.RUN_LAYER_FIELDS.items():
            if not _is_kind(layer.get(key), kind):
                out.append(Violation("layers-meta", f"{where}.{key}",
                                     f"is {_show(layer, key)}, want {KIND_WORDS[kind]}"))
        if layer.get("name") in names:
            out.append(Violation("layers-meta", where, f"repeats the name {layer.get('name')!r}"))
        names.add(layer.get("name"))
        indices.append(layer.get("index"))
    if indices and sorted(i for i in indices if _is_int(i)) != list(range(len(indices))):
        out.append(Violation("layers-meta", "run.json layers", "index values are not 0..n-1"))


def _check_attempts_and_status(meta: dict, out: list[Violation]) -> None:
    given = meta.get("attempts")
    attempts = given if isinstance(given, list) else []
    if not attempts:
        out.append(Violation("attempts", "run.json attempts", "is empty (the first start counts)"))
    for i, attempt in enumerate(attempts):
        # started_at is also a timestamp: present and ISO-8601 or null.
        if not isinstance(attempt, dict) or not _iso_or_null(attempt.get("started_at")) \
                or any(key not in attempt for key in fmt.RUN_ATTEMPT_REQUIRED):
            out.append(Violation("attempts", f"run.json attempts[{i}]",
                                 f"lacks {' or '.join(fmt.RUN_ATTEMPT_REQUIRED)}"))
    err = meta.get("error")
    if err is not None and not (isinstance(err, dict) and all(k in err for k in fmt.RUN_ERROR_FIELDS)):
        keys = list(fmt.RUN_ERROR_FIELDS)
        out.append(Violation("error", "run.json error", f"lacks {', '.join(keys[:-1])} or {keys[-1]}"))
    status = meta.get("status")
    if status not in fmt.RUN_STATUSES:
        out.append(Violation("status", "run.json status",
                             f"{status!r} is not one of {', '.join(fmt.RUN_STATUS_NAMES)}"))
    if status == "crashed" and not err:
        out.append(Violation("error", "run.json error", 'is null but status is "crashed"'))
    if status == "finished" and not meta.get("ended_at"):
        out.append(Violation("status", "run.json ended_at", 'is null but status is "finished"'))


def _check_table(folder: Path, table: str, spec: dict[str, Any], layer_names: set[object], report: Report) -> None:
    if not folder.is_dir():
        return
    seen: dict[tuple[int, int], str] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        where = f"{table}/{printable(path.name)}"
        key = fmt.parse_part_name(path.name)
        if key is None:
            report.notes.append(f"{where}: not a part name (readers ignore it)")
            continue
        if key in seen:
            report.violations.append(Violation(
                "part-names", where, f"rank {key[0]} seq {key[1]} is also in {seen[key]}"))
        seen[key] = path.name
        _check_part(path, where, table, spec, layer_names, report)


def _check_part(path: Path, where: str, table: str, spec: dict, layer_names: set, report: Report) -> None:
    from recorders.merge import read_part  # opens by bytes: a non-UTF-8 run directory reads too

    out = report.violations
    try:
        data = _bounded_part(path, read_part)
    except Exception as exc:  # noqa: BLE001 - whatever pyarrow raises, the part is unreadable
        out.append(Violation("part-readable", where, f"cannot be read ({_one_line(exc)})"))
        return
    schema = data.schema
    types: dict[str, str] = {}
    for field in schema:
        if field.name in types:  # schema.field(name) raises on a repeated name
            out.append(Violation("columns", where, f"column {field.name!r} appears more than once"))
        types.setdefault(field.name, _type_name(field.type))
    for col, (want, required) in spec.items():
        if col not in types:
            if required:
                out.append(Violation("columns", where, f"has no column {col!r}"))
        elif types[col] != want:
            out.append(Violation("columns", where, f"column {col!r} is {types[col]}, want {want}"))
    extra_types = [_type_name(typ) for typ in fmt.USER_COLUMN_TYPES]
    tolerated = {*extra_types, *(_type_name(typ) for typ in fmt.USER_COLUMN_NARROW_TYPES)}
    for col, name in types.items():
        if col in spec:
            continue
        if table not in fmt.OPEN_TABLES:
            report.notes.append(f"{where}: extra column {col!r} (readers ignore it)")
        elif name not in tolerated:
            out.append(Violation("extra-columns", where, f"column {col!r} is {name}, want {' or '.join(extra_types)}"))
    for col in dict.fromkeys(("step", *(fmt.KEYS[table] or ()))):
        nulls = _first_column(data, col).null_count if col in types else 0
        if nulls:
            out.append(Violation("steps", where, f"{nulls} null steps" if col == "step" else f"{nulls} null {col}s"))
    if table == "events" and "kind" in schema.names:
        unknown = set(_first_column(data, "kind").to_pylist()) - fmt.EVENT_KINDS
        if unknown:
            out.append(Violation("event-kinds", where, f"unknown kinds {sorted(map(str, unknown))}"))
    if table == "layers" and "layer" in schema.names and layer_names:
        unknown = set(_first_column(data, "layer").to_pylist()) - layer_names
        if unknown:
            out.append(Violation("layer-names", where,
                                 f"layers not in run.json: {sorted(map(str, unknown))[:5]}"))


def _first_column(data: pa.Table, name: str) -> pa.ChunkedArray:
    """The first column called ``name`` (``Table.column(name)`` raises on a repeated name)."""
    return data.column(data.schema.names.index(name))


class _Refused(Exception):
    """A path that is not a regular file, or too large: refused before it is read."""


def _bounded_part(path: Path, read_part: Callable[..., pa.Table]) -> pa.Table:
    """The part at ``path``, refused unread when it is not a regular file (a FIFO would block
    forever) or has too many columns, and refused while decoding once it holds more rows than a
    reader decodes (``read_part`` counts them batch by batch: a footer can understate them)."""
    import pyarrow.parquet as pq

    from recorders.merge import TooManyRows, open_input

    kind = special_kind(os.stat(path).st_mode)
    if kind is not None:
        raise _Refused(f"it is {kind}, not a regular file")
    with open_input(path) as f:
        meta = pq.ParquetFile(f).metadata
    if meta.num_columns > MAX_PART_COLUMNS:
        raise _Refused(f"{meta.num_columns:,} columns, more than the {MAX_PART_COLUMNS:,} a reader reads")
    try:
        return read_part(path, max_rows=MAX_PART_ROWS)
    except TooManyRows as exc:
        raise _Refused(str(exc)) from None


def printable(text: str) -> str:
    """``text`` with control, bidi and unencodable characters as visible escapes: a file name goes
    into every line ``validate`` prints, and must not drive the terminal."""
    return "".join(ch if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF
                   and not 0x202A <= ord(ch) <= 0x202E and not 0x2066 <= ord(ch) <= 0x2069
                   else ch.encode("unicode_escape", "backslashreplace").decode("ascii") for ch in text)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _type_name(typ: pa.DataType) -> str:
    """Arrow type -> the word used in RULES; dictionary-encoded strings count as strings."""
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_null(typ):
        return STRING
    return ARROW_WORDS.get(str(typ), str(typ))
