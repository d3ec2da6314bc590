"""Where every runlens command writes its files: one module, one set of rules.

- **Folders** are created (with their parents) or refused with one line
  (:class:`~runlens.errors.OutputError`, a :class:`~runlens.errors.UsageError`: exit 2).
  A file output's folder (``audit -o DIR/x.md``) must already exist, as
  for a shell redirection; a folder output (``report -o DIR``) is created.
- **A run directory is never written into**: not its folder, not its
  table folders, whatever symlink leads there (real paths are compared) (``audit RUN -o RUN/run.json`` would replace the run's own
  metadata). Readers ignore unknown files, but a report over ``run.json``
  or a part is data loss.
- **Files are replaced atomically**: the text goes to a temporary file made
  with ``tempfile.mkstemp`` in the target's folder (``O_CREAT | O_EXCL``,
  an unpredictable name, so a symlink planted at the temporary name cannot
  redirect the write outside the folder), then ``os.replace`` puts it in
  place (which replaces a symlink at the target, never what it points at).
  On any failure (read-only folder, full disk) the temporary file is
  removed, the error is one line, and the file that was there before is
  left as it was.
- **Only regular files are replaced**: an existing target that is a
  symlink, a device, a FIFO or a socket is refused by name (as root,
  ``-o /dev/null`` would otherwise replace the device with a file).
- **Every string can be written**: text that holds lone surrogates (a
  ``"\\udbff"`` in run.json, a file name that is not valid UTF-8) is written
  with those characters as ``\\udbff`` escapes instead of raising
  ``UnicodeEncodeError``; so are stdout and stderr (:func:`safe_streams`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from runlens.errors import OutputError

# The table folders of format v1 (recorders.format.TABLES, spelled out: renderers stay engine-free).
_TABLES = ("scalars", "evals", "layers", "events")


def encodable(text: str, encoding: str = "utf-8") -> bytes:
    """``text`` encoded; characters the codec cannot take become backslash escapes."""
    return text.encode(encoding, "backslashreplace")


def safe_streams() -> None:
    """Make stdout and stderr escape what they cannot encode, instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # a TextIOWrapper's; a replaced stream may lack it
        with contextlib.suppress(ValueError, OSError):
            if reconfigure is not None:
                reconfigure(errors="backslashreplace")


def run_directory_of(folder: str | os.PathLike[str]) -> Path | None:
    """The run directory ``folder`` is, or is a table folder of; None when neither."""
    # The real path: a symlink to a run's table folder must not hide that it is one.
    folder = Path(os.path.realpath(folder))
    if _is_file(folder / "run.json"):
        return folder
    if folder.name in _TABLES and _is_file(folder.parent / "run.json"):
        return folder.parent
    return None


def output_dir(path: str | os.PathLike[str]) -> Path:
    """The folder ``path``, created with its parents if missing; refused in one line
    when it is a file, a run directory, or cannot be created."""
    folder = Path(path)
    _refuse_run_directory(folder, folder)
    if folder.is_dir():
        return folder
    if folder.exists() or folder.is_symlink():
        raise OutputError(f"{_show(folder)}: exists and is not a folder; choose an output folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder {_show(folder)}: {_reason(exc)}") from None
    return folder


def new_run_target(path: str | os.PathLike[str]) -> Path:
    """The folder a new run will be written to (``runlens import``): its parent is created
    or refused like any output folder, and it is never put inside another run."""
    target = Path(path)
    _refuse_run_directory(target.parent, target)
    if target.exists() and not target.is_dir():
        raise OutputError(f"{_show(target)}: exists and is not a folder; give a new run directory")
    output_dir(target.parent if str(target.parent) else ".")
    return target


def check_target(path: str | os.PathLike[str]) -> Path:
    """Refuse, before any work is done, a file output that could not be written:
    its folder missing or a run directory, or the path itself a folder."""
    target = Path(path)
    folder = target.parent
    _refuse_run_directory(folder, target)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise OutputError(f"cannot write {_show(target)}: the folder {_show(folder)} {what}")
    if target.is_dir():
        raise OutputError(f"cannot write {_show(target)}: it is a folder; give a file name")
    _refuse_special(target)
    return target


def _refuse_special(target: Path) -> None:
    """Only a regular file (or nothing) may be replaced: as root, ``os.replace`` over
    ``/dev/null`` would destroy the device; over a symlink it destroys the link."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot write {_show(target)}: {_reason(exc)}") from None
    if stat.S_ISLNK(mode):
        raise OutputError(f"refusing to write {_show(target)}: it is a symlink (runlens replaces only "
                          "regular files); give the real path or a new name")
    if not stat.S_ISREG(mode):
        raise OutputError(f"refusing to write {_show(target)}: it is {_kind(mode)}, not a regular file "
                          "(runlens replaces only regular files)")


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "a special file"


def write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see the module's rules); returns ``path``."""
    return write_bytes(path, encodable(text, encoding))


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module's rules); returns ``path``."""
    target = check_target(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:48]}.", suffix=".tmp",
                                   dir=target.parent or ".")
    except OSError as exc:
        raise OutputError(f"cannot write {_show(target)}: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            fh.write(data)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {_show(target)}: {_reason(exc)}") from None
        raise
    return target


# -- the report files (runlens report, runlens.report, audit --reports) ----------------
FORMATS = ("html", "md")


def report_stem(name: str, path: str | None = None) -> str:
    """The one naming rule of report files (``runlens report`` and ``audit --reports`` alike):
    the run's name made safe on every filesystem, then 8 hex digits of the run's path, so two
    runs with one name never share a file and a run keeps its file name from one call to the next."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "run"
    if path is None:
        return slug
    digest = hashlib.sha1(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{slug}-{digest}"


def write_reports(data: Any, out_dir: str | os.PathLike[str], formats: Iterable[str] = FORMATS,
                  *, stem: str | None = None, docs_base: str = "") -> list[Path]:
    """Write ``<stem>.html`` and/or ``<stem>.md`` of one run's
    :class:`~runlens.report_data.ReportData` into
    ``out_dir`` (created if needed); returns the paths written. The reference of
    every code is embedded in both; ``docs_base`` (``--docs-url``) adds links to
    the online reference.

    Files are written to a temporary name and renamed, so a reader (a CI job
    uploading artifacts) never sees half a report; an output folder that
    cannot be created or written raises :class:`~runlens.errors.OutputError`
    (one line, exit 2 from the CLI).
    """
    formats = tuple(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown report format(s) {unknown}; choose from {FORMATS}")
    out = output_dir(out_dir)
    stem = stem or report_stem(data.diagnosis.name, data.diagnosis.path)
    written = []
    if "html" in formats:
        from runlens.render.report.html import render_html

        written.append(write_text(out / f"{stem}.html", render_html(data, docs_base=docs_base)))
    if "md" in formats:
        from runlens.render.report.markdown import render_markdown

        written.append(write_text(out / f"{stem}.md", render_markdown(data, docs_base=docs_base)))
    return written


def write_index(entries: Sequence[tuple[Any, str | None]], out_dir: str | os.PathLike[str]) -> Path:
    """Write ``index.html`` over several runs: ``(diagnosis, html file name
    or None)`` per run, in the order given. The index needs the diagnoses only (plain values),
    so a caller keeps no run and no report data until it is written."""
    from runlens.render.report.html import render_index
    from runlens.render.report.view import index_view

    page = render_index([(index_view(d), href) for d, href in entries])
    return write_text(output_dir(out_dir) / "index.html", page)


def _refuse_run_directory(folder: Path, target: Path) -> None:
    inside = run_directory_of(folder)
    if inside is not None:
        raise OutputError(f"refusing to write {_show(target)}: {_show(inside)} is a run directory "
                          "(its files are the run's record); choose an output folder outside it")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _reason(exc: OSError) -> str:
    return exc.strerror or " ".join(str(exc).split()) or type(exc).__name__


def _show(path: Path) -> str:
    return os.fspath(path) or "."


def _umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = ["FORMATS", "OutputError", "check_target", "encodable", "new_run_target", "output_dir", "report_stem",
           "run_directory_of", "safe_streams", "write_bytes", "write_index", "write_reports", "write_text"]
