"""Staging a remote run is bounded like a local read: a byte ceiling per file and per run,
counted while copying, and network waits with timeouts (runlens/io/remote.py, bounded.py)."""

from __future__ import annotations

import socket
import threading

import fsspec
import pytest

from runlens.errors import RunFormatError, RunlensError
from runlens.io import bounded
from runlens.io.remote import open_run

from ._cli import write_run
from ._remote_fs import install


@pytest.fixture
def memory():
    mem = fsspec.filesystem("memory")
    yield mem
    mem.rm("/limits", recursive=True)


def _log(rows: int) -> bytes:
    return b"step,loss\n" + b"".join(b"%d,%.6f\n" % (i, 1 / (i + 1)) for i in range(rows))


def test_a_remote_log_under_the_ceiling_is_read_and_one_over_it_refused(memory, monkeypatch):
    memory.pipe("/limits/small.csv", _log(100))
    memory.pipe("/limits/big.csv", _log(60_000))  # about 1 MB
    monkeypatch.setattr(bounded, "MAX_STAGED_FILE_BYTES", 256 << 10)
    run = open_run("memory://limits/small.csv")
    assert run.path == "memory://limits/small.csv" and run.scalars.num_rows == 100
    with pytest.raises(RunFormatError, match=r"^memory://limits/big.csv: larger than 262,144 bytes") as err:
        open_run("memory://limits/big.csv")
    assert "\n" not in str(err.value)


def test_a_remote_run_is_staged_whole_and_refused_past_the_run_ceiling(tmp_path, monkeypatch):
    local = write_run(tmp_path / "run")
    install(local, "limits/run")
    try:
        run = open_run("lying://limits/run")
        assert run.path == "lying://limits/run" and run.scalars.num_rows == 240 and run.layers is not None
        size = sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
        monkeypatch.setattr(bounded, "MAX_STAGED_RUN_BYTES", size - 1)
        with pytest.raises(RunFormatError, match=r"^lying://limits/run: larger than .* from one remote run"):
            open_run("lying://limits/run")
    finally:
        fsspec.filesystem("lying").rm("/limits", recursive=True)


@pytest.mark.parametrize("lie", [{"announced": {"scalars/r0-00000000.parquet": 3 << 30}},
                                 {"endless": ("scalars/r0-00000000.parquet",)},
                                 {"endless": ("run.json",)}], ids=["announced", "endless-part", "endless-json"])
def test_a_remote_file_past_its_ceiling_is_refused_by_its_url(tmp_path, monkeypatch, lie):
    # Endless files are counted while copying: the listing announced their honest, small size.
    monkeypatch.setattr(bounded, "MAX_STAGED_FILE_BYTES", 4 << 20)
    monkeypatch.setattr(bounded, "MAX_JSON_BYTES", 4 << 20)
    install(write_run(tmp_path / "run"), "limits/run", **lie)
    try:
        with pytest.raises(RunFormatError, match=r"^lying://limits/run/\S+: larger than 4 MiB"):
            open_run("lying://limits/run")
    finally:
        install(tmp_path / "run", "limits/run")  # no lies left for the next test
        fsspec.filesystem("lying").rm("/limits", recursive=True)


def test_a_silent_http_server_times_out(tmp_path, monkeypatch):
    pytest.importorskip("aiohttp")
    monkeypatch.setattr(bounded, "CONNECT_SECONDS", 1.0)
    monkeypatch.setattr(bounded, "READ_SECONDS", 1.0)
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.extend(iter(lambda: server.accept()[0], None)), daemon=True).start()
    try:
        with pytest.raises(RunlensError, match=r"^http://127\.0\.0\.1:\d+/train\.log: .*Timeout"):
            open_run(f"http://127.0.0.1:{server.getsockname()[1]}/train.log")
        assert held, "the request never reached the server"
    finally:
        server.close()
        for s in held:
            s.close()


def test_network_filesystems_get_the_timeouts():
    import pyarrow.fs as pafs

    timeout = bounded.fsspec_timeouts("https://example.org/run")["client_kwargs"]["timeout"]
    assert (timeout.sock_connect, timeout.sock_read, timeout.total) == (bounded.CONNECT_SECONDS,
                                                                         bounded.READ_SECONDS, None)
    assert bounded.fsspec_timeouts("memory://x") == {}
    local = pafs.LocalFileSystem()
    assert bounded.pyarrow_timeouts(local) is local
    if not hasattr(pafs, "S3FileSystem"):
        pytest.skip("this pyarrow is built without S3")
    s3 = bounded.pyarrow_timeouts(pafs.S3FileSystem(region="us-east-1", anonymous=True))
    options = s3.__reduce__()[1][0]
    assert (options["connect_timeout"], options["request_timeout"]) == (bounded.CONNECT_SECONDS,
                                                                         bounded.READ_SECONDS)
    assert options["region"] == "us-east-1" and options["anonymous"]
