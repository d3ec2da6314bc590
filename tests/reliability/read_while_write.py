"""Reading while writing: analyze and report a run whose recorder is still writing."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from . import _harness as h


@dataclass(frozen=True)
class ReadWhileWrite:
    reads: int
    tracebacks: int
    half_part_reads: int
    statuses_seen: tuple[str, ...]
    detail: str = ""


def campaign(workdir: Path, seconds: float = 8.0, min_reads: int = 5) -> ReadWhileWrite:
    import runlens
    from runlens.render.report.html import render_html
    from runlens.render.report.markdown import render_markdown
    from runlens.report_data import build_report_data
    from runlens.signals import signals_of

    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    run, progress = workdir / "run", workdir / "progress"
    proc = h.start_child(run, progress, "--steps", "1000000", "--flush-every", "3",
                         "--flush-seconds", "2.0", "--step-sleep", "0.001")
    reads = tracebacks = half = 0
    statuses: set[str] = set()
    detail = ""
    try:
        h.wait_for(lambda: (run / "run.json").exists() or proc.poll() is not None, 120)
        end = time.monotonic() + seconds
        give_up = end + 60  # a slow machine still gets its minimum number of reads
        while (time.monotonic() < end or reads < min_reads) and time.monotonic() < give_up \
                and proc.poll() is None:
            try:
                opened = runlens.load_run(str(run))
                diagnosis = runlens.analyze(opened)
                data = build_report_data(diagnosis, signals_of(opened))
                render_markdown(data)
                if reads % 10 == 0:  # charts are the slow part; the read path is what is tested
                    render_html(data)
                statuses.add(diagnosis.status)
                half += sum("part" in w and "read" in w for w in diagnosis.warnings)
            except runlens.RunlensError as exc:
                detail = f"clear error: {exc}"
            except Exception as exc:  # noqa: BLE001 - any other exception is a traceback for a user
                tracebacks += 1
                detail = f"{type(exc).__name__}: {exc}"
            reads += 1
    finally:
        h.sigkill(proc)
    return ReadWhileWrite(reads, tracebacks, half, tuple(sorted(statuses)), detail)
