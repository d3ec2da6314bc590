"""Open a run given as a local path or as a filesystem URL (s3://, gs://, file://): a run folder
or another tool's log.

A remote run is staged to a temporary folder (run.json and the final parts
only) and read there; a remote log file is staged as itself and imported in
memory; the run keeps the name the user gave it.

Staging is bounded like a local read (``runlens.io.bounded``): run.json at
``MAX_JSON_BYTES``, any other file at ``MAX_STAGED_FILE_BYTES``, the run at
``MAX_STAGED_RUN_BYTES`` in all. The listed sizes are checked before a byte
is copied and the bytes counted again while copying (a server may send more
than it announced); past a ceiling, or on any error of the network
filesystem, the read ends in one line naming the URL (exit 2). Network
filesystems (``discover.url_filesystem``) wait at most ``CONNECT_SECONDS`` for a
connection and ``READ_SECONDS`` between two reads: HTTP(S) through fsspec with an
aiohttp ``ClientTimeout``, S3 through pyarrow's ``connect_timeout``/``request_timeout``,
GCS through pyarrow's ``retry_time_limit``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from runlens.errors import RunFormatError, RunlensError
from runlens.io import bounded
from runlens.io.discover import file_url_path, is_url, url_filesystem
from runlens.io.loader import load_runs
from runlens.io.logruns import LogRuns
from runlens.io.runmeta import one_line as _one_line

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from runlens.io.run import Run

def open_run(path: str, columns: Mapping[str, Any] | None = None, *,
             import_options: Mapping[str, Any] | None = None) -> Run:
    """``load_run`` for a local path or a filesystem URL (staged to a temp dir)."""
    with open_runs(path, columns, import_options=import_options) as runs:
        return runs.run()


@contextlib.contextmanager
def open_runs(path: str, columns: Mapping[str, Any] | None = None, *,
              import_options: Mapping[str, Any] | None = None) -> Iterator[LogRuns]:
    """``load_runs`` for a local path or a filesystem URL: ``.run()`` is what :func:`open_run` gives,
    ``.run(i)`` what it gives with ``run=i`` added to ``import_options``, the source staged and parsed
    once for all of them. A URL's staged copy lasts until the ``with`` block ends."""
    if not is_url(path):
        yield load_runs(path, columns, import_options=import_options)
        return
    if path.lower().startswith("file://"):
        local = file_url_path(path)
        yield _renamed(load_runs(local, columns, import_options=import_options), local, path)
        return
    with tempfile.TemporaryDirectory(prefix="runlens-") as tmp:
        local = os.path.join(tmp, "run")
        try:
            # A URL may name another tool's log (s3://bucket/train.log): it is staged as the file it is
            # and read by the importers in memory, like a local log.
            local = _stage(path, tmp, local)
        except RunlensError:
            raise
        except Exception as exc:  # noqa: BLE001 - each network filesystem raises its own classes
            raise RunFormatError(f"{path}: cannot be read ({type(exc).__name__}: {_one_line(exc)})") from None
        yield _renamed(load_runs(local, columns, import_options=import_options), local, path)


def _renamed(runs: LogRuns, local: str, path: str) -> LogRuns:
    # Readers report the run under the name the user gave it, not where it was staged.
    return runs.renamed(lambda run: dataclasses.replace(run, path=path, warnings=tuple(
        w.replace(local, path) for w in run.warnings)))


def _stage(url: str, tmp: str, local: str) -> str:
    """The local copy of ``url``: the file it names (a log), or ``local`` holding the files a
    reader needs (run.json and the final parts)."""
    import pyarrow.fs as pafs

    fs, root = url_filesystem(url)
    root = root.rstrip("/")
    try:
        info = fs.get_file_info(root)
    except (FileNotFoundError, OSError):
        info = None
    if info is not None and info.type == pafs.FileType.File:
        target = os.path.join(tmp, os.path.basename(root) or "log")
        _copy(fs, [(info, url, target)], url)
        return target
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except (FileNotFoundError, OSError) as exc:
        raise RunlensError(f"{url}: cannot list the run ({_one_line(exc)})") from None
    wanted = []
    for info in infos:
        rel = info.path[len(root):].strip("/")
        if info.type != pafs.FileType.File or any(p.startswith(".") for p in rel.split("/")):
            continue
        if rel == "run.json" or rel.endswith(".parquet"):
            wanted.append((info, f"{url.rstrip('/')}/{rel}", os.path.join(local, *rel.split("/"))))
    _copy(fs, wanted, url)
    return local


def _copy(fs: pafs.FileSystem, files: list, url: str) -> None:
    """Copy ``(info, its URL, target)`` files, refused by name past the ceilings of this module."""
    limits = [bounded.MAX_JSON_BYTES if os.path.basename(t) == "run.json" else bounded.MAX_STAGED_FILE_BYTES
              for _, _, t in files]
    announced = 0
    for (info, name, _), limit in zip(files, limits, strict=True):
        size = info.size if isinstance(info.size, int) and info.size >= 0 else 0
        _check(name, size, limit, "from one remote file")
        announced += size
    _check(url, announced, bounded.MAX_STAGED_RUN_BYTES, "from one remote run")
    total = 0
    for (info, name, target), limit in zip(files, limits, strict=True):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        copied = 0
        with fs.open_input_stream(info.path) as src, open(target, "wb") as dst:
            while chunk := src.read(1 << 20):
                copied += len(chunk)
                total += len(chunk)
                # Counted as it comes: a size the listing did not give, or a server sending more.
                _check(name, copied, limit, "from one remote file")
                _check(url, total, bounded.MAX_STAGED_RUN_BYTES, "from one remote run")
                dst.write(chunk)


def _check(name: str, size: int, limit: int, what: str) -> None:
    if size > limit:
        shown = f"{limit >> 20:,} MiB" if limit % (1 << 20) == 0 else f"{limit:,} bytes"
        raise RunFormatError(f"{name}: larger than {shown}, the most runlens stages {what}")


__all__ = ["open_run", "open_runs"]
