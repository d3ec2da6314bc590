"""Plain-text rendering of a diagnosis, for a terminal, read in ten seconds.

By default: the run, the headline (outcome, where it starts, its cause), the
status and curve, the key numbers on one line, then each finding's one-line
statement and its fix (or the finding that causes it). ``verbose`` adds the
curve's reason, and each finding's evidence in readable labels with units,
what was observed apart from the thresholds it was judged by. ``quiet`` is
the headline alone. No analysis happens here: everything shown is in the
:class:`~runlens.diagnosis.Diagnosis`.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from runlens.diagnosis import Diagnosis, Finding, jsonable
from runlens.render.escape import term_inline
from runlens.render.format import RESET, SEVERITY_ANSI, float_text

if TYPE_CHECKING:
    from runlens.render.contracts import ItemLike

WIDTH = 88
_MARK = {"error": "ERROR", "warning": "WARN ", "info": "INFO "}
_MAX_LAYERS = 6
_MAX_ITEMS = 8
_MAX_WARNINGS = 3
_INDENT = "      "


def render(diagnosis: Diagnosis, *, color: bool = False, verbose: bool = False, quiet: bool = False,
           evidence: Sequence[Sequence[ItemLike]] | None = None) -> str:
    """The diagnosis as text lines ending in a newline; ``color`` marks severities with ANSI colours.
    ``evidence`` (``runlens.report_data.evidence_of``, or a ReportData's ``evidence``) labels what
    ``verbose`` shows: observations apart from thresholds, with units; without it, the raw keys."""
    if quiet:
        return f"{term_inline(diagnosis.name)}: {term_inline(diagnosis.headline)}\n"
    lines = [f"{term_inline(diagnosis.name)}  ({term_inline(diagnosis.path)})",
             *_wrap(diagnosis.headline, ""),
             f"status: {diagnosis.status_text}    curve: {diagnosis.curve.label}"]
    lines += _pack(key_numbers_line(diagnosis.key_numbers).split("; "))
    if verbose and diagnosis.curve.reason:
        lines += _wrap(f"curve: {diagnosis.curve.reason}", "  ")
    lines.append("")
    if not diagnosis.findings:
        lines.append("No findings.")
    evidence = _evidence_items(diagnosis, evidence) if verbose else ()
    for i, finding in enumerate(diagnosis.findings):
        lines += _finding(finding, color, verbose, evidence[i] if verbose else ())
        if verbose:
            lines.append("")
    if not verbose and diagnosis.findings:
        lines.append("")
    lines += _warnings(diagnosis.warnings, verbose)
    lines.append(summary_line(diagnosis, verbose))
    return "\n".join(lines) + "\n"


def key_numbers_line(n: Mapping[str, Any]) -> str:
    """The key numbers in one line, e.g. ``final loss 0.576 (lowest 0.3965 at step 278) ...``; the
    axis is the run's own (``epoch`` for a log counted in epochs)."""
    axis = n.get("axis") or "step"
    parts = []
    if n.get("final_loss") is not None:
        low = (f" (lowest {number(n['min_loss'])} at {axis} {n['min_loss_step']:,})"
               if n.get("min_loss") is not None and n.get("min_loss_step") != n.get("final_loss_step") else "")
        parts.append(f"final loss {number(n['final_loss'])}{low}")
    if n.get("val_min") is not None:
        parts.append(f"best val loss {number(n['val_min'])} at {axis} {n['val_min_step']:,}")
    if n.get("first_nonfinite_step") is not None:
        parts.append(f"first NaN/Inf loss at {axis} {n['first_nonfinite_step']:,}")
    if n.get("steps"):
        parts.append(f"{n['steps']:,} {axis}s")
    if n.get("duration_s") is not None:
        parts.append(f"{duration(n['duration_s'])}")
    return "; ".join(parts)


def number(x: object) -> str:
    """A key number as every text renderer shows it: 4 significant digits; NaN and Inf by name."""
    if isinstance(x, str):
        return {"nan": "NaN", "inf": "Inf", "-inf": "-Inf"}.get(x, x)
    return float_text(x) if isinstance(x, float) else str(x)


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def summary_line(diagnosis: Diagnosis, verbose: bool = False) -> str:
    counts = {s: sum(f.severity == s for f in diagnosis.findings) for s in ("error", "warning", "info")}
    words = [f"{counts['error']} error{'s' if counts['error'] != 1 else ''}",
             f"{counts['warning']} warning{'s' if counts['warning'] != 1 else ''}", f"{counts['info']} info"]
    hint = "" if verbose or not diagnosis.findings else "  (-v: the evidence behind each finding)"
    return ", ".join(words) + hint


def _evidence_items(diagnosis: Diagnosis, labelled: Sequence[Sequence[ItemLike]] | None) -> tuple:
    """Each finding's evidence as labelled items, observations before thresholds (as given, from
    the report data, which knows each detector's parameters; else the raw keys). Labelled evidence
    of another diagnosis (one list per finding, so a different count) is a caller's bug."""
    if labelled is not None:
        if len(labelled) != len(diagnosis.findings):
            raise ValueError(f"evidence for {len(labelled)} findings given with a diagnosis of "
                             f"{len(diagnosis.findings)}: pass evidence_of(diagnosis) of this diagnosis")
        return tuple(labelled)
    return tuple(tuple(_Plain(str(k), str(k).replace("_", " "), v) for k, v in f.evidence.items())
                 for f in diagnosis.findings)


class _Plain:
    """An evidence item without report data: the key as words, no unit, not a threshold."""

    unit, threshold = "", False

    def __init__(self, key: str, label: str, value: object) -> None:
        self.key, self.label, self.value = key, label, value


def _finding(f: Finding, color: bool, verbose: bool, items: tuple = ()) -> list[str]:
    mark = f"{SEVERITY_ANSI[f.severity]}{_MARK[f.severity]}{RESET}" if color else _MARK[f.severity]
    lines = [f"{mark} {f.code}: {term_inline(f.title)}"]
    causes = [c for c in f.evidence.get("caused_by", ()) if isinstance(c, str)]
    if not verbose:
        if causes:
            lines.append(f"{_INDENT}caused by {causes[0]}: fix that first")
        elif f.advice:
            lines.append(f"{_INDENT}fix: {term_inline(first_sentence(f.advice))}")
        return lines
    if f.step is not None:
        lines.append(f"{_INDENT}step: {f.step:,}")
    if f.layers:
        shown = ", ".join(f.layers[:_MAX_LAYERS])
        more = f" (+{len(f.layers) - _MAX_LAYERS} more)" if len(f.layers) > _MAX_LAYERS else ""
        lines += _wrap(f"layers: {shown}{more}", _INDENT)
    lines += _evidence(items)
    if causes:
        lines += _wrap(f"caused by: {', '.join(causes)}", _INDENT)
    if f.advice:
        lines += _wrap(f"try: {f.advice}", _INDENT)
    return lines


def _evidence(items: tuple) -> list[str]:
    lines = []
    shown = [i for i in items if i.key != "caused_by"]
    for title, group in (("observed", [i for i in shown if not i.threshold]),
                         ("judged against", [i for i in shown if i.threshold])):
        if group:
            lines.append(f"{_INDENT}{title}:")
            for item in group:
                unit = f" {item.unit}" if item.unit and item.value is not None else ""
                lines += _wrap(f"{item.label}: {value_text(item.value)}{unit}", _INDENT + "  ")
    return lines


def first_sentence(text: str) -> str:
    """The advice's most likely fix: its first sentence (or clause list up to the first ';')."""
    # Numbered advice ("1. If the loss ... 2. Inspect ...") leads with its first item, not the "1.".
    text = re.sub(r"^\(?\d{1,2}[.)]\s+", "", " ".join(text.split()))
    m = re.match(r"(.+?[.;])(\s|$)", text)
    return (m.group(1) if m else text).rstrip(";.") + "."


def value_text(value: object) -> str:
    value = jsonable(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return number(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    # Evidence can name thousands of layers; a terminal shows the first few.
    if isinstance(value, Mapping):
        items = [f"{k}={value_text(v)}" for k, v in list(value.items())[:_MAX_ITEMS]]
        return ", ".join(items) + (", ..." if len(value) > _MAX_ITEMS else "")
    if isinstance(value, list):
        items = [value_text(v) for v in value[:_MAX_ITEMS]]
        return "[" + ", ".join(items) + (", ..." if len(value) > _MAX_ITEMS else "") + "]"
    return "none" if value is None else str(value)


def _pack(parts: list[str]) -> list[str]:
    """``parts`` joined by "; " into lines of at most WIDTH, never breaking inside a part."""
    lines: list[str] = []
    for part in (p for p in parts if p):
        if lines and len(lines[-1]) + 2 + len(part) <= WIDTH:
            lines[-1] += "; " + part
        else:
            lines.append(part if not lines else "  " + part)
    return lines


def _warnings(warnings: tuple[str, ...], verbose: bool) -> list[str]:
    if not warnings:
        return []
    shown = warnings if verbose else warnings[:_MAX_WARNINGS]
    lines = ["Warnings while reading or analysing:"]
    lines += _wrap_all([f"- {w}" for w in shown], "  ")
    if len(shown) < len(warnings):
        lines.append(f"  ... and {len(warnings) - len(shown)} more (-v shows them)")
    return lines + [""]


def _wrap_all(texts: list[str], indent: str) -> list[str]:
    return [line for t in texts for line in _wrap(t, indent)[:2]]


def _wrap(text: str, indent: str) -> list[str]:
    # Run-supplied text (layer names, messages) must not drive the terminal: no escapes, no controls.
    return textwrap.wrap(term_inline(text), WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [indent]
