"""The work an audit does for each run, in whichever process runs it.

``analyze_chunk(paths, options)`` is what a local worker process or a Dask
worker executes: it gets paths (cheap to send), reads and analyzes each run
where it runs, and sends back one small record per run made of plain data
(the spec's JSON object, the summary numbers, the detector outcomes and the
seconds the analysis took). Runs, tables and diagnoses never cross a
process boundary.

A run that cannot be read, or whose analysis raises, becomes a record with
its error: one bad run never ends an audit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runlens.diagnosis import STATUSES, Finding
from runlens.errors import RunlensError, UsageError
from runlens.io.bounded import MAX_JSON_BYTES, loads_json, read_regular
from runlens.io.discover import is_url
from runlens.io.logruns import runs_in_log, without_split_note
from runlens.io.remote import open_run, open_runs

if TYPE_CHECKING:
    from runlens.diagnosis import Diagnosis
    from runlens.io.logruns import LogRuns
    from runlens.io.run import Run

# Baselines read in this process, by path (and the projection, by key): computed once per worker.
_CACHE: dict[Any, Any] = {}


@dataclass(frozen=True)
class WorkOptions:
    """What every run of one audit is checked with (picklable, small).

    ``detectors``: the parameters set away from their defaults, as
    ``((code, ((param, value), ...)), ...)``; plain data, so that a local
    process or a Dask worker builds the same detectors from it.
    """

    baseline: str | None = None
    reports_dir: str | None = None
    detectors: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

    @classmethod
    def with_params(cls, params: Mapping[str, Mapping[str, Any]] | None, **kw: Any) -> WorkOptions:
        """Options carrying detector ``params`` (``{code: {param: value}}``), in a canonical order."""
        packed = tuple(sorted((code, tuple(sorted(dict(values).items()))) for code, values in (params or {}).items()))
        return cls(detectors=packed, **kw)

    def detector_instances(self) -> list | None:
        """Every registered detector, those named built with their parameters; None for all defaults.

        Built once per process for one set of parameters. Raises
        :class:`UsageError` for an unknown code or a value a detector refuses.
        """
        if not self.detectors:
            return None
        key = ("detectors", self.detectors)
        if key not in _CACHE:
            _CACHE[key] = make_detectors({code: dict(values) for code, values in self.detectors})
        return _CACHE[key]


def make_detectors(params: Mapping[str, Mapping[str, Any]]) -> list:
    """Every registered detector, those in ``params`` built with them (UsageError when refused)."""
    from runlens.detectors import REGISTRY

    unknown = sorted(set(params) - set(REGISTRY))
    if unknown:
        raise UsageError(f"unknown detector code {unknown[0]!r}; 'runlens explain' lists them")
    out = []
    for code in sorted(REGISTRY):
        try:
            out.append(REGISTRY[code](**dict(params.get(code, {}))))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{code}: {exc}") from None
    return out


def analyze_chunk(paths: Sequence[str], options: WorkOptions = WorkOptions()) -> list[dict[str, Any]]:
    """The records of the paths, in the order given: one per run (see :func:`analyze_runs`)."""
    return [record for p in paths for record in analyze_runs(p, options)]


def analyze_runs(path: str, options: WorkOptions = WorkOptions()) -> list[dict[str, Any]]:
    """One record per run of ``path`` (see :func:`analyze_path`); never raises.

    A log whose importer told several runs apart (a step counter that starts
    again, a repeated banner, appended launches) gives one record per run,
    named ``PATH#run-K`` (``runlens analyze PATH --run K`` reads that run
    alone): each attempt is its own row with its own numbers, so a table of
    a thousand logs ranks and counts attempts, not files (docs/audit.md).
    A run of the log that cannot be read is an error row of its own.
    """
    with contextlib.ExitStack() as held:
        opened: list[LogRuns] = []
        counted: list[Run] = []

        def first_look() -> dict[str, Any]:
            runs = held.enter_context(_open(path, options))
            opened.append(runs)
            run = runs.run()
            n = runs_in_log(run.meta.get("config")) if runs.from_log else 1
            if n < 2:
                return _analyze(path, options, run)
            counted.append(run)  # the run read by default is one of the n: judged below as its own index
            return {"runs_in_log": n, "error": None}

        first = _recorded(path, first_look)
        n = first.pop("runs_in_log", 1)
        if n < 2:
            return [first]
        # The run built to count them goes first and is not built twice (LogRuns.in_turn).
        order = opened[0].in_turn(counted.pop(), n)

        def one(k: int) -> dict[str, Any]:
            # Built from the parse of the first look: the log is not read again for each run.
            return _analyze(path, options, opened[0].run(k), k, n)

        by_index = {k: _recorded(run_path(path, k), functools.partial(one, k)) for k in order}
    records = [by_index[k] for k in range(1, n + 1)]
    # The first look at the whole log is part of the cost (the benchmark sums the rows' seconds).
    records[0]["seconds"] += first["seconds"]
    records[0]["cpu_seconds"] += first["cpu_seconds"]
    return records


def analyze_path(path: str, options: WorkOptions = WorkOptions(), *, run: int | None = None,
                 of: int = 1) -> dict[str, Any]:
    """Read, analyze (and compare, and report on) one run; never raises.

    ``run``: the run of a log holding ``of`` runs (the importer's ``--run``);
    its record is named ``PATH#run-K``. Without it, a log found to hold
    several runs adds ``runs_in_log`` to the record (:func:`analyze_runs`
    then judges each).

    The record: ``object`` (the spec's analysis object), ``summary`` (the
    audit row's numbers), ``outcomes`` (``[code, state, reason]`` per
    detector), ``error`` (one line, or None), ``report`` (file name of the
    per-run report, or None), ``seconds`` and ``cpu_seconds`` (wall and CPU
    time spent on this run, for the benchmark's overhead figures).
    """
    def look() -> dict[str, Any]:
        with _open(path, options, run) as runs:
            return _analyze(path, options, runs.run(), run, of)

    return _recorded(path if run is None else run_path(path, run), look)


def _recorded(name: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The record ``work`` makes, or the error record of ``name`` when it raises; timed."""
    start, cpu = time.perf_counter(), time.process_time()
    try:
        record = work()
    except RunlensError as exc:  # the message alone: error lines name no exception classes
        record = error_record(name, _one_line(exc), "unreadable_run")
    except Exception as exc:  # noqa: BLE001 - a bug in a reader or detector: reported on this run's row
        record = error_record(name, _one_line(exc), "analysis_crashed", exception=type(exc).__name__)
    record["seconds"] = time.perf_counter() - start
    record["cpu_seconds"] = time.process_time() - cpu
    return record


def run_path(path: str, run: int) -> str:
    """The row name of run ``run`` of the log at ``path``."""
    return f"{path}#run-{run}"


def _open(path: str, options: WorkOptions, which: int | None = None) -> contextlib.AbstractContextManager[LogRuns]:
    # A report draws every chart, so it needs every column; the audit alone reads only what it uses.
    columns = None if options.reports_dir else _columns(options, options.detector_instances())
    return open_runs(path, columns=columns, import_options=None if which is None else {"run": which})


def _analyze(path: str, options: WorkOptions, run: Run, which: int | None = None, of: int = 1) -> dict[str, Any]:
    """The record of ``run``: run ``which`` of the ``of`` runs of the log at ``path``, or, with
    ``which`` None, the run read by default."""
    from runlens.analysis import analyze

    detectors = options.detector_instances()
    diagnosis = analyze(run, detectors=detectors) if detectors else analyze(run)
    if which is not None:
        note = (f"run {which} of {of} in this log, each audited as its own row; "
                f"`runlens analyze {path} --run {which}` reads it alone")
        # The note replaces the importer's own (which says which run it read and why): each row is
        # one run, whichever way it was built.
        diagnosis = dataclasses.replace(diagnosis, path=run_path(path, which),
                                        name=f"{diagnosis.name}#run-{which}",
                                        warnings=(note, *without_split_note(diagnosis.warnings,
                                                                            run.meta.get("config"))))
    if options.baseline:
        from runlens.compare import compare_runs

        extra = compare_runs(run, _baseline(options.baseline)).findings
        diagnosis = dataclasses.replace(diagnosis, findings=tuple(diagnosis.findings) + tuple(extra))
    report, obj = None, diagnosis.to_dict()
    if options.reports_dir:
        from runlens.io.output import OutputError

        try:
            report = _write_report(diagnosis, run, options.reports_dir)
        except OutputError as exc:  # a full disk must not hide the analysis that was done
            obj["warnings"].append(f"report not written: {exc}")
    return {
        "object": obj,
        "summary": summarize(diagnosis.key_numbers),
        "outcomes": [[o.code, o.state, o.reason] for o in diagnosis.outcomes],
        "error": None,
        "report": report,
    }


def _columns(options: WorkOptions, detectors: list | None = None) -> dict[str, list[str]]:
    """What the detectors (and a baseline comparison) read: the loader projects on it."""
    with_baseline = bool(options.baseline)
    key = ("columns", with_baseline, options.detectors)
    if key not in _CACHE:
        from runlens.analysis import projection
        from runlens.detectors import REGISTRY

        chosen = detectors or [REGISTRY[c]() for c in sorted(REGISTRY)]
        wanted = {t: list(c) for t, c in projection(chosen).items()}
        extra = {"scalars": ["time"]}
        if with_baseline:
            from runlens.compare import COLUMNS

            extra = {**COLUMNS, "scalars": COLUMNS["scalars"] + ["time"]}
        for table, cols in extra.items():
            wanted[table] = sorted(set(wanted.get(table, [])) | set(cols))
        _CACHE[key] = wanted
    return _CACHE[key]


def _baseline(path: str) -> Run:
    from runlens.compare import COLUMNS

    if path not in _CACHE:
        _CACHE[path] = open_run(path, columns=COLUMNS)
    return _CACHE[path]


# -- chunks ------------------------------------------------------------------

# Enough chunks per worker to balance uneven runs, few enough to keep scheduling cheap.
_CHUNKS_PER_WORKER = 4
_MAX_CHUNK = 32


def chunked(runs: Sequence[str], workers: int) -> list[list[str]]:
    """Split ``runs`` into chunks: a few per worker, none larger than ``_MAX_CHUNK``."""
    size = max(1, min(_MAX_CHUNK, math.ceil(len(runs) / (workers * _CHUNKS_PER_WORKER))))
    return [list(runs[i:i + size]) for i in range(0, len(runs), size)]


def collect(future: Any, chunk: Sequence[str]) -> list[dict]:
    """A finished chunk's records, or error records when its worker died."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - a worker killed (OOM, signal): those runs get error rows
        message = f"worker failed: {_one_line(exc)}"
        return [error_record(path, message, "analysis_crashed", exception=type(exc).__name__) for path in chunk]


# -- per-run numbers --------------------------------------------------------

def summarize(key_numbers: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of an audit row: the diagnosis's key numbers (``runlens.summary.run_numbers``,
    the one definition every command shows) under the audit's column names."""
    return {"final_loss": key_numbers["final_loss"], "best_loss": key_numbers["min_loss"],
            "best_val_loss": key_numbers["val_min"], "best_val_step": key_numbers["val_min_step"],
            "steps": key_numbers["steps"], "duration_s": key_numbers["duration_s"]}


# -- errors and reports -----------------------------------------------------

def error_record(path: str, message: str, code: str = "unreadable_run", *,
                 exception: str | None = None) -> dict[str, Any]:
    """The record of a run that could not be analyzed, spec-shaped.

    The object keeps the spec's keys: the error is an ``error`` finding
    (``unreadable_run`` or ``analysis_crashed``) and a warning; the status
    is run.json's when it can still be read, else ``crashed``; the curve is
    ``insufficient_data`` because no curve was read. ``message`` is the
    error's text alone; for a bug, the exception class goes to the
    evidence (``exception``), where a bug report needs it, not the row.
    """
    from runlens import codes

    title = codes.finding_title(code, message)
    evidence = {"error": message} if exception is None else {"error": message, "exception": exception}
    finding = Finding(code=code, severity=codes.severity(code), title=title, evidence=evidence,
                      advice=codes.advice(code))
    obj = {"run": path, "name": _name_of(path), "status": _status_of(path),
           "curve": "insufficient_data", "findings": [finding.to_dict()], "warnings": [message]}
    return {"object": obj, "summary": {}, "outcomes": [], "error": message, "report": None}


def _meta_of(path: str) -> dict[str, Any]:
    if is_url(path):
        return {}
    try:
        # The run was unreadable: its run.json may be a FIFO, /dev/zero or nested 100,000 deep.
        meta = loads_json(read_regular(os.path.join(path, "run.json"), MAX_JSON_BYTES, ValueError))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _name_of(path: str) -> str:
    name = _meta_of(path).get("name")
    if isinstance(name, str) and name:
        return name
    parts = [p for p in str(path).replace("\\", "/").split("/") if p]
    return parts[-1] if parts else str(path)


def _status_of(path: str) -> str:
    status = _meta_of(path).get("status")
    return status if status in STATUSES else "crashed"


def report_name(path: str, name: str) -> str:
    """File name of a run's report: the one rule of ``runlens.io.output.report_stem``."""
    from runlens.io.output import report_stem

    return f"{report_stem(name, path)}.html"


def _write_report(diagnosis: Diagnosis, run: Run, reports_dir: str) -> str:
    from runlens.io.output import write_text
    from runlens.render.report.html import render_html
    from runlens.report_data import build_report_data
    from runlens.signals import signals_of

    # The folder was checked (or created) once by the audit, before any worker started.
    name = report_name(diagnosis.path, diagnosis.name)
    write_text(os.path.join(reports_dir, name), render_html(build_report_data(diagnosis, signals_of(run))))
    return name


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or "an error without a message"


__all__ = ["WorkOptions", "analyze_chunk", "analyze_path", "analyze_runs", "chunked", "collect", "error_record",
           "make_detectors", "open_run", "report_name", "run_path", "summarize"]
