"""`runlens report` over every shipped sample run, both formats, and the CLI's
contract (one file per run, an index for several, exit 2 on bad input)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from report_fixtures import MD
from test_report_html import assert_self_contained

from runlens.analysis import analyze
from runlens.cli import main
from runlens.io.loader import load_run
from runlens.io.output import write_reports
from runlens.render.report.markdown import MAX_CHARS
from runlens.report_data import build_report_data
from runlens.signals import signals_of

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p for p in (ROOT / "sample_runs").iterdir() if p.is_dir() and (p / "run.json").is_file())


def test_samples_exist():
    assert len(SAMPLES) >= 10, "sample_runs/ is missing: run python sample_runs/generate.py"


@pytest.mark.slow
@pytest.mark.parametrize("run", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_sample_renders_in_both_formats(run, tmp_path):
    run_data = load_run(run)
    diagnosis = analyze(run_data)
    html_path, md_path = write_reports(build_report_data(diagnosis, signals_of(run_data)), tmp_path, ("html", "md"))
    page = html_path.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert diagnosis.curve.label in page
    # a run that died before its first step has nothing to chart, and says so instead
    assert ("<svg" in page) == run_data.has("scalars")
    text = md_path.read_text(encoding="utf-8")
    assert len(text) <= MAX_CHARS
    assert text.startswith(f"<!-- runlens:report run={diagnosis.run_id} -->")
    html = MD.render(text)
    assert html.count("<table>") >= 1 and html.count("<details") == html.count("</details>")
    for finding in diagnosis.findings:
        assert f"`{finding.code}`" in text


def test_cli_writes_reports_and_an_index(tmp_path):
    runs = [str(SAMPLES[0]), str(SAMPLES[1])]
    result = CliRunner().invoke(main, ["report", *runs, "-o", str(tmp_path), "--format", "both", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    from runlens.io.output import report_stem

    stems = [report_stem(Path(r).name, r) for r in runs]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted([f"{stems[0]}.html", f"{stems[0]}.md", f"{stems[1]}.html", f"{stems[1]}.md",
                            "index.html"])
    index = (tmp_path / "index.html").read_text()
    assert f'href="{stems[0]}.html"' in index


def test_cli_markdown_only_and_duplicate_names(tmp_path):
    import shutil

    # Two runs with one name (copies in two folders) get two files; one run given twice gets one.
    a, b = tmp_path / "a" / "x", tmp_path / "b" / "x"
    shutil.copytree(SAMPLES[0], a)
    shutil.copytree(SAMPLES[0], b)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["report", str(a), str(b), str(a), "-o", str(out), "--format", "md",
                                       "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 2 and all(n.startswith(f"{SAMPLES[0].name}-") and n.endswith(".md") for n in names)


def test_cli_docs_url_makes_reference_links_absolute(tmp_path):
    run = ROOT / "sample_runs" / "lr_too_low"
    base = "https://example.org/runlens/blob/main/"
    result = CliRunner().invoke(main, ["report", str(run), "-o", str(tmp_path), "--format", "md",
                                       "--docs-url", base])
    assert result.exit_code == 0, result.output
    text = next(tmp_path.glob("lr_too_low-*.md")).read_text()
    assert f"]({base}docs/detectors.md#learning_rate_too_low)" in text
    assert "](docs/detectors.md" not in text
    offline = CliRunner().invoke(main, ["report", str(run), "-o", str(tmp_path / "off"), "--format", "md"])
    assert offline.exit_code == 0
    text = next((tmp_path / "off").glob("lr_too_low-*.md")).read_text()
    assert "docs/detectors.md" not in text and "Reference: <code>learning_rate_too_low</code>" in text


@pytest.mark.parametrize("bad", ["missing-dir", "not-a-run"])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, bad):
    target = tmp_path / bad
    if bad == "not-a-run":
        target.mkdir()
        (target / "run.json").write_text("{not json")
    result = CliRunner().invoke(main, ["report", str(target), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("runlens: ")
