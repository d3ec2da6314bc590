"""The audit summary in each format, one module per format; the cells every table shares are
formatted in :mod:`runlens.render.audit.cells`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runlens.errors import UsageError

if TYPE_CHECKING:
    from runlens.audit import AuditResult


@dataclass(frozen=True)
class Options:
    """What ``runlens audit`` hands every format; each renderer takes what it uses."""

    fail_on: str = "error"
    reports_base: str | None = None
    color: bool = False


#: A format's renderer of an audit result.
Renderer = Callable[["AuditResult", Options], str]


# Each format's module is imported when it renders: the CLI reads the format names at start-up
# without paying for Jinja or the XML writer.
def _text(result: AuditResult, opts: Options) -> str:
    from runlens.render.audit.text import render_audit_text

    return render_audit_text(result, color=opts.color)


def _json(result: AuditResult, _opts: Options) -> str:
    from runlens.render.audit.json import render_audit_json

    return render_audit_json(result)


def _markdown(result: AuditResult, opts: Options) -> str:
    from runlens.render.audit.markdown import render_audit_markdown

    return render_audit_markdown(result, reports_base=opts.reports_base)


def _html(result: AuditResult, opts: Options) -> str:
    from runlens.render.audit.html import render_audit_html

    return render_audit_html(result, reports_base=opts.reports_base)


def _csv(result: AuditResult, _opts: Options) -> str:
    from runlens.render.audit.csv import render_audit_csv

    return render_audit_csv(result)


def _junit(result: AuditResult, opts: Options) -> str:
    from runlens.render.audit.junit import render_audit_junit

    return render_audit_junit(result, fail_on=opts.fail_on)


#: Each ``--format`` choice and its renderer, in the order ``runlens audit --help`` lists them.
RENDERERS: dict[str, Renderer] = {"text": _text, "json": _json, "md": _markdown, "html": _html,
                                  "csv": _csv, "junit": _junit}


def render_audit(result: AuditResult, fmt: str, *, fail_on: str = "error", reports_base: str | None = None,
                 color: bool = False) -> str:
    """The audit summary in ``fmt`` (a key of :data:`RENDERERS`); another format is a
    :class:`~runlens.errors.UsageError`."""
    render = RENDERERS.get(fmt)
    if render is None:
        raise UsageError(f"unknown audit format {fmt!r}: one of {', '.join(RENDERERS)}")
    return render(result, Options(fail_on=fail_on, reports_base=reports_base, color=color))
