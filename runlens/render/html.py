"""The HTML post-mortem: one self-contained file, no network requests.

Styles are inline, charts are inline SVG, there is no script: the page is
the same with JavaScript on or off. The template (``reports/templates/
report.html.j2``) only displays a :class:`~runlens.render.view.ReportView`;
Jinja autoescaping escapes everything that came from the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup

from runlens.render.charts import render_charts
from runlens.render.view import ReportView, build_view


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The Jinja environment for HTML templates (autoescaping always on)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def render_html(diagnosis: Any, *, docs_base: str = "") -> str:
    """The HTML report of one diagnosis, as a string. The reference of every code it holds is
    embedded; ``docs_base`` (``--docs-url``) adds links to the online reference."""
    view = build_view(diagnosis, docs_base=docs_base)
    charts = {c.key: _SafeChart(c.key, c.title, c.caption, Markup(c.svg)) for c in render_charts(diagnosis)}
    template = environment().get_template("report.html.j2")
    return template.render(v=view, charts=_Charts(charts), curve_doc=view.curve_doc)


def render_index(entries: Sequence[tuple[ReportView, str | None]]) -> str:
    """An index page over several reports: ``(view, href)`` per run, ``href``
    None when that run's HTML report was not written."""
    return environment().get_template("index.html.j2").render(entries=entries, version=_version(entries))


def _version(entries: Sequence[tuple[ReportView, str | None]]) -> str:
    return entries[0][0].version if entries else ""


class _SafeChart:
    """A chart whose SVG is marked safe: matplotlib escaped its text already."""

    __slots__ = ("key", "title", "caption", "svg")

    def __init__(self, key: str, title: str, caption: str, svg: Markup) -> None:
        self.key, self.title, self.caption, self.svg = key, title, caption, svg


class _Charts(dict):
    """Chart lookup for the template: a missing chart is ``None``, not an error
    (StrictUndefined would otherwise reject ``charts.lr`` on a run without lr)."""

    def __getattr__(self, key: str) -> _SafeChart | None:
        return self.get(key)

    def __getitem__(self, key: str) -> _SafeChart | None:
        return self.get(key)
