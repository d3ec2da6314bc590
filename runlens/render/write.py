"""Writing reports to disk: one HTML and/or Markdown file per run, and an
index page when there are several runs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

FORMATS = ("html", "md")


def report_stem(name: str) -> str:
    """A file name stem from a run name: readable, safe on every filesystem."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "run"


def write_reports(diagnosis: Any, out_dir: str | os.PathLike[str], formats: Iterable[str] = FORMATS,
                  *, stem: str | None = None, docs_base: str = "") -> list[Path]:
    """Write ``<stem>.html`` and/or ``<stem>.md`` for one diagnosis into
    ``out_dir`` (created if needed); returns the paths written. ``docs_base``
    prefixes the Markdown report's links to the detector reference (a PR
    comment has no repository-relative links).

    Files are written to a temporary name and renamed, so a reader (a CI job
    uploading artifacts) never sees half a report.
    """
    formats = tuple(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown report format(s) {unknown}; choose from {FORMATS}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = stem or report_stem(diagnosis.run.name)
    written = []
    if "html" in formats:
        from runlens.render.html import render_html

        written.append(_write(out / f"{stem}.html", render_html(diagnosis)))
    if "md" in formats:
        from runlens.render.markdown import render_markdown

        written.append(_write(out / f"{stem}.md", render_markdown(diagnosis, docs_base=docs_base)))
    return written


def write_index(entries: Sequence[tuple[Any, str | None]], out_dir: str | os.PathLike[str]) -> Path:
    """Write ``index.html`` over several runs: ``(diagnosis, html file name
    or None)`` per run, in the order given."""
    from runlens.render.html import render_index
    from runlens.render.view import build_view

    page = render_index([(build_view(d), href) for d, href in entries])
    return _write(Path(out_dir) / "index.html", page)


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, path)
    return path
