"""Round-3 cases: bad input is one line, output is inert, -o never destroys, SIGTERM ends workers."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from ._cli import snapshot, write_run
from ._harness import child_env
from .round3 import _limits, case, cli

DEEP = 100_000


def _deep_json() -> str:
    return '{"a": ' + "[" * DEEP + "]" * DEEP + "}"


# -- bad input ------------------------------------------------------------------
# Runs come from the one writer (_cli.write_run -> tests/runs.py); what these cases then write by hand
# over them (a run.json nested too deep or with a 5,000-digit pid, a truncated part) is corrupt on purpose.

@case("bad_input", "run.json nested 100,000 deep (analyze)")
def _deep_meta(work: Path) -> list[str]:
    run = write_run(work / "run")
    (run / "run.json").write_text(_deep_json())
    return cli("analyze", str(run), allowed=(2,)).problems


@case("bad_input", "run.json nested 100,000 deep (validate)")
def _deep_meta_validate(work: Path) -> list[str]:
    run = write_run(work / "run")
    (run / "run.json").write_text(_deep_json())
    return cli("validate", str(run), allowed=(1,)).problems


@case("bad_input", "run.json nested 100,000 deep (audit)")
def _deep_meta_audit(work: Path) -> list[str]:
    write_run(work / "tree" / "ok")
    (write_run(work / "tree" / "deep") / "run.json").write_text(_deep_json())
    return cli("audit", str(work / "tree"), allowed=(0, 1)).problems


@case("bad_input", "--config JSON nested 100,000 deep")
def _deep_config(work: Path) -> list[str]:
    (work / "c.json").write_text(_deep_json())
    return cli("analyze", str(write_run(work / "run")), "--config", str(work / "c.json"), allowed=(2,)).problems


@case("bad_input", "--config TOML nested 100,000 deep")
def _deep_toml(work: Path) -> list[str]:
    (work / "c.toml").write_text("a = " + "[" * DEEP + "]" * DEEP + "\n")
    return cli("analyze", str(write_run(work / "run")), "--config", str(work / "c.toml"), allowed=(2,)).problems


@case("bad_input", "a JSON log nested 100,000 deep (content sniffing)")
def _deep_sniff(work: Path) -> list[str]:
    (work / "log.json").write_text(_deep_json())
    return cli("import", "auto", str(work / "log.json"), str(work / "out"), allowed=(2,)).problems


@case("bad_input", "a trainer_state.json nested 100,000 deep (import hf)")
def _deep_hf(work: Path) -> list[str]:
    (work / "trainer_state.json").write_text('{"log_history": ' + "[" * DEEP + "]" * DEEP + "}")
    return cli("import", "hf", str(work / "trainer_state.json"), str(work / "out"), allowed=(2,)).problems


@case("bad_input", "a JSON-lines log with one line nested 100,000 deep")
def _deep_jsonl_line(work: Path) -> list[str]:
    rows = "".join(json.dumps({"step": i, "loss": 1 / (i + 1)}) + "\n" for i in range(40))
    (work / "log.jsonl").write_text(rows + _deep_json() + "\n")
    return cli("import", "jsonl", str(work / "log.jsonl"), str(work / "out"), allowed=(0, 2)).problems


@case("bad_input", "a 5,000-digit pid in run.json")
def _huge_pid(work: Path) -> list[str]:
    run = write_run(work / "run")
    text = (run / "run.json").read_text().replace('"pid": 1', '"pid": ' + "9" * 5000)
    (run / "run.json").write_text(text)
    return cli("analyze", str(run), allowed=(2,)).problems


@case("bad_input", "a 5,000-digit step in a CSV log")
def _huge_step_csv(work: Path) -> list[str]:
    rows = "".join(f"{i},{1 / (i + 1)}\n" for i in range(40))
    (work / "log.csv").write_text("step,loss\n" + rows + "9" * 5000 + ",0.1\n")
    return cli("import", "csv", str(work / "log.csv"), str(work / "out"), allowed=(0, 2)).problems


@case("bad_input", "a 5,000-digit step in a JSON-lines log")
def _huge_step_jsonl(work: Path) -> list[str]:
    rows = "".join(json.dumps({"step": i, "loss": 1 / (i + 1)}) + "\n" for i in range(40))
    (work / "log.jsonl").write_text(rows + '{"step": ' + "9" * 5000 + ', "loss": 0.1}\n')
    return cli("import", "jsonl", str(work / "log.jsonl"), str(work / "out"), allowed=(0, 2)).problems


@case("bad_input", "a TensorBoard file with 40,000 tags")
def _many_tags(work: Path) -> list[str]:
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        return []
    writer = EventFileWriter(str(work / "tb"))
    for i in range(40_000):
        tag = "train/loss" if i == 0 else f"metric_{i}"
        value = [summary_pb2.Summary.Value(tag=tag, simple_value=1.0 / (1 + i % 50))]
        writer.add_event(event_pb2.Event(wall_time=1e9 + i, step=i % 50, summary=summary_pb2.Summary(value=value)))
    writer.close()
    return cli("import", "tensorboard", str(work / "tb"), str(work / "out"), allowed=(0, 2)).problems


# -- injection ------------------------------------------------------------------

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
OSC8 = "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"


@case("injection", "validate: a part name with OSC 52")
def _validate_escape_name(work: Path) -> list[str]:
    run = write_run(work / "run")
    (run / "scalars" / f"notes{OSC52}.txt").write_text("x")
    return cli("validate", str(run), allowed=(0, 1)).problems


@case("injection", "validate: a run folder named with OSC 8, holding an unreadable part")
def _validate_escape_run(work: Path) -> list[str]:
    run = write_run(work / f"run{OSC8}")
    (run / "scalars" / "r0-00000003.parquet").write_bytes(b"PAR1 truncated")  # its error quotes the path
    return cli("validate", str(run), allowed=(1,)).problems


@case("injection", "import --dry-run: column names with OSC 52")
def _dry_run_escape(work: Path) -> list[str]:
    (work / "log.csv").write_text(f"step,loss,acc{OSC52}\n" + "".join(f"{i},{1 / (i + 1)},x\n" for i in range(40)))
    return cli("import", "csv", str(work / "log.csv"), "--dry-run", allowed=(0, 2)).problems


@case("injection", "import notes: a column name with OSC 8")
def _import_notes_escape(work: Path) -> list[str]:
    (work / "log.csv").write_text(f"step,loss,{OSC8}\n" + "".join(f"{i},{1 / (i + 1)},text\n" for i in range(40)))
    return cli("import", "csv", str(work / "log.csv"), str(work / "out"), allowed=(0, 2)).problems


@case("injection", "audit CSV: a bare CR and a formula in a run name")
def _csv_cr(work: Path) -> list[str]:
    write_run(work / "tree" / "a", name='ok\r=HYPERLINK("http://evil.example","x")')
    write_run(work / "tree" / "b", seed=1)
    got = cli("audit", str(work / "tree"), "--format", "csv", allowed=(0, 1), terminal=False)
    rows = list(csv.reader(io.StringIO(got.out.decode("utf-8"), newline="")))
    problems = list(got.problems)
    if len(rows) != 3:
        problems.append(f"injection: {len(rows)} CSV rows for 2 runs and a header")
    names = [row[1] for row in rows[1:] if len(row) > 1]
    if any(name.startswith(("=", "+", "-", "@")) for name in names):
        problems.append(f"injection: a name cell starts a formula: {names}")
    return problems


def _bidi_report(work: Path, fmt: str) -> tuple[list[str], str]:
    run = write_run(work / "run", name="evil\u202egnp.exe")
    out = work / "out"
    got = cli("report", str(run), "-o", str(out), "--format", fmt, allowed=(0, 1))
    texts = [p.read_text(encoding="utf-8") for p in out.glob(f"*.{fmt}")] if out.is_dir() else []
    return got.problems, "".join(texts) or "missing"


@case("injection", "report HTML: bidi override in the run name")
def _bidi_html(work: Path) -> list[str]:
    problems, text = _bidi_report(work, "html")
    return problems + (["injection: U+202E in the HTML"] if "\u202e" in text or text == "missing" else [])


@case("injection", "report Markdown: bidi override in the run name")
def _bidi_md(work: Path) -> list[str]:
    problems, text = _bidi_report(work, "md")
    return problems + (["injection: U+202E in the Markdown"] if "\u202e" in text or text == "missing" else [])


@case("injection", "compare Markdown heading: bidi isolate in a run name")
def _bidi_compare(work: Path) -> list[str]:
    a = write_run(work / "a", name="pr\u2066\u202e321")
    b = write_run(work / "b", seed=1, name="main\u202d")
    got = cli("compare", str(a), str(b), "--format", "md", allowed=(0, 1), terminal=False)
    bad = [c for c in "\u2066\u202e\u202d" if c in got.out.decode("utf-8", "replace")]
    return got.problems + ([f"injection: {bad!r} in the compare Markdown"] if bad else [])


@case("injection", "analyze text: OSC 8 in a run name and an error message")
def _analyze_escape(work: Path) -> list[str]:
    run = write_run(work / "run", {"status": "crashed", "error": {"type": "E", "message": OSC8, "traceback": OSC52,
                                                                   "step": 3}}, name=f"x{OSC8}")
    return cli("analyze", str(run), allowed=(0, 1)).problems


# -- outputs --------------------------------------------------------------------

def _unchanged(before: dict, after: dict, what: str) -> list[str]:
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return [f"outside: {what}: {changed[:3]} changed"] if changed else []


@case("outputs", "-o a character device")
def _o_device(work: Path) -> list[str]:
    dev = work / "null"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        os.mkfifo(dev)  # not root: a FIFO is the special file a user can make
    kind = stat.S_IFMT(os.lstat(dev).st_mode)
    got = cli("audit", str(write_run(work / "run")), "-o", str(dev), allowed=(2,))
    return got.problems + ([] if stat.S_IFMT(os.lstat(dev).st_mode) == kind else ["outside: the device was replaced"])


@case("outputs", "-o a symlink")
def _o_symlink(work: Path) -> list[str]:
    victim, link = work / "victim.txt", work / "summary.md"
    victim.write_text("keep")
    link.symlink_to(victim)
    got = cli("audit", str(write_run(work / "run")), "--format", "md", "-o", str(link), allowed=(2,))
    ok = link.is_symlink() and victim.read_text() == "keep"
    return got.problems + ([] if ok else ["outside: the symlink or its target was replaced"])


@case("outputs", "report -o a symlink to a run's scalars folder")
def _o_link_into_run(work: Path) -> list[str]:
    run = write_run(work / "run")
    (work / "reports").symlink_to(run / "scalars", target_is_directory=True)
    before = snapshot(run)
    got = cli("report", str(run), "-o", str(work / "reports"), allowed=(2,))
    return got.problems + _unchanged(before, snapshot(run), "the run")


@case("outputs", "audit -o a run's part through a symlinked folder")
def _o_part_via_link(work: Path) -> list[str]:
    run = write_run(work / "run")
    (work / "out").symlink_to(run / "scalars", target_is_directory=True)
    before = snapshot(run)
    got = cli("audit", str(run), "--format", "csv", "-o", str(work / "out" / "r0-00000000.parquet"), allowed=(2,))
    return got.problems + _unchanged(before, snapshot(run), "the run")


@case("outputs", "import into a run through a symlinked folder")
def _import_via_link(work: Path) -> list[str]:
    run = write_run(work / "run")
    (work / "link").symlink_to(run, target_is_directory=True)
    (work / "log.csv").write_text("step,loss\n" + "".join(f"{i},{1 / (i + 1)}\n" for i in range(40)))
    before = snapshot(run)
    got = cli("import", "csv", str(work / "log.csv"), str(work / "link" / "new"), allowed=(2,))
    return got.problems + _unchanged(before, snapshot(run), "the run")


# -- signals --------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@case("signals", "SIGTERM to audit --workers 2")
def _sigterm_pool(work: Path) -> list[str]:
    if not Path("/proc/self/task").is_dir():
        return []
    for i in range(40):
        write_run(work / "tree" / f"r{i}", seed=i, steps=3000)
    proc = subprocess.Popen([sys.executable, "-m", "runlens", "audit", str(work / "tree"), "--workers", "2", "-q"],
                            env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_limits)
    deadline = time.monotonic() + 60
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    end = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < end:
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:
        os.kill(w, signal.SIGKILL)
    if len(workers) < 2:
        return [f"other: {len(workers)} workers seen before the audit ended"]
    return [f"hang: {len(left)} pool worker(s) alive 10 s after SIGTERM"] if left else []
