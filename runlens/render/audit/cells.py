"""How an audit row's values read in a table cell, shared by the audit renderers.

Only formatting: every number was computed by the audit. ``None`` means
"not logged" and shows as an empty cell; NaN and Inf are shown as such,
because a final loss of ``nan`` is the news.
"""

from __future__ import annotations

import math
import os
import posixpath
from typing import TYPE_CHECKING
from urllib.parse import quote

from runlens.render.format import cell_number

if TYPE_CHECKING:
    from runlens.audit import AuditResult, AuditRow

#: (header, key of ``cells``) in display order.
COLUMNS = (
    ("severity", "severity"), ("run", "name"), ("status", "status"), ("curve", "curve"),
    ("findings", "findings"), ("final loss", "final_loss"), ("best loss", "best_loss"),
    ("best val loss", "best_val"), ("steps", "steps"), ("duration", "duration"),
)
#: The keys of ``cells`` that hold numbers (right-aligned in the Markdown and HTML tables).
NUMERIC = frozenset({"final_loss", "best_loss", "best_val", "steps", "duration"})


def duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return ""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def severity(row: AuditRow) -> str:
    """``unreadable``, the worst severity, or ``ok``."""
    return "unreadable" if row.error else (row.worst or "ok")


def findings(row: AuditRow, limit: int = 3) -> str:
    shown = [f["code"] for f in row.worst_findings(limit)]
    more = len(row.findings) - len(shown)
    return ", ".join(shown) + (f" +{more}" if more > 0 else "")


def cells(row: AuditRow) -> dict[str, str]:
    """Every column of ``COLUMNS`` as display text."""
    best_val = cell_number(row.best_val_loss)
    if best_val and row.best_val_step is not None:
        best_val += f" @ {row.best_val_step:,}"
    return {
        "severity": severity(row), "name": row.name, "status": row.status, "curve": row.curve,
        "findings": findings(row), "final_loss": cell_number(row.final_loss),
        "best_loss": cell_number(row.best_loss), "best_val": best_val,
        "steps": "" if row.steps is None else f"{row.steps:,}", "duration": duration(row.duration_s),
    }


def summary(result: AuditResult) -> str:
    """One line: how many runs, and how many at each worst severity."""
    c = result.counts()
    words = {"unreadable": "unreadable", "error": "with errors", "warning": "with warnings", "info": "info only"}
    parts = [f"{c[k]} {words[k]}" for k in words if c[k]]
    parts.append(f"{c['clean']} clean")
    return f"{c['runs']} run{'s' if c['runs'] != 1 else ''}: " + ", ".join(parts)


def report_href(row: AuditRow, reports_base: str | None) -> str | None:
    """Link from the summary to the run's report (``reports_base`` is relative to the summary)."""
    if not row.report or reports_base is None:
        return None
    base = reports_base.replace(os.sep, "/")
    return quote(posixpath.join(base, row.report) if base not in ("", ".") else row.report)
