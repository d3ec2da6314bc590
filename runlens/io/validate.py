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
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from runlens.io.bounded import (
    MAX_JSON_BYTES,
    MAX_PART_COLUMNS,
    MAX_PART_ROWS,
    loads_json,
    read_regular,
    special_kind,
)

RULES = {
    "layout": "a run is a directory holding run.json",
    "json": "run.json is a UTF-8 JSON object",
    "header": 'run.json "format" is "runlens-run" and "format_version" is 1',
    "meta-types": "run.json keys have the types the format lists",
    "timestamps": "timestamps are ISO-8601 strings with an offset, or null",
    "layers-meta": 'run.json "layers" lists objects with name/index/module/kind/shape/numel, '
                   "unique names, index 0..n-1",
    "attempts": 'run.json "attempts" has one entry per start, each with started_at and first_step',
    "error": '"error" is null or has type/message/traceback/step; a crashed run has one',
    "status": 'status is running, finished or crashed; a finished run has "ended_at"',
    "part-names": "parts are named r{rank}-{seq:08d}.parquet, one file per rank and seq",
    "part-readable": "every part with a final name can be read",
    "columns": "required columns are present and have their types",
    "extra-columns": "extra scalars/evals columns are int64 or float64",
    "steps": "step columns hold no null",
    "event-kinds": "events.kind is one of nonfinite_loss, nonfinite_grad, grad_norm_spike, "
                   "loss_spike, exception, user",
    "layer-names": 'every layers.layer value is a name listed in run.json "layers"',
}

PART = re.compile(r"^r(\d+)-(\d{8})\.parquet$")
STATUSES = ("running", "finished", "crashed")
EVENT_KINDS = {"nonfinite_loss", "nonfinite_grad", "grad_norm_spike", "loss_spike", "exception", "user"}
STRING = "string"
# table -> {column: (allowed arrow type names, required)}
TABLES = {
    "scalars": {"step": ({"int64"}, True), "time": ({"float64"}, True), "loss": ({"float64"}, True),
                "lr": ({"float64"}, False), "grad_norm": ({"float64"}, False),
                "epoch": ({"int64"}, False), "loss_scale": ({"float64"}, False),
                "step_skipped": ({"int64"}, False)},
    "evals": {"step": ({"int64"}, True), "time": ({"float64"}, True), "val_loss": ({"float64"}, True)},
    "layers": {"step": ({"int64"}, True), "layer": (STRING, True), "grad_norm": ({"float32"}, True),
               "weight_norm": ({"float32"}, True), "update_norm": ({"float32"}, False),
               "grad_abs_max": ({"float32"}, False), "grad_zero_frac": ({"float32"}, False),
               "nonfinite": ({"int32"}, False)},
    "events": {"step": ({"int64"}, True), "time": ({"float64"}, True), "kind": (STRING, True),
               "layer": (STRING, True), "value": ({"float64"}, True), "message": (STRING, True)},
}
OPEN_TABLES = {"scalars", "evals"}
ARROW_WORDS = {"double": "float64", "float": "float32", "halffloat": "float16"}
EXTRA_TYPES = {"int64", "float64", "int32", "float32"}
META_TYPES = [("run_id", str), ("name", str), ("status", str), ("host", str), ("pid", int),
              ("config", dict), ("environment", dict), ("layers", list), ("attempts", list)]
LAYER_KEYS = [("name", str), ("index", int), ("module", str), ("kind", str), ("shape", list),
              ("numel", int)]
TYPE_WORDS = {str: "a string", int: "an integer", dict: "an object", list: "a list"}


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
    layer_names = set()
    if isinstance(meta, dict) and isinstance(meta.get("layers"), list):
        layer_names = {lay.get("name") for lay in meta["layers"] if isinstance(lay, dict)}
    for table, spec in TABLES.items():
        _check_table(run / table, table, spec, layer_names, report)
    return report


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_kind(value, kind) -> bool:
    return _is_int(value) if kind is int else isinstance(value, kind)


def _iso_or_null(value) -> bool:
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
    if meta.get("format") != "runlens-run":
        out.append(Violation("header", "run.json format", f"is {meta.get('format')!r}, not 'runlens-run'"))
    if meta.get("format_version") != 1 or isinstance(meta.get("format_version"), bool):
        out.append(Violation("header", "run.json format_version", f"is {meta.get('format_version')!r}, not 1"))
    _check_meta_types(meta, out)
    _check_layers_meta(meta.get("layers"), out)
    _check_attempts_and_status(meta, out)
    return meta


def _check_meta_types(meta: dict, out: list[Violation]) -> None:
    for key, kind in META_TYPES:
        if not _is_kind(meta.get(key), kind):
            out.append(Violation("meta-types", f"run.json {key}",
                                 f"is {_show(meta, key)}, want {TYPE_WORDS[kind]}"))
    for key in ("flush_every", "flush_seconds"):
        value = meta.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            out.append(Violation("meta-types", f"run.json {key}", f"is {_show(meta, key)}, want a number"))
    if "seed" not in meta or not (meta["seed"] is None or _is_int(meta["seed"])):
        out.append(Violation("meta-types", "run.json seed", f"is {_show(meta, 'seed')}, want an integer or null"))
    for key in ("started_at", "ended_at", "heartbeat_at"):
        if key not in meta or not _iso_or_null(meta[key]):
            out.append(Violation("timestamps", f"run.json {key}", f"is {_show(meta, key)}"))
    env = meta.get("environment")
    if isinstance(env, dict) and "python" not in env:
        out.append(Violation("meta-types", "run.json environment", 'has no "python"'))


def _show(meta: dict, key: str) -> str:
    if key not in meta:
        return "missing"
    text = json.dumps(meta[key])
    return text if len(text) <= 40 else text[:37] + "..."


def _check_layers_meta(layers, out: list[Violation]) -> None:
    if not isinstance(layers, list):
        return
    names, indices = set(), []
    for i, layer in enumerate(layers):
        where = f"run.json layers[{i}]"
        if not isinstance(layer, dict):
            out.append(Violation("layers-meta", where, "is not an object"))
            continue
        for key, kind in LAYER_KEYS:
            if not _is_kind(layer.get(key), kind):
                out.append(Violation("layers-meta", f"{where}.{key}",
                                     f"is {_show(layer, key)}, want {TYPE_WORDS[kind]}"))
        if layer.get("name") in names:
            out.append(Violation("layers-meta", where, f"repeats the name {layer.get('name')!r}"))
        names.add(layer.get("name"))
        indices.append(layer.get("index"))
    if indices and sorted(i for i in indices if _is_int(i)) != list(range(len(indices))):
        out.append(Violation("layers-meta", "run.json layers", "index values are not 0..n-1"))


def _check_attempts_and_status(meta: dict, out: list[Violation]) -> None:
    attempts = meta.get("attempts") if isinstance(meta.get("attempts"), list) else []
    if not attempts:
        out.append(Violation("attempts", "run.json attempts", "is empty (the first start counts)"))
    for i, attempt in enumerate(attempts):
        if not isinstance(attempt, dict) or not _iso_or_null(attempt.get("started_at")) \
                or "first_step" not in attempt:
            out.append(Violation("attempts", f"run.json attempts[{i}]", "lacks started_at or first_step"))
    err = meta.get("error")
    if err is not None and not (isinstance(err, dict)
                                and all(k in err for k in ("type", "message", "traceback", "step"))):
        out.append(Violation("error", "run.json error", "lacks type, message, traceback or step"))
    status = meta.get("status")
    if status not in STATUSES:
        out.append(Violation("status", "run.json status", f"{status!r} is not one of {', '.join(STATUSES)}"))
    if status == "crashed" and not err:
        out.append(Violation("error", "run.json error", 'is null but status is "crashed"'))
    if status == "finished" and not meta.get("ended_at"):
        out.append(Violation("status", "run.json ended_at", 'is null but status is "finished"'))


def _check_table(folder: Path, table: str, spec: dict, layer_names: set, report: Report) -> None:
    if not folder.is_dir():
        return
    seen: dict[tuple[int, int], str] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        where = f"{table}/{printable(path.name)}"
        match = PART.match(path.name)
        if not match:
            report.notes.append(f"{where}: not a part name (readers ignore it)")
            continue
        key = (int(match.group(1)), int(match.group(2)))
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
    for col, (types, required) in spec.items():
        if col not in schema.names:
            if required:
                out.append(Violation("columns", where, f"has no column {col!r}"))
            continue
        name = _type_name(schema.field(col).type)
        if not (name == STRING if types == STRING else name in types):
            want = STRING if types == STRING else "/".join(sorted(types))
            out.append(Violation("columns", where, f"column {col!r} is {name}, want {want}"))
    for col in schema.names:
        if col in spec:
            continue
        name = _type_name(schema.field(col).type)
        if table not in OPEN_TABLES:
            report.notes.append(f"{where}: extra column {col!r} (readers ignore it)")
        elif name not in EXTRA_TYPES:
            out.append(Violation("extra-columns", where, f"column {col!r} is {name}, want int64 or float64"))
    if "step" in schema.names and data.column("step").null_count:
        out.append(Violation("steps", where, f"{data.column('step').null_count} null steps"))
    if table == "events" and "kind" in schema.names:
        unknown = set(data.column("kind").to_pylist()) - EVENT_KINDS
        if unknown:
            out.append(Violation("event-kinds", where, f"unknown kinds {sorted(map(str, unknown))}"))
    if table == "layers" and "layer" in schema.names and layer_names:
        unknown = set(data.column("layer").to_pylist()) - layer_names
        if unknown:
            out.append(Violation("layer-names", where,
                                 f"layers not in run.json: {sorted(map(str, unknown))[:5]}"))


class _Refused(Exception):
    """A path that is not a regular file, or too large: refused before it is read."""


def _bounded_part(path: Path, read_part):
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


def _type_name(typ) -> str:
    """Arrow type -> the word used in RULES; dictionary-encoded strings count as strings."""
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_null(typ):
        return STRING
    return ARROW_WORDS.get(str(typ), str(typ))
