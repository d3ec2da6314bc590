"""Plain-text rendering of a diagnosis, for a terminal.

The verdict comes first (status and curve label), then the findings in the
diagnosis's order (most severe first), each with its step, layers, the
numbers behind it and what to try, then reading warnings. No analysis
happens here: everything shown is in the :class:`~runlens.diagnosis.Diagnosis`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from runlens.diagnosis import Diagnosis, Finding, jsonable
from runlens.render.escape import term_inline

WIDTH = 88
_MARK = {"error": "ERROR", "warning": "WARN ", "info": "INFO "}
_ANSI = {"error": "\033[1;31m", "warning": "\033[33m", "info": "\033[36m"}
_RESET = "\033[0m"
_MAX_LAYERS = 6
_MAX_ITEMS = 8


def render(diagnosis: Diagnosis, *, color: bool = False) -> str:
    """The diagnosis as text lines ending in a newline; ``color`` marks severities with ANSI colours."""
    run = diagnosis.run
    lines = [f"{term_inline(run.name)}  ({term_inline(run.path)})",
             f"status: {run.status}    curve: {diagnosis.curve.label}"]
    if diagnosis.curve.reason:
        lines += _wrap(diagnosis.curve.reason, "  ")
    lines.append("")
    if not diagnosis.findings:
        lines.append("No findings.")
    for finding in diagnosis.findings:
        lines += _finding(finding, color)
        lines.append("")
    if diagnosis.warnings:
        lines.append("Warnings while reading or analysing:")
        lines += [f"  - {term_inline(w)}" for w in diagnosis.warnings]
        lines.append("")
    lines.append(_summary(diagnosis))
    return "\n".join(lines) + "\n"


def _finding(f: Finding, color: bool = False) -> list[str]:
    mark = f"{_ANSI[f.severity]}{_MARK[f.severity]}{_RESET}" if color else _MARK[f.severity]
    lines = [f"{mark} {f.code}: {term_inline(f.title)}"]
    if f.step is not None:
        lines.append(f"      step: {f.step:,}")
    if f.layers:
        shown = ", ".join(f.layers[:_MAX_LAYERS])
        more = f" (+{len(f.layers) - _MAX_LAYERS} more)" if len(f.layers) > _MAX_LAYERS else ""
        lines += _wrap(f"layers: {shown}{more}", "      ")
    for key, value in jsonable(f.evidence).items():
        lines += _wrap(f"{key}: {_value(value)}", "      ")
    if f.advice:
        lines += _wrap(f"try: {f.advice}", "      ")
    return lines


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    # Evidence can name thousands of layers; a terminal shows the first few.
    if isinstance(value, Mapping):
        items = [f"{k}={_value(v)}" for k, v in list(value.items())[:_MAX_ITEMS]]
        return ", ".join(items) + (", ..." if len(value) > _MAX_ITEMS else "")
    if isinstance(value, list):
        items = [_value(v) for v in value[:_MAX_ITEMS]]
        return "[" + ", ".join(items) + (", ..." if len(value) > _MAX_ITEMS else "") + "]"
    return str(value)


def _wrap(text: str, indent: str) -> list[str]:
    # Run-supplied text (layer names, messages) must not drive the terminal: no escapes, no controls.
    return textwrap.wrap(term_inline(text), WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [indent]


def _summary(diagnosis: Diagnosis) -> str:
    counts = {s: sum(f.severity == s for f in diagnosis.findings) for s in ("error", "warning", "info")}
    return f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
