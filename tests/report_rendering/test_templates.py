"""Every template is a file in reports/templates, loaded through the one Jinja environment, and
every output path problem is an OutputError inside the documented exception tree."""

from __future__ import annotations

import ast
from pathlib import Path

import jinja2
import pytest
from click.testing import CliRunner

from runlens.audit import AuditResult, AuditRow
from runlens.render.audit import render_audit
from runlens.render.templates import environment, get_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "reports" / "templates"
RENDER = ROOT / "runlens" / "render"


JINJA_MAKERS = {"Environment", "from_string", "Template"}


def _calls(path: Path) -> list[str]:
    """Where ``path`` makes a Jinja environment or a template from a string
    (``jinja2.Environment(...)``, ``env.from_string(...)``), as ``name:line``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in JINJA_MAKERS:
                found.append((node.lineno, name))
    return [f"{name}:{line}" for line, name in sorted(found)]


def test_one_environment_and_no_template_held_in_python():
    made = {str(p.relative_to(ROOT)): calls for p in sorted(RENDER.rglob("*.py")) if (calls := _calls(p))}
    assert list(made) == ["runlens/render/templates.py"]
    assert [c.split(":")[0] for c in made["runlens/render/templates.py"]] == ["Environment"]


def test_the_environment_check_sees_a_second_environment(tmp_path):
    stray = tmp_path / "x.py"
    stray.write_text("import jinja2\nENV = jinja2.Environment()\nT = ENV.from_string('{{ x }}')\n")
    assert _calls(stray) == ["Environment:2", "from_string:3"]


@pytest.mark.parametrize("name", sorted(p.name for p in TEMPLATES.glob("*.j2")))
def test_every_template_file_compiles_in_the_one_environment(name):
    assert get_template(name).name == name


def test_autoescape_is_chosen_by_extension():
    env = environment()
    assert env.autoescape("report.html.j2") is True
    assert env.autoescape("audit.html.j2") is True
    assert env.autoescape("report.md.j2") is False
    assert env.autoescape("something.else.j2") is True  # an unknown kind is escaped, never trusted


def test_markdown_keeps_its_block_whitespace_and_shares_the_rest():
    md, html = get_template("report.md.j2").environment, get_template("report.html.j2").environment
    assert (md.trim_blocks, md.lstrip_blocks) == (True, True)
    assert (html.trim_blocks, html.lstrip_blocks) == (False, False)
    for env in (md, html):
        assert env.undefined is jinja2.StrictUndefined
        assert env.filters["md"] is environment().filters["md"]


def test_a_missing_name_is_an_error_not_an_empty_cell():
    with pytest.raises(jinja2.UndefinedError):
        get_template("compare.html.j2").render()


def _row(name: str, run: str = "/r/x") -> AuditRow:
    return AuditRow(run=run, name=name, status="finished", curve="healthy", findings=())


def test_the_audit_page_escapes_and_strips_controls_through_the_file_template():
    result = AuditResult(rows=(_row("<script>x</script>\u202e\x1b[2J"),), workers=1, backend="inline")
    page = render_audit(result, "html")
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "<script>" not in page
    assert "\u202e" not in page and "\x1b" not in page
    assert page.startswith("<!doctype html>") and page.endswith("</body></html>")  # as before the move


def test_every_audit_format_is_dispatched_by_the_renderer():
    result = AuditResult(rows=(_row("calm"),), workers=1, backend="inline")
    outputs = {fmt: render_audit(result, fmt) for fmt in ("text", "json", "md", "html", "csv", "junit")}
    assert outputs["json"].lstrip().startswith("[") and outputs["junit"].startswith("<?xml")
    assert all("calm" in text for text in outputs.values()), outputs


def test_output_error_is_a_documented_runlens_error(tmp_path):
    from runlens import errors
    from runlens.io.output import OutputError, write_text

    assert OutputError is errors.OutputError and issubclass(OutputError, errors.UsageError)
    assert "OutputError" in errors.__doc__
    with pytest.raises(OutputError, match="does not exist"):
        write_text(tmp_path / "missing" / "x.md", "text")
    assert not (tmp_path / "missing").exists()


def test_an_unusable_output_is_one_line_and_exit_2(tmp_path):
    from runlens.cli import main

    target = tmp_path / "missing" / "audit.txt"
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "-o", str(target), "-q"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [f"runlens: cannot write {target}: the folder {target.parent} does not exist"]
