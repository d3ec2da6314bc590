"""Reports point at the failure: the onset chart of an early failure, the verdict's step on the
loss chart, whole-number depth ticks, readable evidence with thresholds apart, unknown durations,
and a renderer that computes nothing (it reads the diagnosis's report data)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pyarrow as pa
from report_fixtures import make_run, report_of

from runlens.diagnosis import CurveVerdict, Finding
from runlens.render.report.html import render_html
from runlens.render.report.markdown import render_markdown
from runlens.report_data import ReportData


def _chart(page: str, key: str) -> str:
    start = page.index(f'id="chart-{key}"')
    return page[start:page.index("</figure>", start)]


def _texts(svg: str) -> list[str]:
    return [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def _early_nan(steps: int = 300, at: int = 3) -> ReportData:
    run = make_run(steps=steps, nan_at=at, name="early")
    f = Finding("nonfinite_loss", "error", f"loss became NaN at step {at}", step=at,
                evidence={"first_step": at, "explosion_ratio": 100.0, "grad_norm_growth_decades": 2.5})
    curve = CurveVerdict("diverged", f"the loss grows after step {at - 1}", {"step": at - 1})
    return report_of(run, curve=curve, findings=(f,), verdict_step=at - 1)


def test_an_early_failure_gets_an_onset_chart_of_the_steps_around_it():
    diagnosis = _early_nan()
    onset = diagnosis.onset
    assert onset is not None and onset.first == 0 and onset.at == 2  # the verdict step, where it starts
    assert onset.last - onset.first < 100  # a zoom, not the whole run
    assert np.array_equal(onset.loss.steps, np.arange(onset.first, onset.last + 1))  # every step, no buckets
    page = render_html(diagnosis)
    assert page.index('id="chart-loss"') < page.index('id="chart-onset"') < page.index('id="chart-lr"')
    assert "Onset: steps 0 to" in _chart(page, "onset")


def test_a_late_failure_has_no_onset_chart():
    diagnosis = _early_nan(at=280)
    assert diagnosis.onset is None
    assert 'id="chart-onset"' not in render_html(diagnosis)


def test_the_verdicts_step_is_marked_on_the_loss_chart():
    diagnosis = _early_nan(at=150)
    assert diagnosis.marks.verdict_step == 149
    loss = _chart(render_html(diagnosis), "loss")
    assert any("diverged (step 149)" in t for t in _texts(loss))


def test_heatmap_depth_ticks_are_whole_numbers():
    run = make_run(n_layers=2, name="two")
    page = render_html(report_of(run, curve=CurveVerdict("healthy", "ok"), findings=()))
    heat = _chart(page, "grad_heatmap")
    labels = [t for t in _texts(heat) if re.fullmatch(r"-?[\d.]+", t)]
    assert "0" in labels and "1" in labels
    assert not [t for t in labels if "." in t], labels  # no -0.50 ... 1.50


def test_evidence_is_labelled_with_units_and_thresholds_apart():
    from runlens.detectors import REGISTRY

    code = "learning_rate_too_high"
    param = next(iter(REGISTRY[code]().params()))
    f = Finding(code, "warning", "updates too large", step=10,
                evidence={"median_update_ratio": 0.0144, "step_range": [0, 599], param: 0.01})
    diagnosis = report_of(make_run(), curve=CurveVerdict("unstable", "x"), findings=(f,))
    items = diagnosis.evidence[0]
    assert [i.threshold for i in items] == [False, False, True]
    assert items[0].label == "Median update ratio" and items[1].unit == "steps"
    page = render_html(diagnosis)
    observed = page.index("Evidence: what was observed")
    judged = page.index("Judged against")
    assert observed < page.index("Median update ratio") < judged < page.index(items[2].label)
    assert "median_update_ratio" not in page
    text = render_markdown(diagnosis)
    assert "| observed | value |" in text and "| judged against | value |" in text


def test_duration_of_a_run_without_times_is_unknown_not_zero():
    run = make_run(name="imported")
    n = run.scalars.num_rows
    scalars = run.scalars.set_column(run.scalars.schema.get_field_index("time"), "time",
                                     pa.array(np.full(n, np.nan)))
    run = dataclasses.replace(run, scalars=scalars)
    diagnosis = report_of(run, curve=CurveVerdict("healthy", "ok"), findings=())
    assert diagnosis.duration_s is None
    page = render_html(diagnosis)
    assert "<th scope=\"row\">duration</th><td>unknown</td>" in page
    assert "0 s" not in page


def test_every_code_in_the_report_has_its_reference_embedded():
    diagnosis = _early_nan()
    page = render_html(diagnosis)
    for code in ("nonfinite_loss", "diverged"):
        assert f'id="ref-{code}"' in page
    hrefs = [h for h in re.findall(r'href="([^"]+)"', page) if not h.startswith("data:")]  # heatmap pixels
    assert hrefs and all(h.startswith("#") for h in hrefs), hrefs  # every link resolves offline
    ids = set(re.findall(r'id="([^"]+)"', page))
    assert {h[1:] for h in hrefs} <= ids


def test_renderers_import_no_engine_module():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "runlens" / "render"
    offenders = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                parts = name.split(".")
                if any(p in ("detectors", "stats", "curve", "signals", "report_data") for p in parts):
                    offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_report_data_is_an_explicit_step_over_a_plain_diagnosis():
    from pathlib import Path

    import runlens
    from runlens.report_data import build_report_data
    from runlens.signals import signals_of

    run = runlens.load_run(Path(__file__).resolve().parents[2] / "sample_runs" / "healthy")
    d = runlens.analyze(run)
    assert not hasattr(d, "report_data") and not hasattr(d, "run")  # the diagnosis leads nowhere back
    data = build_report_data(d, signals_of(run))
    assert data.diagnosis is d and data.key_numbers
    assert data.duration_s == d.key_numbers["duration_s"]  # one duration, the diagnosis's


def test_the_api_reports_a_plain_diagnosis_with_its_run_or_by_reading_it_again(tmp_path):
    from pathlib import Path

    import runlens

    run = runlens.load_run(Path(__file__).resolve().parents[2] / "sample_runs" / "plateau")
    d = runlens.analyze(run)
    given = runlens.report(d, tmp_path / "a", formats=("md",), run=run)
    again = runlens.report(d, tmp_path / "b", formats=("md",))  # read again from d.path
    assert [p.name for p in given] == [p.name for p in again]
    assert given[0].read_text(encoding="utf-8") == again[0].read_text(encoding="utf-8")
    assert "| final loss |" in given[0].read_text(encoding="utf-8")
