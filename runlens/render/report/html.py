"""The HTML post-mortem: one self-contained file, no network requests.

Styles are inline, charts are inline SVG, a report has no script: the page is
the same with JavaScript on or off (the index's filter box is its one script, a
few inline lines; without it the list is whole). The template (``reports/templates/
report.html.j2``) only displays a :class:`~runlens.render.report.view.ReportView`;
Jinja autoescaping escapes everything that came from the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from markupsafe import Markup

from runlens.render.names import distinct_names
from runlens.render.report.charts import render_charts
from runlens.render.report.view import ReportView, build_view
from runlens.render.templates import get_template

if TYPE_CHECKING:
    from runlens.render.contracts import ReportDataLike


def render_html(data: ReportDataLike, *, docs_base: str = "") -> str:
    """The HTML report of one run's :class:`~runlens.report_data.ReportData`, as a string. The
    reference of every code it holds is embedded; ``docs_base`` (``--docs-url``) adds links to the
    online reference."""
    view = build_view(data, docs_base=docs_base)
    charts = {c.key: _SafeChart(c.key, c.title, c.caption, Markup(c.svg), Markup(c.svg_narrow))
              for c in render_charts(data)}
    template = get_template("report.html.j2")
    return template.render(v=view, charts=_Charts(charts), curve_doc=view.curve_doc)


def render_index(entries: Sequence[tuple[ReportView, str | None]]) -> str:
    """An index page over several reports: ``(view, href)`` per run, ``href`` None when that run's
    HTML report was not written. Runs are listed worst first, named apart where names collide,
    under a header that counts them by worst severity and takes the worst run's colour."""
    labels = distinct_names([(v.name, v.path) for v, _ in entries])
    named = [(dataclasses.replace(v, label=label), href) for (v, href), label in zip(entries, labels, strict=True)]
    ordered = sorted(named, key=lambda e: (e[0].rank, e[0].label))
    tally = {sev: sum(v.worst == sev for v, _ in ordered) for sev in ("error", "warning", "info", "none")}
    worst = next((sev for sev, n in tally.items() if n), "none")
    return get_template("index.html.j2").render(
        entries=ordered, version=_version(entries), tally=tally, worst=worst)


def _version(entries: Sequence[tuple[ReportView, str | None]]) -> str:
    return entries[0][0].version if entries else ""


class _SafeChart:
    """A chart whose SVG is marked safe: matplotlib escaped its text already."""

    __slots__ = ("key", "title", "caption", "svg", "svg_narrow")

    def __init__(self, key: str, title: str, caption: str, svg: Markup, svg_narrow: Markup) -> None:
        self.key, self.title, self.caption, self.svg, self.svg_narrow = key, title, caption, svg, svg_narrow


class _Charts(dict):
    """Chart lookup for the template: a missing chart is ``None``, not an error
    (StrictUndefined would otherwise reject ``charts.lr`` on a run without lr)."""

    def __getattr__(self, key: str) -> _SafeChart | None:
        return self.get(key)

    def __getitem__(self, key: str) -> _SafeChart | None:
        return self.get(key)
