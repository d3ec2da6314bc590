"""Writing reports to disk: one HTML and/or Markdown file per run, and an
index page when there are several runs."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from runlens.render.output import output_dir, write_text

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
    cannot be created or written raises :class:`~runlens.render.output.OutputError`
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
        from runlens.render.html import render_html

        written.append(_write(out / f"{stem}.html", render_html(data, docs_base=docs_base)))
    if "md" in formats:
        from runlens.render.markdown import render_markdown

        written.append(_write(out / f"{stem}.md", render_markdown(data, docs_base=docs_base)))
    return written


def write_index(entries: Sequence[tuple[Any, str | None]], out_dir: str | os.PathLike[str]) -> Path:
    """Write ``index.html`` over several runs: ``(diagnosis, html file name
    or None)`` per run, in the order given. The index needs the diagnoses only (plain values),
    so a caller keeps no run and no report data until it is written."""
    from runlens.render.html import render_index
    from runlens.render.view import index_view

    page = render_index([(index_view(d), href) for d, href in entries])
    return _write(output_dir(out_dir) / "index.html", page)


def _write(path: Path, text: str) -> Path:
    # runlens.render.output: temp file made with O_EXCL, replaced atomically, removed on failure.
    return write_text(path, text)
