"""The long reliability campaign: ``python -m tests.reliability [--quick] [--out FILE]``.

Prints a table of figures and writes it to docs/reliability.md (the CI-sized
version of every check is ``tests/reliability/test_reliability.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import tempfile
import time
from pathlib import Path

from . import faults, fuzz, hostile, kill, read_while_write, resources
from ._harness import ROOT


def _table(rows: list[tuple[str, object]]) -> str:
    lines = ["| figure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines)


def hostile_rows(h, seconds: float) -> list[tuple[str, object]]:
    """Section 6's rows: the round-2 classes and the four figures that must be 0."""
    classes = ", ".join(f"{k} {v}" for k, v in sorted(h.by_class.items()))
    return [("CLI invocations (cases)", f"{h.cases} ({classes}), {seconds:.0f} s"),
            ("exit statuses", ", ".join(f"{k}: {v}" for k, v in sorted(h.exits.items()))),
            ("clear one-line errors, exit 2", h.one_line_errors),
            ("tracebacks or internal errors (must be 0)", h.tracebacks),
            ("live injections: CSV formulas, malformed JUnit, terminal escapes, GitHub mentions, HTML (must be 0)",
             h.injections),
            ("rows lost or duplicated, runs left out, earlier reports damaged (must be 0)",
             h.rows_lost_or_duplicated),
            ("writes outside the output folder, temp files left (must be 0)", h.writes_outside),
            ("skipped", "; ".join(h.skipped) or "none")]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.reliability")
    p.add_argument("--quick", action="store_true", help="CI-sized numbers")
    p.add_argument("--out", default=str(ROOT / "docs" / "reliability.md"))
    args = p.parse_args(argv)
    kills, fuzz_rounds, mem_steps, audit_runs = (21, 1, 10_000, 600) if args.quick else (201, 4, 100_000, 10_000)
    sections = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        results = kill.campaign(tmp / "kill", kills, seed=7)
        sections.append(("1. Kill campaign (SIGKILL of a real training process)", list(kill.figures(results).items())))
        print(sections[-1], flush=True)
        rows = []
        for r in faults.campaign(tmp / "faults", steps=400):
            rows.append((r.fault, f"steps {r.steps_completed}/{r.steps}, exit {r.exit_code}, warnings {r.warnings}, "
                                  f"rows on disk {r.rows_on_disk}, median step {r.step_ms_median and round(r.step_ms_median, 2)} ms"))
        sections.append(("2. Faults while writing (training steps completed must be all)", rows))
        print(sections[-1], flush=True)
        rw = read_while_write.campaign(tmp / "rw", seconds=30.0)
        sections.append(("3. Reading while writing", [("analyze + report rounds on a live run", rw.reads),
                                                       ("tracebacks (must be 0)", rw.tracebacks),
                                                       ("half-written parts read (must be 0)", rw.half_part_reads),
                                                       ("statuses seen", ", ".join(rw.statuses_seen))]))
        print(sections[-1], flush=True)
        fz = fuzz.campaign(tmp / "fuzz", seed=11, rounds=fuzz_rounds)
        fuzz.audit_tree_case(tmp / "fuzz", fz)
        sections.append(("4. Hostile and broken input", [("cases tried", fz.cases), ("clear exit 0 (with reading warnings where damaged)", fz.exit_0),
                                                        ("clear one-line error, exit 2", fz.exit_2),
                                                        ("tracebacks (must be 0)", fz.tracebacks),
                                                        ("reports rendered from damaged/hostile runs", fz.renders),
                                                        ("injections reaching output unescaped (must be 0)", fz.unescaped)]))
        print(sections[-1], flush=True)
        mem = resources.recorder_memory(tmp / "mem", mem_steps)
        handles = resources.audit_handles(tmp / "audit", audit_runs, fd_limit=256)
        sections.append(("5. Resource bounds", [
            (f"recorder RSS over {mem.steps:,} steps", f"{mem.rss_mb_at_10pct} MB at 10% -> {mem.rss_mb_at_end} MB at end (growth {mem.growth_mb} MB)"),
            (f"audit of {handles.runs:,} tiny runs with RLIMIT_NOFILE={handles.fd_limit}", f"exit {handles.exit_code}, {handles.rows:,} rows {handles.detail}"),
            ("engine on the 10,000,000-layer-row run", "peak memory 2.8x the decoded columns (target <= 3x): "
             "`benchmarks/results/engine_scale.md`")]))
        print(sections[-1], flush=True)
        t6 = time.time()
        h = hostile.campaign(tmp / "hostile")
        sections.append(("6. Hostile input through the CLI, round 2 (subprocesses, as a user runs it)",
                         hostile_rows(h, time.time() - t6)))
        print(sections[-1], flush=True)
    doc = [f"# Reliability figures\n\nMeasured by `python -m tests.reliability{' --quick' if args.quick else ''}` on "
           f"{dt.date.today().isoformat()} ({platform.machine()}, Python {platform.python_version()}), "
           f"{time.time() - t0:.0f} s in all. The CI-sized version of every check runs in `.ci/run` "
           "(`tests/reliability/test_reliability.py`), where each \"must\" row is an assertion.\n"]
    for title, rows in sections:
        doc.append(f"## {title}\n\n{_table(rows)}\n")
    examples = fz.examples + h.examples
    if examples:
        doc.append("Examples of problems found:\n\n" + "\n".join(f"- `{e!r}`" for e in examples) + "\n")
    text = "\n".join(doc)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
