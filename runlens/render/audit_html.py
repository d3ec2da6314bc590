"""The audit as one self-contained HTML page: a sortable-looking table, no external assets.

Names link to the per-run reports when the audit wrote them (``--reports``).
The template only displays: the cells are formatted in ``audit_cells``.
"""

from __future__ import annotations

from typing import Any

import jinja2

from runlens.render.audit_cells import COLUMNS, cells, report_href, summary
from runlens.render.escape import html_value
from runlens.render.view import distinct_names

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem;color:#1f2328}
h1{font-size:1.4rem;margin:0 0 .3rem} p.summary{color:#59636e;margin:0 0 1rem}
table{border-collapse:collapse;width:100%} th,td{padding:.35rem .6rem;border-bottom:1px solid #d1d9e0;
text-align:left;vertical-align:top} th{background:#f6f8fa;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.sev{font-weight:600;border-radius:1rem;padding:.05rem .55rem;white-space:nowrap}
.sev-unreadable{background:#1f2328;color:#fff}.sev-error{background:#ffebe9;color:#a40e26}
.sev-warning{background:#fff8c5;color:#7d4e00}.sev-info{background:#ddf4ff;color:#0550ae}
.sev-ok{background:#dafbe1;color:#116329} code{font-size:12px}
td.err{color:#a40e26;font-size:12px}
</style></head><body>
<h1>{{ title }}</h1>
<p class="summary">{{ summary }}</p>
<table>
<thead><tr>{% for head, key in columns %}<th{% if key in numeric %} class="num"{% endif %}>{{ head }}</th>{% endfor %}</tr></thead>
<tbody>
{% for r in rows %}<tr>
{% for head, key in columns %}{% if key == "severity" %}<td><span class="sev sev-{{ r.cells.severity }}">{{ r.cells.severity }}</span></td>
{% elif key == "name" %}<td>{% if r.href %}<a href="{{ r.href }}">{{ r.cells.name }}</a>{% else %}{{ r.cells.name }}{% endif %}<br><code>{{ r.run }}</code>{% if r.error %}<div class="err">{{ r.error }}</div>{% endif %}</td>
{% elif key == "findings" %}<td>{% for f in r.findings %}<span title="{{ f.title }}">{{ f.code }}</span>{% if not loop.last %}, {% endif %}{% endfor %}{% if r.more %} +{{ r.more }}{% endif %}</td>
{% else %}<td{% if key in numeric %} class="num"{% endif %}>{{ r.cells[key] }}</td>
{% endif %}{% endfor %}</tr>
{% endfor %}</tbody></table>
</body></html>
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, finalize=html_value)
_NUMERIC = {"final_loss", "best_loss", "best_val", "steps", "duration"}


def render_audit_html(result: Any, *, reports_base: str | None = None,
                      title: str = "runlens audit") -> str:
    """The page; ``reports_base`` is the reports folder relative to where the page is saved."""
    rows = []
    labels = distinct_names([(row.name, row.run) for row in result.rows])
    for row, label in zip(result.rows, labels, strict=True):
        shown = row.worst_findings(3)
        rows.append({"cells": {**cells(row), "name": label}, "run": row.run, "error": row.error,
                     "href": report_href(row, reports_base), "findings": shown,
                     "more": len(row.findings) - len(shown)})
    return _ENV.from_string(_TEMPLATE).render(title=title, summary=summary(result), rows=rows,
                                              columns=COLUMNS, numeric=_NUMERIC)
