"""Round 2 of hostile input, every case through the real CLI in a subprocess.

Classes (issue 15): numbers too big for the machine, run.json fields of the
wrong type, duplicate column names, strings that cannot be encoded, run
directories whose name is not UTF-8, output that cannot be written (missing,
read-only, full disk, symlinked temporary names, a run directory as the
target), injection into CSV / JUnit / terminal / Markdown, and runs an audit
could leave out silently. Figures: tracebacks, live injections, rows lost or
duplicated, writes outside the output folder (all must be 0).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
from pathlib import Path

import pyarrow as pa

from ._cli import Figures, cli, count_changes, drop_dac, part, snapshot, stray_temps, write_run

BIG = 2 ** 70
TOO_BIG = {"pid": BIG, "seed": BIG, "flush_every": BIG, "flush_seconds": 2 ** 1100,
           "layers[0].index": BIG, "layers[0].numel": BIG, "error.step": BIG, "attempts[0].first_step": BIG}
WRONG_TYPES = {"layers": True, "layers=12": 12, "name": 12, "pid": "x", "config": [1], "error": "boom",
               "attempts": {}, "environment": "x", "heartbeat_at": 5, "layers[0].index": "z",
               "seed": 1.5, "flush_seconds": "fast"}


def _nested(meta_key: str, value) -> dict:
    """run.json overrides that put ``value`` at ``layers[0].index``-style keys."""
    from ._cli import LAYERS

    key = meta_key.split("=")[0]
    if key.startswith("layers[0]."):
        layers = [{"name": n, "index": i, "module": "m", "kind": "Linear", "shape": [8, 8], "numel": 64}
                  for i, n in enumerate(LAYERS)]
        layers[0][key.split(".", 1)[1]] = value
        return {"layers": layers}
    if key == "error.step":
        return {"status": "crashed", "error": {"type": "RuntimeError", "message": "boom", "traceback": "",
                                               "step": value}}
    if key == "attempts[0].first_step":
        return {"attempts": [{"started_at": "2026-01-01T00:00:00+00:00", "first_step": value}]}
    if key == "pid":
        return {"pid": value, "host": os.uname().nodename, "status": "running"}
    return {key: value}


def numbers_and_types(work: Path, fig: Figures) -> None:
    """Ints beyond 64 bits: a warning and "unknown"; wrong types: a one-line error each."""
    big = work / "big"
    for i, key in enumerate(TOO_BIG):
        write_run(big / key.replace("[", "_").replace("]", ""), _nested(key, TOO_BIG[key]), seed=i)
    dup = work / "big" / "duplicate-columns"
    write_run(dup, seed=9)
    part(dup, "scalars", pa.Table.from_arrays([pa.array([1, 2], pa.int64()), pa.array([0.0, 1.0]),
                                               pa.array([9.0, 9.0]), pa.array([9.0, 9.0])],
                                              names=["step", "time", "loss", "loss"]), seq=1)
    part(dup, "layers", pa.Table.from_arrays([pa.array([0], pa.int64()), pa.array([0], pa.int64()),
                                              pa.array(["embed.weight"]), pa.array([1.0], pa.float32()),
                                              pa.array([1.0], pa.float32())],
                                             names=["step", "step", "layer", "grad_norm", "weight_norm"]), seq=1)
    proc = cli(fig, "numbers: audit", "audit", str(big), "--format", "json", "--workers", "1", "-q",
               allowed=(0, 1))
    rows = _json(fig, "numbers: audit", proc.stdout) or []
    for row in rows:
        codes = {f["code"] for f in row["findings"]}
        if codes & {"analysis_crashed", "unreadable_run"}:
            fig.problem("tracebacks", f"numbers: {row['run']}: {row['warnings'][:1]}")
        elif not row["warnings"]:
            fig.problem("rows_lost_or_duplicated", f"numbers: {row['run']}: value dropped without a warning")
    if len(rows) != len(TOO_BIG) + 1:
        fig.problem("rows_lost_or_duplicated", f"numbers: {len(rows)} rows for {len(TOO_BIG) + 1} runs")
    dup = next((r for r in rows if r["run"].endswith("duplicate-columns")), None)
    if dup is None or sum("more than once" in w for w in dup["warnings"]) != 2:
        fig.problem("rows_lost_or_duplicated", "numbers: the parts with duplicate columns were not reported")
    # `report` exits 1 when a finding reaches --fail-on (error by default), as analyze does.
    cli(fig, "numbers: report", "report", *sorted(str(p) for p in big.iterdir()), "-o", str(work / "big-out"),
        allowed=(0, 1, 2))
    cli(fig, "numbers: analyze pid", "analyze", str(big / "pid"), "--format", "json", allowed=(0, 1))
    wrong = work / "wrong"
    for i, key in enumerate(WRONG_TYPES):
        write_run(wrong / key.replace("[", "_").replace("]", "").replace("=", "-"), _nested(key, WRONG_TYPES[key]),
                  seed=i)
    proc = cli(fig, "types: audit", "audit", str(wrong), "--format", "json", "--workers", "1", "-q", allowed=(1,))
    rows = _json(fig, "types: audit", proc.stdout) or []
    if len(rows) != len(WRONG_TYPES):
        fig.problem("rows_lost_or_duplicated", f"types: {len(rows)} rows for {len(WRONG_TYPES)} runs")
    for row in rows:
        codes = [f["code"] for f in row["findings"]]
        if codes != ["unreadable_run"] or "\n" in row["warnings"][0]:
            fig.problem("tracebacks", f"types: {row['run']}: {codes} {row['warnings'][:1]}")
    for key in ("layers", "layers=12"):
        proc = cli(fig, f"types: analyze {key}", "analyze", str(wrong / key.replace("=", "-")), allowed=(2,))
        if b'"layers"' not in proc.stderr:
            fig.problem("tracebacks", f"types: {key}: the error does not name the key: {proc.stderr[:120]!r}")


def imported_steps(work: Path, fig: Figures) -> None:
    """A CSV step of 2**63 (and 10**30) is skipped with a note, not an OverflowError."""
    src = work / "big-steps.csv"
    src.write_text("step,loss\n" + "".join(f"{s},{2.0 / (s + 1):.4f}\n" for s in range(60))
                   + "9223372036854775808,0.1\n1000000000000000000000000000000,0.1\n")
    proc = cli(fig, "numbers: import csv", "import", "csv", str(src), str(work / "imported"), allowed=(0,))
    if b"64-bit" not in proc.stdout:
        fig.problem("rows_lost_or_duplicated", "numbers: import csv: the skipped rows are not reported")
    cli(fig, "numbers: analyze csv", "analyze", str(src), "--format", "json", allowed=(0, 1))
    from . import hostile_text

    hostile_text.imported_text_steps(work, fig)  # the console log, JSON lines, trainer_state.json


def non_utf8_path(work: Path, fig: Figures) -> None:
    """A run directory whose name is not valid UTF-8 reads exactly like its UTF-8 twin."""
    tree = work / "bytes"
    twin = write_run(tree / "twin", seed=3)
    odd = Path(os.fsdecode(os.fsencode(str(tree)) + b"/run-\xff\xfe-latin1"))
    shutil.copytree(twin, odd)
    proc = cli(fig, "strings: audit non-UTF-8", "audit", str(tree), "--format", "json", "--workers", "1", "-q",
               allowed=(0, 1))
    rows = _json(fig, "strings: non-UTF-8", proc.stdout) or []
    if len(rows) != 2:
        fig.problem("rows_lost_or_duplicated", f"strings: non-UTF-8: {len(rows)} rows for 2 runs")
        return
    a, b = ({k: v for k, v in r.items() if k not in ("run", "name")} for r in rows)
    if a != b or a["warnings"]:
        fig.problem("rows_lost_or_duplicated", f"strings: the non-UTF-8 run reads differently: {a} vs {b}")
    cli(fig, "strings: analyze non-UTF-8", "analyze", str(odd), allowed=(0, 1))


def _json(fig: Figures, label: str, out: bytes):
    try:
        return json.loads(out)
    except ValueError as exc:
        fig.problem("tracebacks", f"{label}: output is not JSON ({exc})")
        return None


# -- output that cannot be written ----------------------------------------------

def output_paths(work: Path, fig: Figures) -> None:
    """Missing, impossible, read-only, inside-a-run, symlinked-temp targets."""
    run = write_run(work / "out-cases" / "run", seed=4)
    (work / "a-file").write_text("not a folder")
    guarded = snapshot(work, skip=(work / "created",))
    for label, args in [("missing folder", ["audit", str(run), "-o", str(work / "missing" / "x.md")]),
                        ("under a file", ["report", str(run), "-o", str(work / "a-file" / "sub")]),
                        ("impossible", ["report", str(run), "-o", "/proc/runlens-nope"]),
                        ("compare missing", ["compare", str(run), "--baseline", str(run), "-o",
                                             str(work / "missing" / "c.md")]),
                        ("run.json", ["audit", str(run), "-o", str(run / "run.json")]),
                        ("run dir", ["report", str(run), "-o", str(run)]),
                        ("table folder", ["report", str(run), "-o", str(run / "scalars")]),
                        ("import into run", ["import", "csv", str(work / "a-file"), str(run / "events" / "x")])]:
        cli(fig, f"output: {label}", *args, allowed=(2,))
    count_changes(fig, "output: refused targets", guarded, snapshot(work, skip=(work / "created",)))
    _read_only(work, run, fig)
    _symlinked_temps(work, run, fig)
    _file_size_limit(work, run, fig)


def _stem(run: Path) -> str:
    """The file name stem ``runlens report RUN`` gives the run (the naming rule may take the path)."""
    from runlens.io.output import report_stem

    try:
        return report_stem(run.name, str(run))
    except TypeError:
        return report_stem(run.name)


def _earlier(out: Path, run: Path) -> dict[str, str]:
    """An earlier report of ``run`` in ``out``, under the names a new one would replace."""
    out.mkdir(parents=True, exist_ok=True)
    for name in (f"{_stem(run)}.html", f"{_stem(run)}.md", "run.md"):
        (out / name).write_text(f"EARLIER {name}")
    return snapshot(out)


def _check_failed_write(fig: Figures, label: str, out: Path, before: dict[str, str]) -> None:
    if snapshot(out) != before:
        fig.problem("rows_lost_or_duplicated", f"{label}: the earlier report was not left intact")
    if stray_temps(out):
        fig.problem("writes_outside", f"{label}: temporary files left behind: {stray_temps(out)}")


def _read_only(work: Path, run: Path, fig: Figures) -> None:
    prefix = drop_dac()
    if prefix is None:
        fig.skipped.append("read-only folder: root without setpriv cannot be made to obey permissions")
        return
    out = work / "read-only"
    before = _earlier(out, run)
    out.chmod(0o555)
    try:
        cli(fig, "output: read-only", "report", str(run), "-o", str(out), allowed=(2,), prefix=prefix)
    finally:
        out.chmod(0o755)
    _check_failed_write(fig, "output: read-only", out, before)


def _file_size_limit(work: Path, run: Path, fig: Figures) -> None:
    """A disk that fills during the write (RLIMIT_FSIZE: no root needed)."""
    out = work / "fsize"
    before = _earlier(out, run)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16_384, 16_384))

    cli(fig, "output: file size limit", "report", str(run), "-o", str(out), allowed=(2,), preexec=limit)
    _check_failed_write(fig, "output: file size limit", out, before)


def full_disk(work: Path, fig: Figures) -> bool:
    """A real ENOSPC: a 1 MiB tmpfs filled to its last pages. Needs root (False: skipped)."""
    mnt = work / "tmpfs"
    mnt.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        fig.skipped.append("full disk: needs root to mount a small tmpfs")
        return False
    try:
        run = write_run(work / "disk-run", seed=5)
        before = _earlier(mnt, run)
        with open(mnt / "filler", "wb") as fh:
            try:
                fh.write(b"\0" * (1 << 20))
            except OSError:
                pass
        before = snapshot(mnt)
        cli(fig, "output: full disk", "report", str(run), "-o", str(mnt), allowed=(2,))
        cli(fig, "output: full disk audit", "audit", str(run), "-o", str(mnt / "run.md"), "--format", "md",
            allowed=(2,))
        _check_failed_write(fig, "output: full disk", mnt, before)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
    return True


def _symlinked_temps(work: Path, run: Path, fig: Figures) -> None:
    """Symlinks planted at every temporary name runlens ever used must not be written through."""
    victims = work / "victims"
    victims.mkdir()
    out, reports = work / "shared-out", work / "shared-reports"
    out.mkdir()
    reports.mkdir()
    from runlens.audit.worker import report_name

    stem = _stem(run)
    names = [".run.html.tmp", ".run.md.tmp", ".index.html.tmp", ".summary.md.tmp", f".{stem}.html.tmp",
             f".{stem}.md.tmp"]
    for i, name in enumerate(names):
        (victims / f"v{i}").write_text("victim")
        (out / name).symlink_to(victims / f"v{i}")
    (victims / "r").write_text("victim")
    (reports / (report_name(str(run), "run") + ".tmp")).symlink_to(victims / "r")
    before = snapshot(work, skip=(out, reports))
    cli(fig, "output: symlinked temps", "report", str(run), str(run), "-o", str(out), allowed=(0, 1, 2))
    cli(fig, "output: symlinked temps audit", "audit", str(run), "--reports", str(reports), "-o",
        str(out / "summary.md"), "--format", "md", "-q", allowed=(0, 1))
    count_changes(fig, "output: symlinked temps", before, snapshot(work, skip=(out, reports)))


def campaign(work: Path) -> Figures:
    """Every class once; the figures of docs/reliability.md section 6."""
    from . import hostile_text

    fig = Figures()
    for step in (numbers_and_types, imported_steps, non_utf8_path, output_paths, full_disk,
                 hostile_text.injections, hostile_text.omission):
        folder = work / step.__name__
        folder.mkdir(parents=True, exist_ok=True)
        step(folder, fig)
    return fig


if __name__ == "__main__":  # python -m tests.reliability.hostile: section 6 of docs/reliability.md alone
    import tempfile
    import time

    from .__main__ import _table, hostile_rows

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        figures = campaign(Path(tmp))
        print(_table(hostile_rows(figures, time.time() - t0)))
        print("\n".join(f"- {e!r}" for e in figures.examples))
