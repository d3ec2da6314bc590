"""The writer's background thread, its slow-disk policy, the one-writer marker, kill-safe
compaction of events, and run directories whose names are not valid UTF-8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from recorder_testutil import ROOT, child_env, meta, parts, read_table, run
from torch import nn
from torch_steps import train_steps

from recorders import _parts
from recorders.torch import Recorder
from recorders.writer import RunWriter, WriterBusyError

torch.set_num_threads(1)


@pytest.fixture
def gated_disk(monkeypatch):
    """Part writes wait for ``gate`` (a disk that hangs); records which thread wrote."""
    gate, threads = threading.Event(), []
    real = _parts.write_part

    def slow(*a, **k):
        threads.append(threading.current_thread())
        assert gate.wait(60), "test never opened the gate"
        return real(*a, **k)

    monkeypatch.setattr(_parts, "write_part", slow)
    return gate, threads


def test_a_hanging_disk_does_not_hold_up_the_training_thread(tmp_path, gated_disk, check_runlog):
    gate, threads = gated_disk
    w = RunWriter(tmp_path / "r", heartbeat=False, flush_every=2, queue_batches=8)
    for s in range(10):  # five flushes, every one of them stuck on the disk
        w.add_scalars(s, float(s))
    # Had a flush run on this thread, the loop would be stuck in the first write until the gate opens.
    assert not gate.is_set() and w.summary()["unwritten_steps"] == 10
    deadline = time.monotonic() + 30
    while not threads and time.monotonic() < deadline:  # the writer thread reaches the disk
        time.sleep(0.01)
    assert threads and all(t is not threading.current_thread() for t in threads)
    gate.set()
    w.close()
    check_runlog(tmp_path / "r")
    assert read_table(tmp_path / "r", "scalars").column("step").to_pylist() == list(range(10))


def test_a_writer_that_falls_behind_blocks_briefly_then_coarsens_layers(tmp_path, gated_disk, check_runlog):
    gate, _ = gated_disk
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    rec = Recorder(tmp_path / "r", model, opt, flush_every=1, handle_signals=False)
    rec.writer.block_seconds = 0.01
    for _ in range(12):  # the queue holds 4 batches: the rest cannot be handed over
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        rec.step(loss)
    assert rec.layers_every > 1 and rec.writer.behind > 0
    gate.set()
    rec.close()
    check_runlog(tmp_path / "r")
    # Nothing lost: what the queue could not take stayed in the buffer.
    assert read_table(tmp_path / "r", "scalars").column("step").to_pylist() == list(range(12))
    messages = read_table(tmp_path / "r", "events").column("message").to_pylist()
    assert any("disk is slower than training" in m for m in messages)
    assert any("layers_every raised from 1 to 2" in m for m in messages)
    layer_steps = sorted(set(read_table(tmp_path / "r", "layers").column("step").to_pylist()))
    assert layer_steps != list(range(12))  # coarser after the writer fell behind
    assert meta(tmp_path / "r")["config"]["layers_every"] == rec.layers_every


def test_a_second_writer_of_the_same_rank_is_refused(tmp_path, check_runlog):
    run_dir = tmp_path / "r"
    w = RunWriter(run_dir, heartbeat=False)
    with pytest.raises(WriterBusyError, match=r"already being written by pid \d+"):
        RunWriter(run_dir, heartbeat=False)
    other = RunWriter(run_dir, rank=1, world_size=2, heartbeat=False)  # another rank: its own parts
    code = (f"from recorders.writer import RunWriter\n"
            f"RunWriter({str(run_dir)!r}, heartbeat=False)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("recorders._lock.WriterBusyError: runlens: ") and f"pid {os.getpid()}" in last
    w.add_scalars(0, 1.0)
    other.add_scalars(0, 2.0)
    other.close()
    w.close()
    RunWriter(run_dir, heartbeat=False).close()  # free again once closed
    check_runlog(run_dir)
    assert not [n for n in os.listdir(run_dir) if n.endswith(".lock")]


def test_a_marker_left_by_a_killed_writer_does_not_block_the_resume(tmp_path, check_runlog):
    run_dir = tmp_path / "r"
    proc = run("child_train.py", run_dir, "--steps", "5", "--crash-at", "3")
    assert proc.returncode == 1
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (run_dir / ".writer-r0.lock").write_text(json.dumps({"pid": int(dead), "host": os.uname().nodename}))
    second = run("child_train.py", run_dir, "--steps", "6", "--start-step", "3")
    assert second.returncode == 0, second.stderr
    check_runlog(run_dir)
    assert read_table(run_dir, "scalars").column("step").to_pylist() == list(range(6))


def test_a_kill_inside_compaction_never_duplicates_events(tmp_path, monkeypatch, check_runlog):
    run_dir = tmp_path / "r"
    w = RunWriter(run_dir, heartbeat=False, flush_every=2)
    for s in range(8):
        w.add_scalars(s, float(s))
        w.add_event(s, "user", f"note {s}")
    w.flush()
    assert len(parts(run_dir, "events")) > 1

    def killed(path):
        raise OSError("simulated kill between the merged part and the removal")

    monkeypatch.setattr(_parts.os, "remove", killed)
    with pytest.warns(RuntimeWarning, match="compacting"):
        w.close()
    monkeypatch.undo()
    names = [p.name for _, _, p in parts(run_dir, "events")]
    merged = pq.read_schema(parts(run_dir, "events")[-1][2]).metadata[b"runlens.replaces"].decode()
    assert len(names) > 1 and merged  # old parts and their merge, side by side on disk
    import runlens

    loaded = runlens.load_run(run_dir)
    assert loaded.events.num_rows == 8 and sorted(loaded.events.column("message").to_pylist()) == sorted(
        f"note {s}" for s in range(8))
    check_runlog(run_dir)
    RunWriter(run_dir, heartbeat=False).close()  # the next writer finishes the interrupted compaction
    assert len(parts(run_dir, "events")) == 1
    assert read_table(run_dir, "events").num_rows == 8


def test_a_run_directory_that_is_not_utf8_is_written_and_read(tmp_path, check_runlog):
    run_dir = os.fsdecode(os.fsencode(tmp_path) + b"/run-\xff\xfe")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with Recorder(run_dir, model, opt, flush_every=2, handle_signals=False) as rec:
        train_steps(rec, model, opt, 5, (4, 4))
    assert not rec.warnings
    check_runlog(run_dir)
    assert read_table(run_dir, "scalars").column("step").to_pylist() == list(range(5))
    assert json.loads(open(os.path.join(run_dir, "run.json"), "rb").read())["name"].startswith("run-")
    import runlens

    loaded = runlens.load_run(run_dir)
    assert loaded.scalars.num_rows == 5 and not loaded.warnings


def test_interpreter_exit_without_close_writes_the_buffered_rows(tmp_path, check_runlog):
    code = ("import torch\nfrom torch import nn\nfrom recorders.torch import Recorder\n"
            "m = nn.Linear(3, 1)\no = torch.optim.SGD(m.parameters(), lr=0.1)\n"
            f"rec = Recorder({str(tmp_path / 'r')!r}, m, o, flush_every=1000)\n"
            "for _ in range(7):\n"
            "    o.zero_grad(); l = m(torch.randn(2, 3)).sum(); l.backward(); o.step(); rec.step(l)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    check_runlog(tmp_path / "r")
    assert read_table(tmp_path / "r", "scalars").column("step").to_pylist() == list(range(7))
    assert np.isfinite(read_table(tmp_path / "r", "scalars").column("grad_norm").to_pylist()).all()
