"""Round-3 cases for remote runs and lying Parquet footers (see round3.py).

Remote runs are staged from ``lying://``, fsspec's in-memory filesystem whose listing can
announce any size and whose files can stream without end (``_remote_fs``), installed in
the CLI's child process before runlens starts; an HTTP server that accepts and never
answers stands for a stalled network filesystem. The Parquet cases copy the 2x10^8-row part
of ``round3_cases`` and patch its footer to claim 1,000 rows (``parquet_lies``).
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
from pathlib import Path

from ._cli import write_run
from .parquet_lies import understate_rows
from .round3 import case, cli
from .round3_cases import _tall_source


def _remote(work: Path, *args: str, allowed, **lies) -> tuple:
    """``runlens ARGS`` with ``lying://bucket/run`` holding a copy of a small local run."""
    local = write_run(work / "run")
    prefix = (f"from tests.reliability._remote_fs import install\n"
              f"install({str(local)!r}, 'bucket/run', **{lies!r})")
    return cli(*args, allowed=allowed, code_prefix=prefix), local


@case("consistency", "a remote run staged whole (audit lying://)")
def _remote_whole(work: Path) -> list[str]:
    got, _ = _remote(work, "audit", "lying://bucket/run", "--format", "json", allowed=(0,))
    if got.problems:
        return got.problems
    steps = json.loads(got.out)[0]["key_numbers"]["steps"]
    return [] if steps == 240 else [f"rows: {steps} of 240 steps read from the remote run"]


@case("memory", "a remote part whose listing announces 3 GiB (compare)")
def _remote_announced(work: Path) -> list[str]:
    got, local = _remote(work, "compare", "lying://bucket/run", str(work / "run"), allowed=(2,),
                         announced={"scalars/r0-00000000.parquet": 3 << 30})
    named = b"lying://bucket/run/scalars/r0-00000000.parquet" in got.err
    return got.problems + ([] if named else [f"other: the refusal names no URL: {got.err[:200]!r}"])


@case("memory", "a remote run.json that never ends (compare)")
def _remote_endless(work: Path) -> list[str]:
    # The listing says 818 bytes; the server sends zeros for ever. Counted while copying.
    got, _ = _remote(work, "compare", "lying://bucket/run", str(work / "run"), allowed=(2,),
                     endless=("run.json",))
    return got.problems + ([] if b"lying://bucket/run/run.json" in got.err else
                           [f"other: the refusal names no URL: {got.err[:200]!r}"])


@case("memory", "a remote part that never ends (audit: an unreadable row)")
def _remote_endless_part(work: Path) -> list[str]:
    got, _ = _remote(work, "audit", "lying://bucket/run", "--format", "json", allowed=(1,),
                     endless=("scalars/r0-00000000.parquet",))
    if got.problems:
        return got.problems
    row = json.loads(got.out)[0]
    return [] if row["findings"][0]["code"] == "unreadable_run" else [f"other: {row['findings'][:1]}"]


@case("hangs", "an HTTP server that accepts and never answers (compare)")
def _http_silent(work: Path) -> list[str]:
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.extend(iter(lambda: server.accept()[0], None)), daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/run"
    try:
        # aiohttp's own default waits 5 minutes for each response; ours, shortened here, 2 s.
        return cli("compare", url, str(write_run(work / "run")), allowed=(2,),
                   code_prefix="import runlens.io.bounded as b; b.CONNECT_SECONDS = b.READ_SECONDS = 2").problems
    finally:
        server.close()
        for s in held:
            s.close()


def _understated(run: Path) -> None:
    target = run / "scalars" / "r0-00000001.parquet"
    shutil.copyfile(_tall_source(200_000_000), target)
    understate_rows(target, 1_000)


def _refused(text: bytes) -> list[str]:
    # Under the 2 GB limit a reader that believes the footer fails its allocation and calls the
    # part unreadable; without the limit it would hold 4.8 GB. Either way it decoded too much.
    if b"malloc" in text or b"allocat" in text:
        return ["memory: the part was decoded until an allocation failed"]
    refused = b"r0-00000001" in text and b"200,000,000 rows, more than" in text
    return [] if refused else ["other: no line names the part and its rows"]


@case("memory", "a 2x10^8-row part whose footer claims 1,000 rows (analyze)")
def _lying_analyze(work: Path) -> list[str]:
    run = write_run(work / "run")
    _understated(run)
    got = cli("analyze", str(run), "--format", "json", allowed=(0, 1))
    if got.problems:
        return got.problems
    steps = json.loads(got.out)["key_numbers"]["steps"]
    return _refused(got.out) + ([] if steps == 240 else [f"rows: {steps} of the 240 good steps read"])


@case("memory", "a 2x10^8-row part whose footer claims 1,000 rows (validate)")
def _lying_validate(work: Path) -> list[str]:
    run = write_run(work / "run")
    _understated(run)
    got = cli("validate", str(run), allowed=(1,))
    return got.problems or _refused(got.out + got.err)
