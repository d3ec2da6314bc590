"""Find the runs below a set of paths: local folders and filesystem URLs.

A run is a directory holding ``run.json``; its subfolders are its tables,
so the walk does not descend into it. Another tool's log is a run as well
when ``runlens.io.importers.detect_kind`` recognises it: a file named on the
command line, or a folder that holds a log's marker file (TensorBoard
events, a Lightning ``metrics.csv``, Hugging Face's ``trainer_state.json``).
A loose file met during the walk, at any depth (``exp1/train.log``), is a
run when its name and first 64 KiB look like a training log (:mod:`runlens.io.loose`):
a log's name, and a loss, perplexity or gradient norm named with numbers.
Most CSV, JSON and text files are data or notes: those are left out
silently, while a file that looks like a log but does not pass is named
in ``skipped``. The walk never enters a run folder nor a folder a marker
made a run (their tables are not loose logs).
Directories whose name starts with ``.`` are skipped: they are writers'
temporary files, ``.git``, virtual environments and caches.

Symlinks are followed, but every directory is entered at most once (by
device and inode), so a symlink cycle ends the walk instead of looping and
a run reachable twice is reported once. The result is sorted, so the same
tree always gives the same list whatever the filesystem's listing order.

URLs (``s3://bucket/runs``, ``gs://...``, ``file:///...``) are walked with
``pyarrow.fs``, or with fsspec when pyarrow does not know the scheme; the
runs found are URLs too, and ``runlens.audit.worker`` reads them the same
way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from runlens.errors import UsageError
from runlens.io.loose import sniff_loose

if TYPE_CHECKING:
    import pyarrow.fs as pafs

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path: str) -> bool:
    """Whether ``path`` names a filesystem URL rather than a local path."""
    return bool(_URL_RE.match(str(path)))


def discover_runs(paths: Iterable[str | os.PathLike[str]],
                  unlisted: list[tuple[str, str]] | None = None,
                  skipped: list[tuple[str, str]] | None = None) -> list[str]:
    """Every run below ``paths``, as strings that start with the path given.

    A folder that cannot be listed (permissions) may hold runs: with
    ``unlisted``, each such folder is appended as ``(path, reason)`` so the
    caller can show it instead of leaving it out silently. A loose file in
    a named folder that an importer's sniffing takes for a log but that
    holds no training signal (a README with a table) is left out; with
    ``skipped`` it is appended as ``(path, reason)`` so the caller names it.

    Raises :class:`UsageError` for a local path that does not exist or a URL
    whose filesystem is not installed.
    """
    found: list[str] = []
    for given in paths:
        given = os.fspath(given)
        if is_url(given):
            found.extend(_discover_url(given))
        elif not os.path.exists(given):
            raise UsageError(f"{given}: no such file or directory")
        else:
            found.extend(_discover_local(given, _importer_probe(), unlisted, skipped))
    return list(dict.fromkeys(found))


# -- local ------------------------------------------------------------------

def _importer_probe() -> Callable[[str], bool]:
    """``probe(path)``: whether an importer can read ``path`` (never raises)."""
    try:
        from runlens.io.importers import detect_kind
    except ImportError:
        return lambda path: False

    def probe(path: str) -> bool:
        try:
            return bool(detect_kind(path))
        except Exception:  # noqa: BLE001 - an importer's bug must not end the discovery
            return False

    return probe


def _discover_local(root: str, probe: Callable[[str], bool],
                    unlisted: list[tuple[str, str]] | None = None,
                    skipped: list[tuple[str, str]] | None = None) -> list[str]:
    if os.path.isfile(os.path.join(root, "run.json")):
        return [root]
    if not os.path.isdir(root):
        # A file named on the command line: the user says it is a log; the loader judges it and,
        # when no importer reads it, says why (empty, binary, ambiguous, no step lines).
        return [root]
    runs: list[str] = []
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
        except OSError:
            continue  # a dangling symlink or a folder removed under us
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        try:
            files, subdirs = _scan(folder)
        except OSError as exc:
            if unlisted is not None and os.path.basename(folder) != "lost+found":
                unlisted.append((folder, exc.strerror or type(exc).__name__))
            continue
        # A run.json that is a FIFO or a device still makes a run, which the loader refuses by
        # name (an unreadable_run row); other markers count only as regular files, since the
        # importers' probe would open them.
        if "run.json" in files or (_has_marker(folder, files.regular, subdirs) and probe(folder)):
            runs.append(folder)
            continue
        # Loose logs at any depth are runs too (issue 19), decided by a sniff of their head, not a
        # full read: the analysis reads each once, and names one it then cannot read.
        for name in sorted(files.regular):
            path = os.path.join(folder, name)
            why = sniff_loose(path)
            if why is None:
                runs.append(path)
            elif why and skipped is not None:
                skipped.append((path, why))
        # Reversed so that the stack pops them in name order.
        stack.extend(reversed([os.path.join(folder, d) for d in subdirs]))
    return sorted(runs, key=_natural)


class _Files(set):
    """The names of a folder's entries that are not folders; ``regular`` the regular files
    among them (symlinks followed), the only ones an importer's probe may open."""

    regular: set[str]


def _scan(folder: str) -> tuple[_Files, list[str]]:
    """Names of the files and (symlinks followed) subfolders of ``folder``, dot-names left out.

    Raises OSError when ``folder`` cannot be listed: what it holds is unknown, not empty.
    """
    entries = sorted(os.scandir(folder), key=lambda e: e.name)
    files, subdirs = _Files(), list[str]()
    files.regular = set()
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()  # follows symlinks
            regular = not is_dir and entry.is_file()
        except OSError:
            continue
        (subdirs.append if is_dir else files.add)(entry.name)
        if regular:
            files.regular.add(entry.name)
    return files, subdirs


def _has_marker(folder: str, files: set[str], subdirs: list[str]) -> bool:
    """Whether ``folder`` itself holds another tool's run log, by the files that name one.

    Only unambiguous markers count: TensorBoard event files (here, or in
    the ``train/`` and ``validation/`` folders of a Keras run) or scalar
    downloads (two ``run-*-tag-*.csv`` files or more), a Lightning
    ``metrics.csv``, Hugging Face's ``trainer_state.json`` (here or in a
    ``checkpoint-*`` folder). Any CSV, Parquet or text file could be a log
    but is usually data, so such logs are audited only when named.
    """
    if "metrics.csv" in files or "trainer_state.json" in files or "metrics.jsonl" in files:
        return True
    if "plots" in subdirs and os.path.isdir(os.path.join(folder, "plots", "metrics")):
        return True  # a dvclive folder
    if "meta.yaml" in files and "metrics" in subdirs:
        return True  # an MLflow run folder
    if any(name.endswith(".wandb") for name in files):
        return True  # a W&B offline run folder
    if any("tfevents" in name for name in files):
        return True
    if sum("-tag-" in name and name.lower().endswith(".csv") for name in files) >= 2:
        return True  # TensorBoard's scalar downloads, one tag a file (run-<run>-tag-<tag>.csv)
    if _keras_run(folder, subdirs):
        return True
    return any(d.startswith("checkpoint-") and os.path.isfile(os.path.join(folder, d, "trainer_state.json"))
               for d in subdirs)


def _keras_run(folder: str, subdirs: list[str]) -> bool:
    """A Keras ``TensorBoard`` callback's run folder: event files in ``train/`` and in
    ``validation/`` (or ``val/``, ``eval/``), which make one run, not two: the importer
    reads the second as the validation loss (``validation/epoch_loss``)."""
    def events(name: str) -> bool:
        try:
            return any("tfevents" in f for f in os.listdir(os.path.join(folder, name)))
        except OSError:
            return False

    roles = {d.lower(): d for d in subdirs}
    return "train" in roles and events(roles["train"]) and any(
        r in roles and events(roles[r]) for r in ("validation", "val", "eval"))


def _natural(path: str) -> list:
    # "run-10" after "run-9": sweeps number their runs without zero padding.
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


# -- URLs -------------------------------------------------------------------

def file_url_path(url: str) -> str:
    """The local path of a ``file://`` URL (percent-escapes decoded)."""
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(url).path)


def url_filesystem(url: str) -> tuple[pafs.FileSystem, str]:
    """``(pyarrow FileSystem, path inside it)`` for ``url``.

    pyarrow's own filesystems first (s3, gs, hdfs, file); otherwise fsspec
    (wrapped for pyarrow), which knows every scheme of its installed plugins.
    Network waits are bounded (``bounded.pyarrow_timeouts``/``fsspec_timeouts``).
    """
    import pyarrow.fs as pafs

    from runlens.io.bounded import fsspec_timeouts, pyarrow_timeouts

    try:
        fs, inner = pafs.FileSystem.from_uri(url)
        return pyarrow_timeouts(fs), inner
    except (ValueError, NotImplementedError, OSError):  # ArrowInvalid is a ValueError
        pass
    try:
        import fsspec
    except ImportError:
        raise UsageError(f"{url}: pyarrow cannot open this URL and fsspec is not installed") from None
    try:
        fs, inner = fsspec.core.url_to_fs(url, **fsspec_timeouts(url))
    except (ImportError, ValueError) as exc:
        raise UsageError(f"{url}: no filesystem for this URL ({exc})") from None
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), inner


def _discover_url(root_url: str) -> list[str]:
    import pyarrow.fs as pafs

    if root_url.lower().startswith("file://"):
        # Local files may hold symlink cycles, which only the local walk guards against.
        local = file_url_path(root_url)
        if not os.path.exists(local):
            raise UsageError(f"{root_url}: no such file or directory")
        prefix = root_url.rstrip("/")
        found = _discover_local(local.rstrip("/") or "/", _importer_probe())
        return [prefix + p[len(local.rstrip("/")):] for p in found]
    fs, root = url_filesystem(root_url)
    root = root.rstrip("/")
    base = root_url.rstrip("/")
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=False))
    except FileNotFoundError:
        raise UsageError(f"{root_url}: no such file or directory") from None
    except OSError:
        infos = []  # not a folder: maybe the URL is a run's run.json folder itself
    if fs.get_file_info(f"{root}/run.json").type == pafs.FileType.File:
        return [root_url]
    if not infos and fs.get_file_info(root).type == pafs.FileType.File:
        return [root_url]  # a log named by its URL (s3://bucket/train.log): read as a local file named is
    run_dirs = set()
    for info in infos:
        if info.type != pafs.FileType.File or info.base_name != "run.json":
            continue
        rel = info.path[len(root):].strip("/")
        parts = rel.split("/")[:-1]
        if any(p.startswith(".") for p in parts):
            continue
        run_dirs.add("/".join(parts))
    # A run's tables never hold run.json, but drop nested hits to match the local walk.
    kept = [d for d in run_dirs if not any(d.startswith(o + "/") for o in run_dirs if o != d)]
    return sorted((f"{base}/{d}" for d in kept), key=_natural)
