"""The one Jinja environment: every template lives in ``reports/templates/``.

Configured once for every product (report, audit, compare):

- **autoescape by extension**: ``*.html.j2`` (and anything else) is HTML-escaped, ``*.md.j2`` is
  not: Markdown is not HTML, and its templates pass every run string through an explicit
  escaping filter (``md``, ``cell``, ``code``, ``html``, ``block``) instead;
- ``StrictUndefined``: a misspelt name is an error in the tests, never an empty cell in a report;
- ``finalize`` = :func:`~runlens.render.escape.html_value`: control and bidi characters leave every
  plain string before it is escaped or printed (a run name cannot reverse a title);
- the trailing newline of a template file is kept (a template that must not end in one says so
  with a whitespace-stripping comment).

Markdown templates also need ``trim_blocks``/``lstrip_blocks`` (a ``{% if %}`` on its own line must
leave no blank line in a table), which would change every HTML page's whitespace; Jinja fixes
those at lexing time per environment, so :func:`get_template` serves ``*.md.j2`` from an overlay
of the one environment that shares its loader, filters, finalize and undefined.
"""

from __future__ import annotations

from functools import lru_cache

import jinja2

from runlens.render.escape import (
    html_value,
    md_cell,
    md_code_block,
    md_code_span,
    md_html,
    md_inline,
    wordbreaks,
)


def _cut_text(value: object, limit: int | None) -> str:
    text = "" if value is None else str(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The Jinja environment of every runlens template (see the module's rules)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), disabled_extensions=("md.j2",),
                                            default_for_string=True, default=True),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        finalize=html_value,
    )
    env.filters.update({
        "wordbreaks": wordbreaks,
        "md": lambda v, limit=None: md_inline(_cut_text(v, limit)),
        "cell": lambda v, limit=None: md_cell(_cut_text(v, limit)),
        "code": lambda v, limit=None: md_code_span(_cut_text(v, limit)),
        "html": lambda v, limit=None: md_html(_cut_text(v, limit)),
        "block": lambda v, tail=8_000: md_code_block(str(v), tail=tail),
    })
    return env


@lru_cache(maxsize=1)
def _markdown_environment() -> jinja2.Environment:
    return environment().overlay(trim_blocks=True, lstrip_blocks=True)


def get_template(name: str) -> jinja2.Template:
    """The template ``name`` of ``reports/templates/``; ``*.md.j2`` with Markdown's block whitespace."""
    env = _markdown_environment() if name.endswith(".md.j2") else environment()
    return env.get_template(name)
