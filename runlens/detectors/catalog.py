"""The detector reference, generated from the detectors' own docstrings.

``runlens explain CODE`` and ``docs/detectors.md`` print the same text: the
sections of each registered detector's docstring (and of the curve
classifier's). Regenerate the page after changing a docstring::

    python -m runlens.detectors.catalog          # writes docs/detectors.md
    python -m runlens.detectors.catalog --check  # exit 1 if the page is stale

A test runs the check, so the page cannot drift from the code.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runlens.detectors import REGISTRY
from runlens.detectors._base import DOC_SECTIONS, parse_doc_sections

PAGE = Path(__file__).resolve().parents[2] / "docs" / "detectors.md"
CURVE = "curve"


@dataclass(frozen=True)
class Entry:
    code: str
    severity: str
    title: str
    summary: str
    sections: Mapping[str, str]


# Codes the pipeline itself emits (runlens.audit), not a detector.
PIPELINE_CODES = {
    "unreadable_run": {
        "severity": "error",
        "title": "The run could not be read.",
        "What it detects": "A run that the audit found but could not load: run.json missing or not "
                           "JSON, a format_version this runlens does not know, or a log no importer reads.",
        "Why it matters": "An unreadable run is a row of the audit, never a silent omission: a CI gate "
                          "must not pass because the run it should judge is broken.",
        "How it decides": "Loading the run raised a format error; the message says which rule it broke.",
        "What to try": "Run `runlens validate RUN` to see every rule the run breaks; a run written by a "
                       "newer runlens needs a newer reader.",
        "Parameters": "None.",
    },
    "analysis_crashed": {
        "severity": "error",
        "title": "The analysis failed on this run (a bug in runlens).",
        "What it detects": "A run that could be read but whose analysis raised an unexpected error.",
        "Why it matters": "The run was not judged; the audit says so instead of skipping it.",
        "How it decides": "Any error other than a format error while analysing the run.",
        "What to try": "This is a runlens bug: please report it with the run attached "
                       "(RUNLENS_DEBUG=1 runlens analyze RUN shows the traceback).",
        "Parameters": "None.",
    },
}
# Curve labels that are not finding codes of their own (the others are detectors' codes).
CURVE_LABELS = {
    "healthy": "The loss fell and settled; validation (if logged) followed it.",
    "insufficient_data": "Too few finite training losses to judge the curve's shape (the point "
                         "detectors still run on them).",
}


def documented() -> dict[str, Entry]:
    """Every code and curve label the tool can emit: ``curve`` first, then the detectors'
    codes, the curve labels that are not codes, the comparison's and the pipeline's codes."""
    entries = {}
    curve = _curve_entry()
    if curve is not None:
        entries[CURVE] = curve
    for code in sorted(REGISTRY):
        if code == CURVE:
            continue
        cls = REGISTRY[code]
        sections = _clean(cls.doc_sections())
        entries[code] = Entry(code, cls.severity, cls.title, _first_line(sections.get("", "")),
                              sections)
    for label, meaning in CURVE_LABELS.items():
        if label not in entries:
            entries[label] = _label_entry(label, meaning, curve)
    for code, doc in sorted({**_compare_codes(), **PIPELINE_CODES}.items()):
        if code not in entries:
            sections = {"": doc["title"], **{k: v for k, v in doc.items() if k in DOC_SECTIONS}}
            entries[code] = Entry(code, doc["severity"], doc["title"].rstrip("."), doc["title"], sections)
    return entries


def lookup(code: str) -> Entry | None:
    """The entry of ``code`` (None when the tool never emits it)."""
    return documented().get(code)


def suggest(code: str) -> str | None:
    """The documented code closest to a mistyped ``code``, if one is close."""
    import difflib

    close = difflib.get_close_matches(code, list(documented()), n=1, cutoff=0.6)
    return close[0] if close else None


def _compare_codes() -> dict[str, dict[str, str]]:
    try:
        from runlens.compare.codes import CODES
    except ImportError:  # a trimmed install without the comparison
        return {}
    return CODES


def _label_entry(label: str, meaning: str, curve: Entry | None) -> Entry:
    sections = {"": f"Curve label: {meaning}", "What it detects": meaning,
                "Why it matters": "The curve label frames every finding; see `runlens explain curve`.",
                "How it decides": (curve.sections.get("How it decides", "") if curve else "")
                or "See `runlens explain curve`.",
                "What to try": "Nothing for the curve itself; read the findings, if any."
                if label == "healthy" else "Record more steps (or a longer run) before judging its shape.",
                "Parameters": "See `runlens explain curve`."}
    return Entry(label, "label", f"Curve label {label}", meaning, sections)


def missing_sections(entry: Entry) -> list[str]:
    return [s for s in ("", *DOC_SECTIONS) if not entry.sections.get(s)]


def explain_text(entry: Entry) -> str:
    """What ``runlens explain CODE`` prints."""
    head = f"{entry.code} ({entry.severity}): {entry.title}"
    out = [head, "=" * len(head), "", _md(entry.sections.get("", "")), ""]
    for name in DOC_SECTIONS:
        out += [f"{name}:", _indent(_md(entry.sections.get(name, "(not documented)"))), ""]
    return "\n".join(out)


def render_markdown() -> str:
    """The whole reference page."""
    docs = documented()
    out = ["# Detector reference", "",
           "<!-- Generated by `python -m runlens.detectors.catalog` from the detectors' docstrings;"
           " do not edit. -->", "",
           "Each finding code of `runlens analyze`, with how it decides and what to try. "
           "`runlens explain CODE` prints the same text.", "",
           "| code | severity | finding |", "|---|---|---|"]
    out += [f"| [`{e.code}`](#{e.code}) | {e.severity} | {e.title} |" for e in docs.values()]
    out.append("")
    for e in docs.values():
        out += [f"## {e.code}", "", f"*{e.severity}* - {_md(e.sections.get('', ''))}", ""]
        for name in DOC_SECTIONS:
            out += [f"### {name}", "", _md(e.sections.get(name, "(not documented)")), ""]
    return "\n".join(out)


def _md(text: str) -> str:
    """Docstring text as Markdown: RST ``literals`` become `code`."""
    return re.sub(r"``([^`]+)``", r"`\1`", text)


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
    return Entry(CURVE, "label", "Shape of the loss curve", _first_line(best.get("", "")), best)


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


def _indent(text: str) -> str:
    return "\n".join(("    " + line) if line.strip() else "" for line in text.splitlines())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render_markdown()
    if "--check" in argv:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE} is stale: run python -m runlens.detectors.catalog", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
