"""``runlens import`` through the real CLI (a subprocess) on sources that are the wrong kind of
thing: a folder where a file is read, and steps too big for a 64-bit integer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

BIG = 99999999999999999999  # > 2**64: neither int64 nor uint64 holds it
N = 40


def runlens(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runlens", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=300)


def steps_of(run: Path) -> list[int]:
    return sorted(s for part in (run / "scalars").glob("*.parquet") for s in pq.read_table(part)
                  .column("step").to_pylist())


@pytest.mark.parametrize("kind", ["csv", "text", "jsonl"])
def test_a_directory_is_called_a_directory(tmp_path, kind):
    (tmp_path / "logs").mkdir()
    proc = runlens("import", kind, tmp_path / "logs", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("runlens: ")
    assert "is a directory" in proc.stderr and "no such file" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_file_is_still_missing(tmp_path):
    proc = runlens("import", "csv", tmp_path / "nope.csv", tmp_path / "out")
    assert proc.returncode == 2 and "no such file" in proc.stderr and "directory" not in proc.stderr


def _text(folder: Path) -> Path:
    path = folder / "train.log"
    path.write_text("".join(f"step {i} loss {2 - i * 0.01:.3f}\n" for i in range(N)) + f"step {BIG} loss 0.5\n")
    return path


def _jsonl(folder: Path) -> Path:
    path = folder / "metrics.jsonl"
    lines = [json.dumps({"step": i, "loss": 2 - i * 0.01}) for i in range(N)]
    lines += [f'{{"step": {BIG}, "loss": 0.5}}', '{"step": 1e300, "loss": 0.5}']
    path.write_text("\n".join(lines) + "\n")
    return path


def _hf(folder: Path) -> Path:
    path = folder / "trainer_state.json"
    history = [{"step": i, "loss": 2 - i * 0.01} for i in range(N)] + [{"step": BIG, "loss": 0.5}]
    path.write_text(json.dumps({"global_step": BIG, "log_history": history}))
    return path


def _mlflow(folder: Path) -> Path:
    run = folder / "mlruns" / "0" / "r1"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: r1\nrun_name: big\nstart_time: 1000\nstatus: 3\n")
    lines = [f"{1_700_000_000_000 + i} {2 - i * 0.01} {i}" for i in range(N)] + [f"1700000009999 0.5 {BIG}"]
    (run / "metrics" / "loss").write_text("\n".join(lines) + "\n")
    return run


def _wandb(folder: Path) -> Path:
    path = folder / "wandb_export.csv"
    path.write_text("Step,run-a - train/loss\n" + "".join(f"{i},{2 - i * 0.01}\n" for i in range(N))
                    + f"{BIG},0.5\n")
    return path


def _tensorboard(folder: Path) -> Path:
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder / "tb"))
    # -1 and -2**63 are what uint64 steps 2**64-1 and 2**63 look like in Event's int64 field.
    for i in [*range(N), -1, -(2 ** 63)]:
        writer.add_event(event_pb2.Event(wall_time=1e9 + (i % 1000), step=i, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="train/loss", simple_value=2 - (i % 100) * 0.01)])))
    writer.close()
    return folder / "tb"


@pytest.mark.parametrize("kind,make", [("text", _text), ("jsonl", _jsonl), ("hf", _hf), ("mlflow", _mlflow),
                                       ("wandb", _wandb), ("tensorboard", _tensorboard)])
def test_a_step_beyond_64_bits_is_skipped_with_a_note(tmp_path, kind, make):
    src = make(tmp_path)
    out = tmp_path / "out"
    proc = runlens("import", kind, src, out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "64-bit" in proc.stdout or "negative step" in proc.stdout
    assert steps_of(out) == list(range(N))  # every good line kept, nothing wrapped negative
    analyzed = runlens("analyze", out, "--format", "json", "--fail-on", "never")
    assert analyzed.returncode == 0, analyzed.stderr
