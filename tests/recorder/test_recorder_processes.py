"""The recorder's crash guarantees, proven with real child processes."""

from __future__ import annotations

import os
import signal

import pyarrow.parquet as pq
import pytest
from recorder_testutil import meta, parts, popen, read_table, run

pytestmark = pytest.mark.timeout(180)


def _wait_for_step(proc, at_least: int) -> int:
    """Read the child's ``step N`` lines until N >= at_least; return the last N seen."""
    last = -1
    for line in proc.stdout:
        if line.startswith("step "):
            last = int(line.split()[1])
            if last >= at_least:
                return last
    raise AssertionError(f"child ended before step {at_least}: rc={proc.wait()} {proc.stderr.read()}")


def _steps(run_dir) -> list[int]:
    t = read_table(run_dir, "scalars")
    return [] if t is None else t.column("step").to_pylist()


def test_sigkill_loses_at_most_the_unflushed_rows(tmp_path, check_runlog):
    run_dir = tmp_path / "killed"
    proc = popen("child_train.py", run_dir, "--steps", "100000", "--flush-every", "5")
    try:
        last = _wait_for_step(proc, 63)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    check_runlog(run_dir)
    for table in ("scalars", "layers"):
        for _, _, path in parts(run_dir, table):
            pq.read_table(path)  # every final part is complete
    steps = _steps(run_dir)
    assert steps == list(range(len(steps))), "flushed steps must be contiguous from 0"
    assert steps[-1] >= last - 5, f"lost more than flush_every rows: on disk up to {steps[-1]}, child at {last}"
    assert meta(run_dir)["status"] == "running"  # a reader calls it killed: the pid is gone


def test_exception_is_recorded_and_reraised(tmp_path, check_runlog):
    run_dir = tmp_path / "crash"
    proc = run("child_train.py", run_dir, "--steps", "30", "--crash-at", "7")
    assert proc.returncode == 1
    assert "ValueError: boom at step 7" in proc.stderr  # propagated unchanged to the interpreter
    check_runlog(run_dir)
    m = meta(run_dir)
    assert m["status"] == "crashed"
    assert m["error"]["type"] == "ValueError"
    assert m["error"]["message"] == "boom at step 7"
    assert m["error"]["step"] == 7
    assert "raise ValueError" in m["error"]["traceback"]
    assert _steps(run_dir) == list(range(7))
    events = read_table(run_dir, "events")
    assert events.column("kind").to_pylist() == ["exception"]


def test_exception_without_with_reaches_excepthook(tmp_path, check_runlog):
    run_dir = tmp_path / "crash_nowith"
    proc = run("child_train.py", run_dir, "--steps", "30", "--crash-at", "4", "--no-with")
    assert proc.returncode == 1
    assert "ValueError: boom at step 4" in proc.stderr
    check_runlog(run_dir)
    m = meta(run_dir)
    assert (m["status"], m["error"]["type"], m["error"]["step"]) == ("crashed", "ValueError", 4)
    assert _steps(run_dir) == list(range(4))


def test_sigterm_flushes_before_the_process_ends(tmp_path, check_runlog):
    run_dir = tmp_path / "preempted"
    proc = popen("child_train.py", run_dir, "--steps", "100000", "--flush-every", "1000", "--sleep", "0.01")
    try:
        last = _wait_for_step(proc, 25)
        os.kill(proc.pid, signal.SIGTERM)
        rc = proc.wait(timeout=60)
    finally:
        proc.kill()
    assert rc == -signal.SIGTERM  # default behaviour re-raised after the flush
    check_runlog(run_dir)
    steps = _steps(run_dir)
    assert steps[-1] >= last and steps == list(range(len(steps)))
    kinds = read_table(run_dir, "events").column("message").to_pylist()
    assert any("SIGTERM" in k for k in kinds)


def test_resume_repeats_steps_and_appends_an_attempt(tmp_path, check_runlog):
    run_dir = tmp_path / "resumed"
    first = run("child_train.py", run_dir, "--steps", "20", "--crash-at", "15", "--flush-every", "4")
    assert first.returncode == 1
    second = run("child_train.py", run_dir, "--steps", "20", "--start-step", "10", "--attempt", "2",
                 "--flush-every", "4")
    assert second.returncode == 0, second.stderr
    check_runlog(run_dir)
    m = meta(run_dir)
    assert m["status"] == "finished" and m["error"] is None
    assert len(m["attempts"]) == 2
    assert m["attempts"][0]["status"] == "crashed"
    assert m["attempts"][0]["error"]["type"] == "ValueError"
    assert m["attempts"][1]["first_step"] == 10
    assert m["config"]["attempt"] == 2
    t = read_table(run_dir, "scalars")
    assert t.column("step").to_pylist() == list(range(20))
    attempt = dict(zip(t.column("step").to_pylist(), t.column("attempt").to_pylist(), strict=True))
    assert [attempt[s] for s in (9, 10, 14, 15)] == [1, 2, 2, 2]  # repeated steps: newest wins
    layers = read_table(run_dir, "layers")
    assert layers.num_rows == 20 * len(m["layers"])


def test_failing_disk_does_not_stop_training(tmp_path, check_runlog):
    run_dir = tmp_path / "full_disk"
    # Small scalars parts still fit under the file size limit; layers parts never do.
    proc = run("child_train.py", run_dir, "--steps", "400", "--flush-every", "10",
               "--fsize-limit", "3500")
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stdout and "step 399" in proc.stdout
    warned = [line for line in proc.stdout.splitlines() if line.startswith("warning:")]
    assert warned and "writing layers part" in warned[0] and "training goes on" in warned[0]
    assert len(warned) <= 2, warned  # one warning per failure spell (+ compaction), not one per flush
    check_runlog(run_dir)
    assert _steps(run_dir) == list(range(400))
    assert not parts(run_dir, "layers")
    messages = read_table(run_dir, "events").column("message").to_pylist()
    assert any("writing layers part" in m for m in messages)  # the run itself tells the story


def test_two_rank_gloo_training_writes_per_rank_parts(tmp_path, check_runlog):
    run_dir = tmp_path / "ddp"
    proc = run("child_ddp.py", run_dir, timeout=170)
    assert proc.returncode == 0, proc.stderr
    check_runlog(run_dir)
    ranks = {table: {rank for _, rank, _ in parts(run_dir, table)} for table in ("scalars", "layers")}
    assert ranks == {"scalars": {0, 1}, "layers": {0}}
    assert meta(run_dir)["environment"]["world_size"] == 2
    assert meta(run_dir, "run-r1.json")["status"] == "finished"
    # The recorded gradient is the all-reduced one: rank 0's per-layer norm equals
    # the norm of the full-batch gradient the child computed without DDP.
    expected = {line.split()[1]: float(line.split()[2])
                for line in proc.stdout.splitlines() if line.startswith("ref ")}
    layers = read_table(run_dir, "layers")
    got = {name: g for name, g, s in zip(layers.column("layer").to_pylist(),
                                         layers.column("grad_norm").to_pylist(),
                                         layers.column("step").to_pylist(), strict=True) if s == 0}
    assert set(got) == {"module." + k for k in expected} or set(got) == set(expected)
    for name, value in expected.items():
        key = name if name in got else "module." + name
        assert got[key] == pytest.approx(value, rel=1e-4)
