"""The audit summary in each format, one module per format; the cells every table shares are
formatted in :mod:`runlens.render.audit.cells`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runlens.audit import AuditResult


def render_audit(result: AuditResult, fmt: str, *, fail_on: str = "error", reports_base: str | None = None,
                 color: bool = False) -> str:
    """The audit summary in ``fmt`` (a ``--format`` choice: text, json, csv, junit, md, html)."""
    if fmt == "json":
        from runlens.render.audit.json import render_audit_json

        return render_audit_json(result)
    if fmt == "csv":
        from runlens.render.audit.csv import render_audit_csv

        return render_audit_csv(result)
    if fmt == "junit":
        from runlens.render.audit.junit import render_audit_junit

        return render_audit_junit(result, fail_on=fail_on)
    if fmt == "md":
        from runlens.render.audit.markdown import render_audit_markdown

        return render_audit_markdown(result, reports_base=reports_base)
    if fmt == "html":
        from runlens.render.audit.html import render_audit_html

        return render_audit_html(result, reports_base=reports_base)
    from runlens.render.audit.text import render_audit_text

    return render_audit_text(result, color=color)
