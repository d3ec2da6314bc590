"""Round-3 cases: reads consistent with writers, no hang, bounded memory (see round3.py)."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.runs import write_part

from ._cli import part, write_run
from .round3 import case, cli


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _scalars(steps, rank_value: float) -> pa.Table:
    steps = np.asarray(steps, dtype=np.int64)
    return pa.table({"step": steps, "time": steps * 1.0, "loss": np.full(len(steps), rank_value)})


def _rank_part(run: Path, table: str, rank: int, seq: int, data: pa.Table | bytes) -> None:
    if not isinstance(data, bytes):
        write_part(run, table, data, rank, seq)
        return
    # bytes are a corrupt part on purpose: no writer of well-formed parts makes one
    target = run / table / f"r{rank}-{seq:08d}.parquet"
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(data)


# -- consistency ----------------------------------------------------------------

@case("consistency", "100 reads racing compaction")
def _race(work: Path) -> list[str]:
    from .compaction_race import race

    got = race(work, reads=100)
    problems = []
    if got.rows_lost or got.rows_duplicated:
        problems.append(f"rows: {got.reads_short} of {got.reads} reads short: {got.rows_lost} lost, "
                        f"{got.rows_duplicated} duplicated ({got.example})")
    if got.reads < 100 or got.compactions_during < 1:
        problems.append(f"other: {got.reads} reads, {got.compactions_during} compactions ({got.example})")
    return problems


def _two_ranks(work: Path, table: str, broken_rank0: int) -> Path:
    run = write_run(work / "run")
    shutil.rmtree(run / table, ignore_errors=True)
    for seq in range(2):
        good = _scalars(range(seq * 20, seq * 20 + 20), 0.0)
        if table == "evals":
            good = good.rename_columns(["step", "time", "val_loss"])
        _rank_part(run, table, 0, seq, b"PAR1 broken" if seq < broken_rank0 else good)
        _rank_part(run, table, 1, seq, good)
    return run


@case("consistency", "every rank-0 scalars part unreadable")
def _rank_fallback(work: Path) -> list[str]:
    from runlens.io.loader import load_run

    run = load_run(_two_ranks(work, "scalars", broken_rank0=2))
    n = 0 if run.scalars is None else run.scalars.num_rows
    return [] if n == 40 else [f"rows: {n} of rank 1's 40 curve rows read"]


@case("consistency", "every rank-0 evals part unreadable")
def _rank_fallback_evals(work: Path) -> list[str]:
    from runlens.io.loader import load_run

    run = load_run(_two_ranks(work, "evals", broken_rank0=2))
    n = 0 if run.evals is None else run.evals.num_rows
    return [] if n == 40 else [f"rows: {n} of rank 1's 40 eval rows read"]


@case("consistency", "one rank-0 part unreadable keeps rank 0")
def _rank_kept(work: Path) -> list[str]:
    from runlens.io.loader import load_run

    run = load_run(_two_ranks(work, "scalars", broken_rank0=1))
    steps = run.steps("scalars").tolist()
    return [] if steps == list(range(20, 40)) else [f"rows: rank 0's readable part not the curve: {steps[:5]}"]


@case("consistency", "import into a run another import is writing")
def _import_locked(work: Path) -> list[str]:
    from runlens.io.lock import output_lock

    log = work / "log.csv"
    log.write_text("step,loss\n" + "".join(f"{i},{1 / (i + 1)}\n" for i in range(50)))
    out = work / "out"
    with output_lock(out):
        held = cli("import", "csv", str(log), str(out), allowed=(2,))
    problems = held.problems + (["outside: the refused import wrote the run anyway"] if out.exists() else [])
    after = cli("import", "csv", str(log), str(out), allowed=(0,))  # the lock released: it goes through
    return problems + after.problems


# -- hangs ----------------------------------------------------------------------

@case("hangs", "validate: a FIFO named like a part")
def _validate_fifo_part(work: Path) -> list[str]:
    run = write_run(work / "run")
    _fifo(run / "scalars" / "r0-00000007.parquet")
    got = cli("validate", str(run), allowed=(1,))
    return got.problems + ([] if b"FIFO" in got.out else ["other: the FIFO is not named in the output"])


@case("hangs", "analyze: a FIFO named like a part")
def _analyze_fifo_part(work: Path) -> list[str]:
    run = write_run(work / "run")
    _fifo(run / "events" / "r0-00000001.parquet")
    return cli("analyze", str(run), allowed=(0, 1)).problems


@case("hangs", "analyze: run.json is a FIFO")
def _analyze_fifo_meta(work: Path) -> list[str]:
    run = write_run(work / "run")
    (run / "run.json").unlink()
    _fifo(run / "run.json")
    got = cli("analyze", str(run), allowed=(2,))
    return got.problems + ([] if b"FIFO" in got.err else ["other: the FIFO is not named"])


@case("hangs", "validate: run.json is a FIFO")
def _validate_fifo_meta(work: Path) -> list[str]:
    run = write_run(work / "run")
    (run / "run.json").unlink()
    _fifo(run / "run.json")
    return cli("validate", str(run), allowed=(1,)).problems


@case("hangs", "analyze: a FIFO given as the log")
def _analyze_fifo_log(work: Path) -> list[str]:
    return cli("analyze", str(_fifo(work / "train.log")), allowed=(2,)).problems


@case("hangs", "audit: a FIFO metrics.csv in the tree")
def _audit_fifo_marker(work: Path) -> list[str]:
    write_run(work / "tree" / "ok")
    _fifo(work / "tree" / "lightning" / "metrics.csv")
    _fifo(work / "tree" / "hf" / "trainer_state.json")
    return cli("audit", str(work / "tree"), allowed=(0, 1)).problems


@case("hangs", "audit: a FIFO run.json in the tree")
def _audit_fifo_meta(work: Path) -> list[str]:
    write_run(work / "tree" / "ok")
    _fifo(work / "tree" / "bad" / "run.json")
    got = cli("audit", str(work / "tree"), "--format", "json", allowed=(0, 1))
    if got.problems:
        return got.problems
    rows = json.loads(got.out)
    return [] if len(rows) == 2 else [f"rows: {len(rows)} audit rows for 2 runs"]


@case("hangs", "audit: run.json a symlink to /dev/zero")
def _audit_dev_zero(work: Path) -> list[str]:
    write_run(work / "tree" / "ok")
    (work / "tree" / "zero").mkdir(parents=True)
    (work / "tree" / "zero" / "run.json").symlink_to("/dev/zero")
    return cli("audit", str(work / "tree"), allowed=(0, 1)).problems


@case("hangs", "--config /dev/zero")
def _config_dev_zero(work: Path) -> list[str]:
    return cli("analyze", str(write_run(work / "run")), "--config", "/dev/zero", allowed=(2,)).problems


@case("hangs", "--config a FIFO")
def _config_fifo(work: Path) -> list[str]:
    fifo = _fifo(work / "cfg.json")
    return cli("analyze", str(write_run(work / "run")), "--config", str(fifo), allowed=(2,)).problems


@case("hangs", "import auto: a FIFO")
def _import_fifo(work: Path) -> list[str]:
    return cli("import", "auto", str(_fifo(work / "log.csv")), str(work / "out"), allowed=(2,)).problems


@case("hangs", "a Dask scheduler that accepts and never answers")
def _dask_silent(work: Path) -> list[str]:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return []
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.extend(iter(lambda: server.accept()[0], None)), daemon=True).start()
    port = server.getsockname()[1]
    try:
        return cli("audit", str(write_run(work / "run")), "--scheduler", f"tcp://127.0.0.1:{port}",
                   allowed=(2,), code_prefix="import runlens.audit.dask_backend as d; d.CONNECT_TIMEOUT = '2s'",
                   ).problems
    finally:
        server.close()


@case("hangs", "a scalars part with 20,000 columns")
def _wide_part(work: Path) -> list[str]:
    run = write_run(work / "run")
    n = 20_000
    cols = {"step": pa.array([500], pa.int64()), "time": pa.array([0.0]), "loss": pa.array([0.1])}
    cols.update({f"acc_{i}": pa.array([0.5]) for i in range(n)})
    part(run, "scalars", cols, seq=1)
    got = cli("analyze", str(run), "--format", "json", allowed=(0, 1))
    return got.problems + ([] if b"columns" in got.out else ["other: no warning about the wide part"])


# -- memory ---------------------------------------------------------------------

@functools.cache
def _tall_source(rows: int, chunk: int = 2_000_000) -> Path:
    """A part whose footer holds ``rows`` rows of one repeated value: a few MB on disk, but
    encoding it takes tens of seconds, so it is written once per process and copied."""
    path = Path(tempfile.mkdtemp(prefix="round3-tall-")) / "tall.parquet"
    piece = _scalars(np.zeros(chunk, dtype=np.int64), 1.0)
    # hand-made: one part in many row groups, encoded piece by piece, which tests.runs does not write
    with pq.ParquetWriter(path, piece.schema, compression="zstd") as writer:
        for _ in range(rows // chunk):
            writer.write_table(piece, row_group_size=chunk)
    atexit.register(shutil.rmtree, path.parent, True)
    return path


def _tall_part(path: Path, rows: int) -> None:
    shutil.copyfile(_tall_source(rows), path)


@case("memory", "a 2x10^8-row part (analyze)")
def _tall_analyze(work: Path) -> list[str]:
    run = write_run(work / "run")
    _tall_part(run / "scalars" / "r0-00000001.parquet", 200_000_000)
    return cli("analyze", str(run), allowed=(0, 1)).problems


@case("memory", "a 2x10^8-row part (validate)")
def _tall_validate(work: Path) -> list[str]:
    run = write_run(work / "run")
    _tall_part(run / "scalars" / "r0-00000001.parquet", 200_000_000)
    return cli("validate", str(run), allowed=(1,)).problems


@case("memory", "a run.json of 100 MB")
def _huge_meta(work: Path) -> list[str]:
    run = write_run(work / "run", {"config": {"blob": "x" * (100 << 20)}})
    return cli("analyze", str(run), allowed=(2,)).problems


@case("memory", "run.json a symlink to /dev/zero (analyze)")
def _meta_dev_zero(work: Path) -> list[str]:
    run = write_run(work / "run")
    (run / "run.json").unlink()
    (run / "run.json").symlink_to("/dev/zero")
    return cli("analyze", str(run), allowed=(2,)).problems


_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))


@case("memory", "billion laughs in an MLflow meta.yaml")
def _laughs_mlflow(work: Path) -> list[str]:
    run = work / "mlruns" / "0" / "abc"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_name: r\nstatus: 3\n" + _LAUGHS)
    (run / "metrics" / "loss").write_text("".join(f"{1700000000000 + i} {1 / (i + 1)} {i}\n" for i in range(60)))
    return cli("import", "mlflow", str(run), str(work / "out"), allowed=(0, 2)).problems


@case("memory", "billion laughs in a Lightning hparams.yaml")
def _laughs_lightning(work: Path) -> list[str]:
    folder = work / "lightning_logs" / "version_0"
    folder.mkdir(parents=True)
    (folder / "metrics.csv").write_text("step,train_loss\n" + "".join(f"{i},{1 / (i + 1)}\n" for i in range(60)))
    (folder / "hparams.yaml").write_text(_LAUGHS)
    return cli("import", "lightning-csv", str(folder), str(work / "out"), allowed=(0, 2)).problems
