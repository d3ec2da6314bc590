"""The audit as a GitHub-flavoured Markdown table (a CI job summary, a PR comment)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runlens.render.audit.cells import COLUMNS, NUMERIC, cells, report_href, summary
from runlens.render.escape import md_cell, md_inline
from runlens.render.names import distinct_names

if TYPE_CHECKING:
    from runlens.audit import AuditResult

_BADGE = {"unreadable": "⛔ unreadable", "error": "🔴 error", "warning": "🟠 warning",
          "info": "🔵 info", "ok": "🟢 ok"}


def render_audit_markdown(result: AuditResult, *, reports_base: str | None = None,
                          title: str = "runlens audit") -> str:
    """A heading, the summary line, one table row per run (names link to reports), errors."""
    lines = [f"## {md_inline(title)}", "", md_inline(summary(result)), ""]
    lines.append("| " + " | ".join(head for head, _ in COLUMNS) + " |")
    lines.append("|" + "|".join("---:" if key in NUMERIC else "---" for _, key in COLUMNS) + "|")
    labels = distinct_names([(row.name, row.run) for row in result.rows])
    for row, label in zip(result.rows, labels, strict=True):
        c = cells(row)
        c["severity"], c["name"] = _BADGE[c["severity"]], label  # a name shared by two runs gets its path
        # Numbers, labels and badges are ours and safe; only run-supplied text needs escaping.
        out = {key: md_cell(c[key]) if key in _FREE_TEXT else (c[key] or " ") for _, key in COLUMNS}
        href = report_href(row, reports_base)
        if href:
            out["name"] = f"[{out['name']}]({href})"
        lines.append("| " + " | ".join(out[key] for _, key in COLUMNS) + " |")
    errors = [row for row in result.rows if row.error]
    if errors:
        lines += ["", "**Runs that could not be analyzed**", ""]
        lines += [f"- {md_inline(row.run)}: {md_inline(row.error)}" for row in errors]
    return "\n".join(lines) + "\n"


_FREE_TEXT = {"name", "findings"}
