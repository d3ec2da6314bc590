"""The audit's formats: one table of renderers, the CLI's --format choices read from it, no fallback."""

from __future__ import annotations

import pytest

from runlens.audit import AuditResult, AuditRow
from runlens.cli.audit import FORMATS
from runlens.errors import UsageError
from runlens.render.audit import RENDERERS, render_audit


def _result() -> AuditResult:
    row = AuditRow(run="/r/calm", name="calm", status="finished", curve="healthy", findings=(),
                   report="calm-1.html")
    return AuditResult(rows=(row,), workers=1, backend="inline")


def test_the_cli_offers_exactly_the_formats_that_have_a_renderer_in_the_same_order():
    assert FORMATS == tuple(RENDERERS) == ("text", "json", "md", "html", "csv", "junit")


@pytest.mark.parametrize("fmt", ["xml", "", "TEXT", "markdown"])
def test_an_unknown_format_is_a_usage_error_not_the_text_table(fmt):
    with pytest.raises(UsageError, match="unknown audit format"):
        render_audit(_result(), fmt)


def test_each_format_gets_its_own_options():
    painted = render_audit(_result(), "text", color=True)
    assert "\033[" not in render_audit(_result(), "text") and "calm" in painted
    for fmt in ("md", "html"):
        assert "reports/calm-1.html" in render_audit(_result(), fmt, reports_base="reports")
        assert "reports/calm-1.html" not in render_audit(_result(), fmt)
    assert 'failures="0"' in render_audit(_result(), "junit", fail_on="info")
