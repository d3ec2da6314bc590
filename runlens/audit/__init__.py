"""Audit many runs at once: find them, analyze them in parallel, rank them.

::

    result = audit(["sweeps/"], workers=4)             # a local process pool
    result = audit(["/shared/runs"], client=client)    # a dask.distributed cluster
    result.rows[0]          # the sickest run
    result.failed("error")  # what the CI gate asks

Where the work happens: the runs are found here (``runlens.io.discover``),
then ``runlens.audit.worker.analyze_chunk`` reads and analyzes them in
chunks, in this process (one worker), in a pool of processes that imported
runlens once before forking, or on Dask workers (``runlens.audit.dask_backend``).
Only paths travel to the workers and only small records come back, so the
cost of a run is its analysis, not its transport. The rows are sorted
before anything is shown, so the result does not depend on which worker
finished first: the local and the Dask audits of a tree are identical.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from runlens.audit.worker import WorkOptions, analyze_chunk, chunked, collect, error_record
from runlens.diagnosis import FAIL_ON, SEVERITY_RANK, reaches, worst
from runlens.errors import UsageError
from runlens.io.discover import discover_runs
from runlens.io.remote import open_run

Progress = Callable[[int, int], None]

_STATUS_RANK = {"crashed": 0, "killed": 1, "running": 2, "finished": 3}
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True)
class AuditRow:
    """One run of an audit: the spec's object plus the numbers of the table."""

    run: str
    name: str
    status: str
    curve: str
    findings: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...] = ()
    final_loss: float | None = None
    best_loss: float | None = None
    best_val_loss: float | None = None
    best_val_step: int | None = None
    steps: int | None = None
    duration_s: float | None = None
    error: str | None = None
    report: str | None = None
    outcomes: tuple[tuple[str, str, str], ...] = ()
    seconds: float = field(default=0.0, compare=False)
    cpu_seconds: float = field(default=0.0, compare=False)
    # The analysis output's added keys (docs/format.md), as the worker's analysis gave them.
    headline: str = ""
    key_numbers: Mapping[str, Any] = field(default_factory=dict)
    verdict_step: int | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> AuditRow:
        obj, summary = record["object"], record.get("summary") or {}
        return cls(run=obj["run"], name=obj["name"], status=obj["status"], curve=obj["curve"],
                   findings=tuple(obj["findings"]), warnings=tuple(obj["warnings"]),
                   error=record.get("error"), report=record.get("report"),
                   outcomes=tuple(tuple(o) for o in record.get("outcomes") or ()),
                   seconds=float(record.get("seconds") or 0.0),
                   cpu_seconds=float(record.get("cpu_seconds") or 0.0),
                   headline=obj.get("headline") or "", key_numbers=obj.get("key_numbers") or {},
                   verdict_step=obj.get("verdict_step"),
                   **{k: summary.get(k) for k in ("final_loss", "best_loss", "best_val_loss",
                                                  "best_val_step", "steps", "duration_s")})

    @property
    def worst(self) -> str | None:
        """The most severe finding's severity (None: no finding)."""
        return worst(f["severity"] for f in self.findings)

    def worst_findings(self, limit: int = 3) -> list[Mapping[str, Any]]:
        """The findings, most severe first (stable within a severity)."""
        ranked = sorted(self.findings, key=lambda f: SEVERITY_RANK[f["severity"]])
        return ranked[:limit]

    def reaches(self, fail_on: str) -> bool:
        """Whether a finding of this run is at least as severe as ``fail_on``."""
        return reaches((f["severity"] for f in self.findings), fail_on)

    def to_dict(self) -> dict[str, Any]:
        """The spec's analysis-output object: its keys, then the added ones (docs/format.md)."""
        from runlens.summary import KEY_NUMBERS

        return {"run": self.run, "name": self.name, "status": self.status, "curve": self.curve,
                "findings": [dict(f) for f in self.findings], "warnings": list(self.warnings),
                "headline": self.headline or (self.error or ""),
                "key_numbers": {k: self.key_numbers.get(k) for k in KEY_NUMBERS},
                "verdict_step": self.verdict_step}


@dataclass(frozen=True)
class AuditResult:
    """The rows of an audit, worst first, and how long it took."""

    rows: tuple[AuditRow, ...]
    workers: int
    backend: str  # "inline", "processes" or "dask"
    wall_seconds: float = field(default=0.0, compare=False)
    # Loose files that sniffed as logs but held no training signal: (path, why), named by the CLI.
    skipped: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def failed(self, fail_on: str = "error") -> bool:
        return any(row.reaches(fail_on) for row in self.rows)

    def to_list(self) -> list[dict[str, Any]]:
        """What ``audit --format json`` prints: the spec objects, worst first."""
        return [row.to_dict() for row in self.rows]

    @property
    def analysis_seconds(self) -> float:
        """Time spent inside the workers on the runs themselves, summed."""
        return sum(row.seconds for row in self.rows)

    def counts(self) -> dict[str, int]:
        out = {"runs": len(self.rows), "unreadable": sum(r.error is not None for r in self.rows)}
        for sev in SEVERITY_RANK:  # an unreadable run is counted once, as unreadable: the parts add up
            out[sev] = sum(r.worst == sev and r.error is None for r in self.rows)
        out["clean"] = sum(r.worst is None for r in self.rows)
        return out


def sort_key(row: AuditRow) -> tuple:
    """Worst first: unreadable, then worst severity, how many, read warnings, status; then path."""
    worst = row.worst
    rank = -1 if row.error else (SEVERITY_RANK[worst] if worst else len(SEVERITY_RANK))
    at_worst = sum(f["severity"] == worst for f in row.findings)
    return (rank, -at_worst, not row.warnings, _STATUS_RANK.get(row.status, 9), row.run)


def default_workers() -> int:
    """The CPUs this process may use (its affinity mask, where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def audit(paths: Iterable[str | os.PathLike[str]], *, workers: int | None = None,
          client: Any = None, scheduler: str | None = None, baseline: str | None = None,
          reports_dir: str | None = None, progress: Progress | None = None,
          detectors: Mapping[str, Mapping[str, Any]] | None = None) -> AuditResult:
    """Find and analyze every run below ``paths``.

    ``workers``: local processes (default: the CPUs available; 1 runs in
    this process). ``client`` (a ``dask.distributed.Client``) or
    ``scheduler`` (``tcp://host:port``) run the analysis on a Dask cluster
    instead; its workers must see the same paths. ``baseline`` compares
    every run against that run; ``reports_dir`` writes a per-run HTML
    report there. ``detectors`` sets detector parameters, ``{code: {param:
    value}}`` (``analyze --set`` alike); every worker, local or Dask, builds
    its detectors from them. ``progress(done, total)`` is called as runs finish.

    Raises :class:`UsageError` when no run is found or a detector refuses a
    parameter (before any run is read).
    """
    paths = [os.fspath(p) for p in paths]
    if workers is not None and workers < 1:
        raise UsageError(f"The 'workers' parameter of audit must be an int >= 1. Got {workers} instead.")
    unlisted: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    runs = discover_runs(paths, unlisted, skipped)
    if not runs and not unlisted:
        raise UsageError(f"no runs found below {', '.join(os.fspath(p) for p in paths)} (a run is a directory with run.json)")
    if reports_dir:
        from runlens.io.output import output_dir

        # Refused in one line now, not as one error row per run after the whole analysis.
        output_dir(reports_dir)
    options = WorkOptions.with_params(detectors, baseline=os.fspath(baseline) if baseline else None,
                                      reports_dir=os.path.abspath(reports_dir) if reports_dir else None)
    options.detector_instances()  # a parameter refused here, once, not as an error row per run
    if options.baseline:
        _check_baseline(options.baseline)
    start = time.perf_counter()
    if progress:
        progress(0, len(runs))
    records: list[dict[str, Any]]
    if not runs:
        records, n, backend = [], 1, "inline"
    elif client is not None or scheduler:
        from runlens.audit.dask_backend import run_on_dask

        records, n = run_on_dask(runs, options, client=client, scheduler=scheduler, progress=progress)
        backend = "dask"
    else:
        n = min(workers or default_workers(), len(runs))
        records = _run_inline(runs, options, progress) if n == 1 else _run_pool(runs, options, n, progress)
        backend = "inline" if n == 1 else "processes"
    # A folder that could not be listed may hold runs: it is a row, never a silent omission.
    records += [error_record(folder, f"cannot list this folder ({reason}); any runs inside it were not read")
                for folder, reason in unlisted]
    records, unread = _skip_loose(records, loose_logs([os.fspath(p) for p in paths], runs))
    skipped += unread
    rows = sorted((AuditRow.from_record(r) for r in records), key=sort_key)
    return AuditResult(rows=tuple(rows), workers=n, backend=backend,
                       wall_seconds=time.perf_counter() - start, skipped=tuple(skipped))


def loose_logs(paths: Sequence[str], runs: Sequence[str]) -> set[str]:
    """The log files discovery found inside a folder rather than was given: taken by a sniff of
    their head, so one may still prove unreadable (analyze and report skip those, naming them)."""
    named = set(paths)
    return {r for r in runs if r not in named and os.path.isfile(r)}


def _skip_loose(records: list[dict], loose: set[str]) -> tuple[list[dict], list[tuple[str, str]]]:
    """Records without the loose logs that could not be read, and those as ``(path, why)``."""
    kept, skipped = [], []
    for record in records:
        run = record["object"]["run"]
        codes = [f["code"] for f in record["object"]["findings"]]
        if run in loose and record.get("error") and codes == ["unreadable_run"]:
            skipped.append((run, record["error"].removeprefix(f"{run}: ")))
        else:
            kept.append(record)
    return kept, skipped


def _check_baseline(path: str) -> None:
    # A baseline that cannot be read is a usage error, not N identical error rows.
    open_run(path)


def _run_inline(runs: Sequence[str], options: WorkOptions, progress: Progress | None) -> list[dict]:
    records = []
    for i, path in enumerate(runs, 1):
        records.extend(analyze_chunk([path], options))
        if progress:
            progress(i, len(runs))
    return records


def _run_pool(runs: Sequence[str], options: WorkOptions, workers: int,
              progress: Progress | None) -> list[dict]:
    # Imported before the pool forks, so that workers start with the engine loaded.
    from runlens import analysis  # noqa: F401

    chunks = chunked(runs, workers)
    records: list[dict] = []
    finished = 0
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_warm_up, initargs=(os.getpid(),))
    try:
        pending = {pool.submit(analyze_chunk, chunk, options): chunk for chunk in chunks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                chunk = pending.pop(future)
                records.extend(collect(future, chunk))
                finished += len(chunk)  # a log of several runs gives several records
            if progress:
                progress(finished, len(runs))
    except BaseException:
        # Ctrl-C: drop the chunks not started instead of waiting for all of them.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return records


def _warm_up(parent: int | None = None) -> None:
    """A pool worker's start: end with the audit, and load the engine once."""
    if parent is not None:
        _die_with(parent)
    # Under "spawn" (macOS, Windows) a worker starts bare: import the engine once, not per run.
    from runlens import analysis  # noqa: F401


def _die_with(parent: int) -> None:
    """Ask Linux to send this worker SIGTERM when the audit process dies (SIGTERM, SIGKILL, a
    crash): a pool worker blocked on its task queue would otherwise outlive it forever."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the audit died before the request took effect
        os._exit(1)


__all__ = ["FAIL_ON", "AuditResult", "AuditRow", "audit", "chunked", "default_workers", "sort_key"]
