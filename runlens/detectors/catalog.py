"""The codes catalog joined: the detectors' and the curve's entries (from their docstrings) with
the written ones of ``runlens.codes``; and the script that writes docs/detectors.md from it.

``runlens explain CODE`` and ``docs/detectors.md`` print the same text, formatted by
``runlens.render.reference``. Regenerate the page after changing a docstring::

    python -m runlens.detectors.catalog          # writes docs/detectors.md
    python -m runlens.detectors.catalog --check  # exit 1 if the page is stale

A test runs the check, so the page cannot drift from the code.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

from runlens.codes import CURVE, CURVE_LABELS, Entry, label_entry, missing_sections, written_entries
from runlens.detectors import REGISTRY, Detector
from runlens.detectors._base import parse_doc_sections

PAGE = Path(__file__).resolve().parents[2] / "docs" / "detectors.md"
GENERATOR = "python -m runlens.detectors.catalog"

__all__ = ["PAGE", "Entry", "documented", "lookup", "main", "missing_sections", "render_markdown", "suggest"]


def documented() -> dict[str, Entry]:
    """Every code and curve label the tool can emit: ``curve`` first, then the detectors'
    codes, the curve labels that are not codes, the comparison's and the pipeline's codes."""
    entries = dict(_docstring_entries(tuple(REGISTRY.items())))
    for code, entry in sorted(written_entries().items()):
        entries.setdefault(code, entry)
    return entries


@functools.cache
def _docstring_entries(registry: tuple[tuple[str, type[Detector]], ...]) -> dict[str, Entry]:
    """The entries read from docstrings (the curve's, the detectors', the curve labels'), parsed
    once per set of registered detectors; the caller copies the dict."""
    entries = {}
    curve = _curve_entry()
    if curve is not None:
        entries[CURVE] = curve
    for code, cls in sorted(registry):
        if code == CURVE:
            continue
        sections = _clean(cls.doc_sections())
        entries[code] = Entry(code, cls.severity, cls.title, _first_line(sections.get("", "")), sections)
    for label, meaning in CURVE_LABELS.items():
        if label not in entries:
            entries[label] = label_entry(label, meaning, curve)
    return entries


def lookup(code: str) -> Entry | None:
    """The entry of ``code`` (None when the tool never emits it)."""
    return documented().get(code)


def suggest(code: str) -> str | None:
    """The documented code closest to a mistyped ``code``, if one is close."""
    close = difflib.get_close_matches(code, list(documented()), n=1, cutoff=0.6)
    return close[0] if close else None


def render_markdown() -> str:
    """The whole reference page."""
    # The page script is the one place that joins the catalog with its formatter; the catalog
    # module itself imports no renderer.
    from runlens.render.reference import reference_markdown

    return reference_markdown(documented().values(), GENERATOR)


def _curve_entry() -> Entry | None:
    try:
        from runlens.detectors import curve
    except ImportError:
        return None
    best: dict[str, str] = {}
    for obj in (getattr(curve, "classify", None), getattr(curve, "CurveClassifier", None), curve):
        sections = parse_doc_sections(inspect.getdoc(obj) or "") if obj is not None else {}
        if sum(bool(v) for v in sections.values()) > sum(bool(v) for v in best.values()):
            best = sections
    best = _clean(best)
    # A short log's readings are listed, in order, where they are made (its module's docstring).
    short = inspect.getdoc(importlib.import_module("runlens.detectors.curve.short")) or ""
    if "\n- " in short and best.get("How it decides"):
        best["How it decides"] += "\n\nA short log's readings, in the order they are tried:\n\n" + short[short.index("\n- ") + 1:]
    return Entry(CURVE, "label", "Shape of the loss curve", _first_line(best.get("", "")), best, "label")


def _clean(sections: Mapping[str, str]) -> dict[str, str]:
    """Section bodies without the docstring's indentation (the first line is already flush)."""
    out = {}
    for name, text in sections.items():
        first, _, rest = text.partition("\n")
        out[name] = (first.strip() + ("\n" + textwrap.dedent(rest) if rest else "")).strip()
    return out


def _first_line(text: str) -> str:
    """The summary's first paragraph, on one line."""
    para = text.strip().split("\n\n")[0]
    return " ".join(para.split())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render_markdown()
    if "--check" in argv:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE} is stale: run {GENERATOR}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
