"""Open a run given as a local path or as a filesystem URL (s3://, gs://, file://): a run folder
or another tool's log.

A remote run is staged to a temporary folder (run.json and the final parts
only) and read there; a remote log file is staged as itself and imported in
memory; the run keeps the name the user gave it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

from runlens.errors import RunlensError
from runlens.io.discover import file_url_path, is_url, url_filesystem
from runlens.io.loader import load_run
from runlens.io.runmeta import one_line as _one_line


def open_run(path: str, columns: Mapping[str, Any] | None = None):
    """``load_run`` for a local path or a filesystem URL (staged to a temp dir)."""
    if not is_url(path):
        return load_run(path, columns=columns)
    if path.lower().startswith("file://"):
        local = file_url_path(path)
        return _renamed(load_run(local, columns=columns), local, path)
    with tempfile.TemporaryDirectory(prefix="runlens-") as tmp:
        local = os.path.join(tmp, "run")
        # A URL may name another tool's log (s3://bucket/train.log): it is staged as the file it is and
        # read by the importers in memory, like a local log.
        local = _stage_file(path, tmp) or (_stage(path, local) or local)
        return _renamed(load_run(local, columns=columns), local, path)


def _renamed(run, local: str, path: str):
    # Readers report the run under the name the user gave it, not where it was staged.
    return dataclasses.replace(run, path=path, warnings=tuple(
        w.replace(local, path) for w in run.warnings))


def _stage_file(url: str, tmp: str) -> str | None:
    """The local copy of ``url`` when it names one file (a log), else None."""
    import pyarrow.fs as pafs

    fs, root = url_filesystem(url)
    try:
        info = fs.get_file_info(root.rstrip("/"))
    except (FileNotFoundError, OSError):
        return None
    if info.type != pafs.FileType.File:
        return None
    target = os.path.join(tmp, os.path.basename(root.rstrip("/")) or "log")
    with fs.open_input_stream(info.path) as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return target


def _stage(url: str, local: str) -> None:
    """Copy the files a reader needs (run.json and the final parts) from ``url``."""
    import pyarrow.fs as pafs

    fs, root = url_filesystem(url)
    root = root.rstrip("/")
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except (FileNotFoundError, OSError) as exc:
        raise RunlensError(f"{url}: cannot list the run ({_one_line(exc)})") from None
    for info in infos:
        rel = info.path[len(root):].strip("/")
        if info.type != pafs.FileType.File or any(p.startswith(".") for p in rel.split("/")):
            continue
        if rel != "run.json" and not rel.endswith(".parquet"):
            continue
        target = os.path.join(local, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with fs.open_input_stream(info.path) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)



__all__ = ["open_run"]
