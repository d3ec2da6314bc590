"""A comparison for a terminal."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from runlens.render.compare.table import config_rows, rows, verdict
from runlens.render.escape import term_inline
from runlens.render.format import RESET, SEVERITY_ANSI

if TYPE_CHECKING:
    from runlens.compare.model import Comparison

_MAX_CONFIG = 6


def _first_sentence(text: str) -> str:
    # Not report.text.first_sentence: a comparison's advice keeps its ';' clauses (what else to check).
    head, dot, _ = re.sub(r"^\(?\d{1,2}[.)]\s+", "", text).partition(". ")  # numbered advice: its first item
    return head + "." if dot else text


def render_compare_text(c: Comparison, *, color: bool = False, quiet: bool = False, verbose: bool = False) -> str:
    """The comparison for a terminal: ``quiet`` the verdict line alone; ``verbose`` adds each
    finding's evidence and every config key that differs."""
    head = f"{term_inline(c.run_name)} vs baseline {term_inline(c.baseline_name)}"
    if quiet:
        return f"{head}: {verdict(c)}\n"
    lines = [f"{head}  ({c.shared_steps:,} shared steps)", f"verdict: {verdict(c)}", ""]
    for f in c.findings:
        mark = f"{f.severity.upper():7}"
        if color:
            mark = f"{SEVERITY_ANSI.get(f.severity, '')}{mark}{RESET}"
        lines.append(f"{mark} {f.code}: {term_inline(f.title)}")
        if verbose:
            lines += [f"        {term_inline(k)}: {term_inline(json.dumps(v, default=str))}"
                      for k, v in f.evidence.items()]
        if f.advice:
            lines.append(f"        try: {term_inline(f.advice if verbose else _first_sentence(f.advice))}")
    if c.findings:
        lines.append("")
    # Layer names in the checks come from the runs: no escape sequences reach the terminal.
    table = [("check", "run", "baseline", "test"), *(tuple(term_inline(x) for x in r) for r in rows(c))]
    widths = [max(len(r[i]) for r in table) for i in range(3)]
    for r in table:
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])
    config = [tuple(term_inline(x) for x in r) for r in config_rows(c)]
    if config:
        # The usual suspects (a knob is named) first; the rest behind -v past a few lines.
        config.sort(key=lambda r: "(" not in r[1])
        shown = config if verbose else config[:_MAX_CONFIG]
        lines += ["", "config diff (run vs baseline):"]
        width = max(len(r[0]) for r in shown)
        lines += [f"  {r[0].ljust(width)}  {r[1]}: {r[3]} -> {r[2]}" for r in shown]
        if len(shown) < len(config):
            lines.append(f"  ... and {len(config) - len(shown)} more keys (-v shows them)")
    else:
        lines += ["", "config: the same in both runs"]
    lines += [f"note: {term_inline(n)}" for n in c.notes]
    return "\n".join(line.rstrip() for line in lines) + "\n"
