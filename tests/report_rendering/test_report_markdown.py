"""The Markdown report: valid GFM, escaped, capped at 60,000 characters."""

from __future__ import annotations

import re

import numpy as np
import pytest
from report_fixtures import HOSTILE, MD, make_report, make_run, report_of, table_rows

from runlens.diagnosis import CurveVerdict, Diagnosis, Finding
from runlens.render.report.markdown import MAX_CHARS, render_markdown, sparkline


def _balanced(text: str) -> None:
    """Every <details> closed and no code fence left open (text after the
    report still renders as a paragraph)."""
    html = MD.render(text + "\n\nSENTINEL\n")
    assert html.count("<details") == html.count("</details>")
    assert html.rstrip().endswith("<p>SENTINEL</p>")


def test_marker_verdict_and_findings_table(demo_report):
    text = render_markdown(demo_report)
    assert text.startswith("<!-- runlens:report run=run-demo-run -->\n")
    assert "**Verdict:**" in text and "`unstable`" in text and "`crashed`" in text
    rows = table_rows(text)
    header = rows[0]
    assert header == ["severity", "code", "title", "step", "layers"]
    findings = [r for r in rows if len(r) == 5 and r[0].split()[-1] in ("error", "warning", "info")]
    assert len(findings) == len(demo_report.diagnosis.findings)
    assert [r[1].strip("`") for r in findings[:2]] == ["crash_shape_mismatch", "nonfinite_loss"]
    assert "<details><summary>Traceback</summary>" in text
    assert "▁" in text or "▂" in text  # sparkline glyphs
    _balanced(text)


def test_hostile_names_do_not_break_tables_or_run_script(hostile_report):
    text = render_markdown(hostile_report)
    html = MD.render(text)
    assert "<img" not in html.replace("&lt;img", "") and "<script>" not in html
    assert text.count(HOSTILE) == text.count(f"`{HOSTILE}`")  # raw only inside code spans
    rows = table_rows(text)
    widths = {}
    for row in rows:
        widths.setdefault(len(row), 0)
        widths[len(row)] += 1
    assert set(widths) <= {2, 4, 5}, widths  # kv tables, attempts/layers, findings/trends
    layer_rows = [r for r in rows if len(r) == 4 and r[2] == "Linear"]
    assert len(layer_rows) == 6
    marker = text.splitlines()[0]
    assert re.fullmatch(r"<!-- runlens:report run=[A-Za-z0-9._:-]+ -->", marker)
    _balanced(text)


def _huge_diagnosis(n_layers: int = 5000) -> Diagnosis:
    run = make_run(steps=200, n_layers=n_layers, layers_every=50, crash=True, name="huge")
    names = run.layer_names()
    findings = [Finding("dead_layers", "warning", f"{n_layers} dead layers", step=3, layers=names,
                        evidence={"layers": list(names), "fraction": 1.0}, advice="x" * 5000)]
    findings += [Finding("loss_spikes", sev, f"finding {i} " + "y" * 300, step=i, layers=names[i:i + 50],
                         evidence={f"k{j}": "v" * 200 for j in range(30)})
                 for i, sev in enumerate(["error", "warning", "info"] * 40)]
    return report_of(run, curve=CurveVerdict("diverged", "it blew up"), findings=tuple(findings),
                            warnings=tuple(f"warning {i} " + "z" * 200 for i in range(300)))


def test_5000_layer_run_stays_under_the_cap():
    diagnosis = _huge_diagnosis()
    text = render_markdown(diagnosis)
    assert len(text) <= MAX_CHARS
    assert text.startswith("<!-- runlens:report run=run-huge -->")
    assert "**Verdict:**" in text and "`diverged`" in text
    assert "Left out to stay within 60,000 characters" in text
    assert "layer list" in text  # says what went
    assert table_rows(text)[0] == ["severity", "code", "title", "step", "layers"]
    _balanced(text)


@pytest.mark.parametrize("cap", [2_000, 5_000, 9_999, 20_000])
def test_any_cap_is_held_on_line_boundaries(cap):
    diagnosis = _huge_diagnosis(300)
    full = render_markdown(diagnosis, max_chars=10**7)
    text = render_markdown(diagnosis, max_chars=cap)
    assert len(text) <= cap
    assert "**Verdict:**" in text
    kept = [line for line in text.splitlines() if line and not line.startswith(("> ", "</details>", "```"))]
    assert all(line in full for line in kept)  # nothing cut mid-line
    _balanced(text)


def test_long_traceback_keeps_its_end():
    run = make_run(crash=True, name="tb")
    tb = "Traceback (most recent call last):\n" + "\n".join(f'  File "x.py", line {i}, in f' for i in range(5000))
    run.meta["error"]["traceback"] = tb + "\nRuntimeError: the real cause"
    diagnosis = report_of(run, curve=CurveVerdict("healthy", "ok"),
                                 findings=(Finding("crash_other", "error", "boom"),))
    text = render_markdown(diagnosis, max_chars=20_000)
    assert len(text) <= 20_000
    assert "RuntimeError: the real cause" in text and "lines above not shown" in text
    _balanced(text)


@pytest.mark.parametrize("budget", [50, 120, 400, 1000])
def test_cut_closes_open_fence_and_details(budget):
    from runlens.render.report.markdown import _cut

    text = "intro\n\n<details><summary>x</summary>\n\n````\n" + "\n".join(f"line {i}" for i in range(200)) \
        + "\n````\n\n</details>\n"
    cut = _cut(text, budget)
    assert len(cut) <= budget and cut.startswith("intro")
    _balanced(cut)


def test_deterministic(demo_report):
    assert render_markdown(demo_report) == render_markdown(
        make_report(make_run(spikes=(100, 300), nan_at=550, crash=True)))


def test_sparkline():
    from runlens.report_data.series import spark

    assert sparkline(spark("x", np.arange(1.0, 9.0), width=8)) == "▁▂▃▄▅▆▇█"
    assert sparkline(spark("x", np.array([1.0, float("nan"), 1.0]), width=3)) == "▁×▁"
    assert len(sparkline(spark("x", np.arange(10_000.0), width=40))) == 40
    assert spark("x", np.array([])) is None
