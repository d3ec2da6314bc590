"""A console line cleaned of what never carries a metric: colour codes, e-mail and Markdown quoting, a
leading timestamp and logger prefixes; and runs of spaces squeezed to one.

A leaf of the console-line reader (:mod:`runlens.io.importers._textline`, whose docstring lists the
prefixes).
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]")
_QUOTE = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_PREFIXES = re.compile(
    r"^\s*(?:"
    r"\[?\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?[\s,:-]*"
    r"|\[?\d{1,2}/\d{1,2}(?:/\d{2,4})? \d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?[\s,:-]*"
    r"|\[?\d{4}/\d{1,2}/\d{1,2} \d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]?[\s,:-]*"
    r"|[\w.]+ (?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL):\s*"
    r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s+"
    r"|[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+\S+:\d+\]\s*"
    r"|(?:-\s*)?[\w.$]+\s+-\s+(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL)\s+-\s*"
    r"|(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL)(?::[\w.]+:|\s+[\w.$]+:\d+\s+-\s*|\s*[:|\]-]\s*)"
    r"|\[(?:INFO|WARNING|WARN|DEBUG|ERROR|rank\d+)\]\s*"
    r")+")
_RUNS = re.compile(r"[ \t]{2,}")


def clean(raw: str) -> str:
    """The line without colour codes, quoting and timestamp/logger prefixes."""
    if "\x1b" in raw:
        raw = _ANSI.sub("", raw)
    if raw.lstrip().startswith(">"):
        raw = _QUOTE.sub("", raw)
    m = _PREFIXES.match(raw)
    return raw[m.end():] if m else raw


def squeeze(raw: str) -> str:
    """``raw`` with every run of spaces and tabs as one space: the step and field patterns allow
    spaces around optional separators (``epoch  :  3``), which backtrack on long runs of them; with
    runs of one, no pattern here is worse than linear on a line."""
    return _RUNS.sub(" ", raw) if ("  " in raw or "\t" in raw) else raw
