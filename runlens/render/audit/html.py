"""The audit as one self-contained HTML page: a sortable-looking table, no external assets.

Names link to the per-run reports when the audit wrote them (``--reports``).
The template only displays: the cells are formatted in :mod:`runlens.render.audit.cells`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runlens.render.audit.cells import COLUMNS, NUMERIC, cells, report_href, summary
from runlens.render.names import distinct_names
from runlens.render.templates import get_template

if TYPE_CHECKING:
    from runlens.audit import AuditResult


def render_audit_html(result: AuditResult, *, reports_base: str | None = None,
                      title: str = "runlens audit") -> str:
    """The page; ``reports_base`` is the reports folder relative to where the page is saved."""
    rows = []
    labels = distinct_names([(row.name, row.run) for row in result.rows])
    for row, label in zip(result.rows, labels, strict=True):
        shown = row.worst_findings(3)
        rows.append({"cells": {**cells(row), "name": label}, "run": row.run, "error": row.error,
                     "href": report_href(row, reports_base), "findings": shown,
                     "more": len(row.findings) - len(shown)})
    return get_template("audit.html.j2").render(title=title, summary=summary(result), rows=rows,
                                              columns=COLUMNS, numeric=NUMERIC)
