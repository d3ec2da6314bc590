"""The audit summary as a plain-text table for a terminal, worst run first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runlens.render.audit.cells import COLUMNS, cells, summary
from runlens.render.escape import term_inline
from runlens.render.format import RESET, SEVERITY_ANSI
from runlens.render.names import distinct_names

if TYPE_CHECKING:
    from runlens.audit import AuditResult

_MAX_NAME = 40
_MAX_FINDINGS = 48
# The severity cell's colour (``--color``): an unreadable run is marked as an error is.
_ANSI = {**SEVERITY_ANSI, "unreadable": SEVERITY_ANSI["error"]}


def render_audit_text(result: AuditResult, *, color: bool = False) -> str:
    """One aligned row per run, then each unreadable run's error and the summary line;
    ``color`` marks the severity cell with ANSI colours (the padding stays outside them)."""
    labels = distinct_names([(row.name, row.run) for row in result.rows])  # two runs of one name told apart
    rows = [{**cells(row), "name": label} for row, label in zip(result.rows, labels, strict=True)]
    for c in rows:
        # A run name must not retitle the terminal or clear it.
        c["name"] = _clip(term_inline(c["name"]), _MAX_NAME)
        c["findings"] = _clip(c["findings"], _MAX_FINDINGS)
    keys = [key for _, key in COLUMNS]
    widths = {key: max([len(head)] + [len(c[key]) for c in rows]) for head, key in COLUMNS}
    lines = ["  ".join(head.upper().ljust(widths[key]) for head, key in COLUMNS).rstrip()]
    for c in rows:
        cells_ = [c[key].ljust(widths[key]) for key in keys]
        if color and c["severity"] in _ANSI:
            sev = c["severity"]
            at = keys.index("severity")
            cells_[at] = f"{_ANSI[sev]}{sev}{RESET}" + cells_[at][len(sev):]
        lines.append("  ".join(cells_).rstrip())
    errors = [row for row in result.rows if row.error]
    if errors:
        lines.append("")
        mark = f"{_ANSI['unreadable']}not analyzed{RESET}" if color else "not analyzed"
        lines += [f"{mark}: {term_inline(row.run)}: {term_inline(row.error)}" for row in errors]
    lines += ["", summary(result)]
    return "\n".join(lines) + "\n"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
