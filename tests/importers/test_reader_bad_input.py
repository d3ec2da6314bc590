"""Bad input given to `runlens analyze`: a one-line error (exit 2) or a result, never a traceback, in
bounded time and memory. Each case runs the real command in a subprocess with a timeout, so a reader
that hangs or crashes fails the test; no wall-clock time is asserted."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runlens.errors import ImportFailedError


def analyze(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runlens", "analyze", str(path), "--fail-on", "never"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"})


def refused_in_one_line(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("runlens: ")
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert all(w in proc.stderr for w in words), proc.stderr


def test_a_binary_file(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)) * 1000)
    refused_in_one_line(analyze(path), "binary")


def test_an_empty_file(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(b"")
    refused_in_one_line(analyze(path), "empty")


def test_one_line_of_32_mb(tmp_path):
    path = tmp_path / "one_line.log"
    with open(path, "w") as f:
        for _ in range(32):
            f.write("step 1 loss 2.0 " * (1 << 16))
    proc = analyze(path)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 2)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero():
    refused_in_one_line(analyze("/dev/zero"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    refused_in_one_line(analyze(fifo))  # opening it would block forever: the timeout would fail the test


def test_a_gzip_bomb_stops_at_the_limit(tmp_path, monkeypatch):
    from runlens.io.importers import read
    from runlens.io.reader import source

    path = tmp_path / "train.log.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        for i in range(200_000):
            f.write(f"step {i} loss 1.0\n".encode())
    monkeypatch.setattr(source, "MAX_BYTES", 1 << 20)
    with pytest.raises(ImportFailedError, match="once decompressed|after decompression"):
        read("text", path)
    csv = tmp_path / "metrics.csv.gz"
    csv.write_bytes(gzip.compress(b"step,loss\n" + b"".join(b"%d,1.0\n" % i for i in range(200_000))))
    with pytest.raises(ImportFailedError, match="once decompressed"):
        source.read_all(csv, source.MAX_BYTES)


def test_a_table_of_100000_columns(tmp_path):
    path = tmp_path / "wide.csv"
    names = ["step", "loss"] + [f"feature_{i}" for i in range(100_000)]
    rows = [",".join(names)] + [",".join([str(s), str(2.0 - s / 10)] + ["0.5"] * 100_000) for s in range(5)]
    path.write_text("\n".join(rows) + "\n")
    proc = analyze(path)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 2), proc.stderr
    if proc.returncode == 2:
        refused_in_one_line(proc)


def test_a_folder_of_nothing_and_a_json_nested_too_deep(tmp_path):
    (tmp_path / "empty").mkdir()
    refused_in_one_line(analyze(tmp_path / "empty"))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    proc = analyze(deep)
    refused_in_one_line(proc)


def test_a_path_that_does_not_exist(tmp_path):
    refused_in_one_line(analyze(Path(tmp_path) / "nope.log"), "no such file")
