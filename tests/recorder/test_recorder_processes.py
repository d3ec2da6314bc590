"""The recorder's crash guarantees, proven with real child processes."""

from __future__ import annotations

import os
import signal

import pyarrow.parquet as pq
import pytest
from recorder_testutil import meta, parts, popen, read_table, run

pytestmark = pytest.mark.timeout(180)


def _wait_for_step(proc, at_least: int) -> int:
    """Read the child's ``step N ...`` lines until N >= at_least; return the last N seen."""
    return _wait(proc, at_least)[0]


def _wait(proc, at_least: int) -> tuple[int, int]:
    """Like _wait_for_step; also the rows the child's writer had not yet written at that step."""
    last = -1
    for line in proc.stdout:
        if line.startswith("step "):
            words = line.split()
            last, unwritten = int(words[1]), int(words[3]) if len(words) > 3 else 0
            if last >= at_least:
                return last, unwritten
    raise AssertionError(f"child ended before step {at_least}: rc={proc.wait()} {proc.stderr.read()}")


def _steps(run_dir) -> list[int]:
    t = read_table(run_dir, "scalars")
    return [] if t is None else t.column("step").to_pylist()


def _kill_at(run_dir, at: int, *args: str) -> tuple[int, int]:
    proc = popen("child_train.py", run_dir, "--steps", "100000", "--flush-every", "5", *args)
    try:
        last, unwritten = _wait(proc, at)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    return last, unwritten


def _check_killed(run_dir, check_runlog) -> list[int]:
    check_runlog(run_dir)
    for table in ("scalars", "layers"):
        for _, _, path in parts(run_dir, table):
            pq.read_table(path)  # every final part is complete
    steps = _steps(run_dir)
    assert steps == list(range(len(steps))), "flushed steps must be contiguous from 0"
    assert meta(run_dir)["status"] == "running"  # a reader calls it killed: the pid is gone
    return steps


@pytest.mark.parametrize("slow_disk", [0.0, 0.2])
def test_sigkill_loses_at_most_the_queued_rows(tmp_path, check_runlog, slow_disk):
    """What a SIGKILL loses is what was still queued or buffered for the writer thread, nothing written.

    With a slow disk (every part write sleeps) rows really are queued at the kill.
    """
    run_dir = tmp_path / "killed"
    last, unwritten = _kill_at(run_dir, 63, "--slow-disk", str(slow_disk))
    steps = _check_killed(run_dir, check_runlog)
    # At step `last` the writer had written all but `unwritten` rows; written rows are never lost.
    assert len(steps) >= last + 1 - unwritten, (len(steps), last, unwritten)
    if slow_disk:
        assert unwritten > 5, "the slow disk should have left rows queued behind the training"
    else:
        # A disk that keeps up: at most the queue (4 batches of flush_every) and the buffer.
        assert steps[-1] >= last - 5 * 5, f"on disk up to {steps[-1]}, child at {last}"


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
    # Small scalars parts (10 rows, under 4 KB) still fit under the file size limit; layers parts
    # (10 steps of 14 parameters' rows, over 5 KB) never do.
    proc = run("child_train.py", run_dir, "--steps", "400", "--flush-every", "10", "--extra-layers", "4",
               "--fsize-limit", "4500")
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


def _fsdp2_on_cpu() -> str | None:
    """Why FSDP2 cannot run here, or None when it can (gloo, a CPU device mesh)."""
    try:
        import torch.distributed as dist
        from torch.distributed.fsdp import fully_shard  # noqa: F401
        from torch.distributed.tensor import DTensor  # noqa: F401
    except ImportError as e:
        return f"this torch has no FSDP2 ({e})"
    if not dist.is_available() or not dist.is_gloo_available():
        return "this torch was built without gloo"
    return None


@pytest.mark.skipif(_fsdp2_on_cpu() is not None, reason=str(_fsdp2_on_cpu()))
def test_fsdp2_records_full_parameter_statistics_with_one_collective_per_step(tmp_path, check_runlog):
    run_dir = tmp_path / "fsdp"
    proc = run("child_fsdp.py", run_dir, timeout=170)
    assert proc.returncode == 0, proc.stderr
    check_runlog(run_dir)
    m = meta(run_dir)
    assert {x["name"]: x["shape"] for x in m["layers"]}["0.weight"] == [32, 8]  # the unsharded shape
    assert {rank for _, rank, _ in parts(run_dir, "layers")} == {0}
    lines = proc.stdout.splitlines()
    assert sorted(x for x in lines if x.startswith("collectives")) == ["collectives 3"] * 2
    rows = {(r["step"], r["layer"]): r for r in read_table(run_dir, "layers").to_pylist()}
    refs = [x.split() for x in lines if x.startswith("ref ")]
    assert len(refs) == 3 * 6 * 5
    for _, step, name, col, value in refs:
        got = rows[(int(step), name)][col]
        assert got == pytest.approx(float(value), rel=1e-4, abs=1e-7), (step, name, col)
    totals = read_table(run_dir, "scalars").column("grad_norm").to_pylist()
    ref0 = [float(v) for _, s, _, c, v in refs if s == "0" and c == "grad_norm"]
    assert totals[0] == pytest.approx(sum(v * v for v in ref0) ** 0.5, rel=1e-4)
