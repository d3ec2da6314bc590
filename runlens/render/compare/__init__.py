"""A baseline comparison as text, JSON, Markdown or HTML, one module per format.

Each format shows the same three parts (:mod:`runlens.render.compare.table`): the verdict
(findings, most severe first), the table of checks with their numbers, and notes on what could
not be compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from runlens.render.compare.html import render_compare_html
from runlens.render.compare.json import render_compare_json
from runlens.render.compare.markdown import render_compare_markdown
from runlens.render.compare.table import verdict_line
from runlens.render.compare.text import render_compare_text

if TYPE_CHECKING:
    from runlens.compare.model import Comparison

#: Each format's renderer of a comparison alone (text's options are passed by ``runlens compare``).
RENDERERS: dict[str, Callable[[Comparison], str]] = {"text": render_compare_text, "json": render_compare_json,
             "md": render_compare_markdown, "html": render_compare_html}

__all__ = ["RENDERERS", "render_compare_html", "render_compare_json", "render_compare_markdown",
           "render_compare_text", "verdict_line"]
