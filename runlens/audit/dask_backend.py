"""Run an audit's analysis on a ``dask.distributed`` cluster.

The cluster gets the same work as a local pool: chunks of run paths go to
``runlens.audit.worker.analyze_chunk`` on the workers, which read the runs
themselves and send back small records. So:

- every worker must be able to read every run path: a shared filesystem
  mounted at the same place, or a filesystem URL (``s3://...``,
  ``gs://...``) with the filesystem's package installed on the workers;
  relative paths are resolved in each worker's working directory, so give
  absolute ones to a remote cluster;
- runlens (and the same version of it) must be installed on the workers;
  the client sends function references, not code.

The records are the same as a local audit's, and the audit sorts them the
same way, so ``--scheduler`` changes where the work runs, never the result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from runlens.audit.worker import WorkOptions, analyze_chunk, chunked, collect
from runlens.errors import UsageError

if TYPE_CHECKING:
    from distributed import Client

#: How long to wait for the scheduler before calling the address unusable (dask's spelling).
CONNECT_TIMEOUT = "20s"


def connect(scheduler: str) -> Client:
    """A ``Client`` for the scheduler at ``scheduler`` (``tcp://host:port``).

    dask's own ``timeout`` bounds the TCP connection but not the handshake after
    it: an address that accepts and never answers (not a scheduler, a wedged
    one) waits forever in ``distributed.comm.connect``. So the client is made in
    a daemon thread under a deadline of our own; past it the address is refused
    in one line and the stuck thread is left to die with the process.
    """
    try:
        from dask.distributed import Client
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install 'runlens[dask]'") from None
    box: dict[str, Any] = {}
    seconds = float(CONNECT_TIMEOUT.removesuffix("s"))

    def attempt() -> None:
        try:
            box["client"] = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            box["error"] = exc

    thread = threading.Thread(target=attempt, name="runlens-dask-connect", daemon=True)
    thread.start()
    thread.join(seconds + 5)
    if thread.is_alive():
        raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: no answer within "
                         f"{seconds + 5:g} s (is a Dask scheduler listening there?)")
    error = box.get("error")
    if isinstance(error, (OSError, TimeoutError, ValueError)):
        raise UsageError(f"cannot reach the Dask scheduler at {scheduler}: {' '.join(str(error).split())}") from None
    if error is not None:
        raise error
    return box["client"]


def run_on_dask(runs: Sequence[str], options: WorkOptions, *, client: Any = None,
                scheduler: str | None = None,
                progress: Callable[[int, int], None] | None = None) -> tuple[list[dict], int]:
    """Analyze ``runs`` on the cluster; the records and the number of workers used."""
    from dask.distributed import as_completed


    own = client is None
    if own:
        if scheduler is None:
            raise UsageError("run_on_dask needs a client or the address of a scheduler")
        client = connect(scheduler)
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunks = chunked(runs, workers)
        # pure=False: the same paths read twice are two reads (runs change while training).
        futures = client.map(analyze_chunk, chunks, options=options, pure=False)
        by_key = {f.key: chunk for f, chunk in zip(futures, chunks, strict=True)}
        records: list[dict] = []
        finished = 0
        for future in as_completed(futures):
            records.extend(collect(future, by_key[future.key]))
            finished += len(by_key[future.key])  # a log of several runs gives several records
            future.release()
            if progress:
                progress(finished, len(runs))
        return records, workers
    finally:
        if own:
            client.close()
