"""A comparison as one HTML page (template ``reports/templates/compare.html.j2``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runlens.render.compare.table import config_rows, rows, verdict
from runlens.render.templates import get_template

if TYPE_CHECKING:
    from runlens.compare.model import Comparison


def render_compare_html(c: Comparison) -> str:
    return get_template("compare.html.j2").render(c=c, rows=rows(c), config=config_rows(c), verdict=verdict(c),
                                                  shared_steps=f"{c.shared_steps:,}")
