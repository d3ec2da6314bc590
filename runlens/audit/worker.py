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

import dataclasses
import hashlib
import json
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runlens.diagnosis import STATUSES, Finding
from runlens.errors import RunlensError
from runlens.io.discover import is_url
from runlens.io.remote import open_run
from runlens.io.runmeta import parse_time

# Baselines read in this process, by path (and the projection, by key): computed once per worker.
_CACHE: dict[Any, Any] = {}


@dataclass(frozen=True)
class WorkOptions:
    """What every run of one audit is checked with (picklable, small)."""

    baseline: str | None = None
    reports_dir: str | None = None


def analyze_chunk(paths: Sequence[str], options: WorkOptions = WorkOptions()) -> list[dict[str, Any]]:
    """One record per path (see :func:`analyze_path`), in the order given."""
    return [analyze_path(p, options) for p in paths]


def analyze_path(path: str, options: WorkOptions = WorkOptions()) -> dict[str, Any]:
    """Read, analyze (and compare, and report on) one run; never raises.

    The record: ``object`` (the spec's analysis object), ``summary`` (the
    audit row's numbers), ``outcomes`` (``[code, state, reason]`` per
    detector), ``error`` (one line, or None), ``report`` (file name of the
    per-run report, or None), ``seconds`` and ``cpu_seconds`` (wall and CPU
    time spent on this run, for the benchmark's overhead figures).
    """
    start, cpu = time.perf_counter(), time.process_time()
    try:
        record = _analyze(path, options)
    except RunlensError as exc:
        record = error_record(path, f"{type(exc).__name__}: {_one_line(exc)}", "unreadable_run")
    except Exception as exc:  # a bug in a reader or detector: report it on this run's row
        record = error_record(path, f"{type(exc).__name__}: {_one_line(exc)}", "analysis_crashed")
    record["seconds"] = time.perf_counter() - start
    record["cpu_seconds"] = time.process_time() - cpu
    return record


def _analyze(path: str, options: WorkOptions) -> dict[str, Any]:
    from runlens.analysis import analyze

    # A report draws every chart, so it needs every column; the audit alone reads only what it uses.
    columns = None if options.reports_dir else _columns(bool(options.baseline))
    run = open_run(path, columns=columns)
    diagnosis = analyze(run)
    if options.baseline:
        from runlens.compare import compare_runs

        extra = compare_runs(run, _baseline(options.baseline)).findings
        diagnosis = dataclasses.replace(diagnosis, findings=tuple(diagnosis.findings) + tuple(extra))
    report = _write_report(diagnosis, options.reports_dir) if options.reports_dir else None
    return {
        "object": diagnosis.to_dict(),
        "summary": summarize(run),
        "outcomes": [[o.code, o.state, o.reason] for o in diagnosis.outcomes],
        "error": None,
        "report": report,
    }


def _columns(with_baseline: bool) -> dict[str, list[str]]:
    """What the detectors (and a baseline comparison) read: the loader projects on it."""
    key = ("columns", with_baseline)
    if key not in _CACHE:
        from runlens.analysis import projection
        from runlens.detectors import REGISTRY

        wanted = {t: list(c) for t, c in projection([REGISTRY[c]() for c in sorted(REGISTRY)]).items()}
        extra = {"scalars": ["time"]}
        if with_baseline:
            from runlens.compare import COLUMNS

            extra = {**COLUMNS, "scalars": COLUMNS["scalars"] + ["time"]}
        for table, cols in extra.items():
            wanted[table] = sorted(set(wanted.get(table, [])) | set(cols))
        _CACHE[key] = wanted
    return _CACHE[key]


def _baseline(path: str):
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
    except Exception as exc:  # a worker killed (OOM, signal): those runs get error rows
        message = f"worker failed: {type(exc).__name__}: {' '.join(str(exc).split())}"
        return [error_record(path, message, "analysis_crashed") for path in chunk]


# -- per-run numbers --------------------------------------------------------

def summarize(run) -> dict[str, Any]:
    """The numbers of an audit row: losses, best validation, steps, duration."""
    loss = run.column("scalars", "loss")
    steps = run.steps("scalars")
    out: dict[str, Any] = {"final_loss": None, "best_loss": None, "best_val_loss": None,
                           "best_val_step": None, "steps": None, "duration_s": _duration(run)}
    if loss is not None and len(loss):
        out["final_loss"] = float(loss[-1])
        finite = np.isfinite(loss)
        out["best_loss"] = float(loss[finite].min()) if finite.any() else None
    if len(steps):
        out["steps"] = int(steps.max()) + 1
    val = run.column("evals", "val_loss")
    if val is not None and np.isfinite(val).any():
        i = int(np.nanargmin(np.where(np.isfinite(val), val, np.nan)))
        out["best_val_loss"] = float(val[i])
        out["best_val_step"] = int(run.steps("evals")[i])
    return out


def _duration(run) -> float | None:
    meta = run.meta
    start = parse_time(meta.get("started_at"))
    end = parse_time(meta.get("ended_at")) or parse_time(meta.get("heartbeat_at"))
    if start is not None and end is not None and end >= start:
        return end - start
    times = run.column("scalars", "time")
    if times is not None and np.isfinite(times).sum() >= 2:
        return float(np.nanmax(times) - np.nanmin(times))
    return None


# -- errors and reports -----------------------------------------------------

def error_record(path: str, message: str, code: str = "unreadable_run") -> dict[str, Any]:
    """The record of a run that could not be analyzed, spec-shaped.

    The object keeps the spec's keys: the error is an ``error`` finding
    (``unreadable_run`` or ``analysis_crashed``) and a warning; the status
    is run.json's when it can still be read, else ``crashed``; the curve is
    ``insufficient_data`` because no curve was read.
    """
    title = ("the run could not be read: " if code == "unreadable_run"
             else "the analysis failed on this run: ") + message
    advice = ("Check run.json and the table folders with `check-runlog`; a run written by a newer "
              "runlens needs a newer reader." if code == "unreadable_run" else
              "This is a runlens bug: please report it with the run attached.")
    finding = Finding(code=code, severity="error", title=title, evidence={"error": message},
                      advice=advice)
    obj = {"run": path, "name": _name_of(path), "status": _status_of(path),
           "curve": "insufficient_data", "findings": [finding.to_dict()], "warnings": [message]}
    return {"object": obj, "summary": {}, "outcomes": [], "error": message, "report": None}


def _meta_of(path: str) -> dict[str, Any]:
    if is_url(path):
        return {}
    try:
        with open(os.path.join(path, "run.json"), encoding="utf-8") as fh:
            meta = json.load(fh)
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
    """File name of a run's report: readable, and unique per run path."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "run"
    digest = hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{slug}-{digest}.html"


def _write_report(diagnosis, reports_dir: str) -> str:
    from runlens.render.html import render_html

    name = report_name(diagnosis.run.path, diagnosis.run.name)
    os.makedirs(reports_dir, exist_ok=True)
    target = os.path.join(reports_dir, name)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(render_html(diagnosis))
    os.replace(tmp, target)
    return name


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


__all__ = ["WorkOptions", "analyze_chunk", "analyze_path", "chunked", "collect", "error_record", "open_run",
           "report_name", "summarize"]
