"""A writer that compacts while readers read: the child process of the round-3 stress test.

``python -m tests.reliability._compacting_writer RUN PROGRESS [PARTS]`` writes
parts of ``scalars`` and ``events`` with the recorder's own part writer,
compacts both tables every few parts with the recorder's own compaction
(merged parts written, then the old ones removed), and after each part is in
place writes the last step on disk and the number of compactions so far to PROGRESS. A reader that reads PROGRESS
before it starts must find every step up to it, exactly once.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pyarrow as pa

from recorders import _parts
from tests.runs import write_run

ROWS_PER_PART = 5
COMPACT_EVERY = 6
# Merged parts of at most this many rows: each compaction writes several, so removals
# trail the writes by more than one part and a reader has room to fall between them.
TARGET_ROWS = 60


def meta() -> dict:
    return {"format": "runlens-run", "format_version": 1, "run_id": "c" * 32, "name": "compacting",
            "status": "running", "started_at": "2026-01-01T00:00:00+00:00", "ended_at": None,
            "heartbeat_at": None, "flush_every": 1, "flush_seconds": 3600, "host": "elsewhere",
            "pid": 1, "config": {}, "seed": 0, "environment": {"python": "3.11"}, "layers": [],
            "attempts": [{"started_at": "2026-01-01T00:00:00+00:00", "first_step": 0}], "error": None}


def tables(first: int) -> tuple[pa.Table, pa.Table]:
    steps = list(range(first, first + ROWS_PER_PART))
    scalars = _parts.rows_table("scalars", [{"step": s, "time": 1.0 * s, "loss": 1.0 / (1 + s)}
                                            for s in steps], {})
    events = _parts.rows_table("events", [{"step": s, "time": 1.0 * s, "kind": "user", "layer": "",
                                           "value": float(s), "message": "m"} for s in steps], {})
    return scalars, events


MAX_SECONDS = 900  # a test that reads for longer has failed anyway


def main(run: Path, progress: Path, parts: int) -> None:
    # the folder and its run.json come from the tests' one writer; the parts from the recorder's, the code under test
    write_run(run, meta=meta())
    # The test kills this child when it is done; if the test itself is killed first (a timeout, an
    # interrupted run), nothing would, and an endless writer would hold a core: stop when orphaned.
    parent, deadline = os.getppid(), time.monotonic() + MAX_SECONDS
    seq = {"scalars": 0, "events": 0}
    compactions = 0
    for k in range(parts):
        if os.getppid() != parent or time.monotonic() > deadline:
            return
        for name, table in zip(("scalars", "events"), tables(k * ROWS_PER_PART), strict=True):
            _parts.write_part(run / name, 0, seq[name], table)
            seq[name] += 1
        tmp = progress.with_name(progress.name + ".tmp")
        tmp.write_text(f"{(k + 1) * ROWS_PER_PART - 1} {compactions}")
        os.replace(tmp, progress)
        if k % COMPACT_EVERY == COMPACT_EVERY - 1:
            for name in seq:
                seq[name] = _parts.compact(run / name, name, 0, seq[name], target_rows=TARGET_ROWS)
            compactions += 1
        time.sleep(0.005)  # paced so the run stays small enough that reads on a busy machine stay quick


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 10 ** 9)
