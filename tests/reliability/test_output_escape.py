"""The output module and the escapers, in-process and fast; and proof that the
campaign's checks catch what they look for (each can fail)."""

from __future__ import annotations

import csv
import io
import os
import xml.etree.ElementTree as ET

import pytest

from runlens.errors import UsageError
from runlens.io.output import OutputError, check_target, output_dir, run_directory_of, write_text
from runlens.render.escape import csv_cell, md_html, md_inline, no_mentions, term_inline, term_text, xml_text

from . import hostile_text
from ._cli import Figures, write_run

HOSTILE = "\x1b]0;t\x07\x1b[2J\x01\x9b31m\u202eok\ufffe\uffff\udbff"


def test_write_text_is_atomic_and_escapes_surrogates(tmp_path):
    target = write_text(tmp_path / "r.html", "name \udbff end")
    assert target.read_bytes() == b"name \\udbff end"
    assert os.listdir(tmp_path) == ["r.html"]
    assert (target.stat().st_mode & 0o777) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_failed_write_leaves_the_earlier_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "r.html"
    target.write_text("EARLIER")

    def boom(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OutputError, match="No space left on device"):
        write_text(target, "new")
    assert target.read_text() == "EARLIER"
    assert os.listdir(tmp_path) == ["r.html"]


def test_a_symlink_at_the_old_temp_name_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".r.html.tmp").symlink_to(victim)
    write_text(out / "r.html", "report")
    assert victim.read_text() == "mine" and (out / "r.html").read_text() == "report"


def test_a_symlink_at_the_target_is_refused_neither_replaced_nor_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("mine")
    (tmp_path / "r.html").symlink_to(victim)
    with pytest.raises(OutputError, match="is a symlink"):
        write_text(tmp_path / "r.html", "report")
    assert victim.read_text() == "mine" and (tmp_path / "r.html").is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["r.html", "victim"]


def test_run_directories_are_refused(tmp_path):
    run = write_run(tmp_path / "run")
    assert run_directory_of(run) == run and run_directory_of(run / "scalars") == run
    assert run_directory_of(tmp_path) is None
    for bad in (run / "run.json", run / "layers" / "x.md"):
        with pytest.raises(OutputError, match="is a run directory"):
            check_target(bad)
    with pytest.raises(OutputError, match="is a run directory"):
        output_dir(run)
    assert issubclass(OutputError, UsageError)  # the CLI's exit 2


def test_folders_created_or_refused_in_one_line(tmp_path):
    assert output_dir(tmp_path / "a" / "b").is_dir()
    (tmp_path / "f").write_text("x")
    for bad in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(OutputError) as err:
            output_dir(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(OutputError, match="does not exist"):
        check_target(tmp_path / "missing" / "x.md")


def test_terminal_text_has_no_control_characters():
    for text in (term_inline(HOSTILE), term_text(HOSTILE + "\nline")):
        assert not any(ord(c) < 32 and c not in "\n" or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in text)
    assert term_text("a\nb") == "a\nb" and term_inline("a\nb") == "a b"


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-1+2", "@SUM(1)", "\tx", "\nx", "\uff1d1"])
def test_csv_cells_that_would_be_formulas_start_with_a_quote(cell):
    assert csv_cell(cell) == "'" + cell
    assert csv_cell("\rx") == "'\nx"  # a bare CR is a newline the CSV writer quotes
    assert csv_cell(-1.5) == -1.5 and csv_cell("ok") == "ok"


def test_xml_text_parses_for_every_character():
    text = "".join(chr(c) for c in range(0, 0x110000, 7)) + HOSTILE
    buf = io.StringIO()
    ET.ElementTree(ET.Element("t", name=xml_text(text))).write(buf, encoding="unicode")
    ET.fromstring(buf.getvalue().encode("utf-8", "backslashreplace"))


def test_markdown_mentions_and_issue_refs_are_inert():
    for fn in (md_inline, md_html, no_mentions):
        out = fn("ping @octocat and @org/team about #123, GH-5; mail a@b.com")
        assert "@octocat" not in out and "#123" not in out and "GH-5" not in out
        assert "a@b.com" in out


def test_the_campaign_checks_can_fail():
    fig = Figures()
    hostile_text._markdown(fig, "md", "thanks @octocat, see #12")
    hostile_text._terminal(fig, "term", b"name \x1b]0;pwned\x07")
    assert fig.injections == 3
    fig = Figures()
    hostile_text._html(fig, "html", "<img src=x onerror=alert(1)>")
    assert fig.injections == 1


def test_the_csv_and_junit_checks_can_fail(tmp_path):
    path = tmp_path / "a.csv"
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["run", "name"])
    writer.writerow(["r", "=HYPERLINK(1)"])
    path.write_text(out.getvalue())
    fig = Figures()
    hostile_text._csv(fig, path)
    assert fig.injections == 1
    (tmp_path / "a.xml").write_bytes(b"<testsuites><testsuite name='\x1b'/></testsuites>")
    hostile_text._junit(fig, tmp_path / "a.xml")
    assert fig.injections == 2
