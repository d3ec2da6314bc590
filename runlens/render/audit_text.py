"""The audit summary as a plain-text table for a terminal, worst run first."""

from __future__ import annotations

from typing import Any

from runlens.render.audit_cells import COLUMNS, cells, summary

_MAX_NAME = 40
_MAX_FINDINGS = 48


def render_audit_text(result: Any) -> str:
    """One aligned row per run, then each unreadable run's error and the summary line."""
    rows = [cells(row) for row in result.rows]
    for c in rows:
        c["name"] = _clip(c["name"], _MAX_NAME)
        c["findings"] = _clip(c["findings"], _MAX_FINDINGS)
    keys = [key for _, key in COLUMNS]
    widths = {key: max([len(head)] + [len(c[key]) for c in rows]) for head, key in COLUMNS}
    lines = ["  ".join(head.upper().ljust(widths[key]) for head, key in COLUMNS).rstrip()]
    for c in rows:
        lines.append("  ".join(c[key].ljust(widths[key]) for key in keys).rstrip())
    errors = [row for row in result.rows if row.error]
    if errors:
        lines.append("")
        lines += [f"not analyzed: {row.run}: {row.error}" for row in errors]
    lines += ["", summary(result)]
    return "\n".join(lines) + "\n"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
