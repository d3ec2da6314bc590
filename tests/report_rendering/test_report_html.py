"""The HTML report: self-contained, escaped, deterministic, complete."""

from __future__ import annotations

import re

from report_fixtures import HOSTILE, make_report, make_run

from runlens.render.report.html import render_html, render_index
from runlens.render.report.view import build_view

# Attributes and CSS that would make the browser fetch something.
_FETCHING = re.compile(r"""(?:src|href|srcset|poster|data|action|xlink:href)\s*=\s*["']?\s*(?:https?:|//|ftp:)""", re.I)
_CSS_FETCH = re.compile(r"@import|url\(\s*['\"]?\s*(?:https?:|//)", re.I)


def assert_self_contained(page: str, scripts: int = 0) -> None:
    """No fetch of any kind; a report has no script at all (readable with JS off by construction),
    the index one inline script (its filter box), never one loaded from elsewhere."""
    assert not _FETCHING.search(page), _FETCHING.search(page).group(0)
    assert not _CSS_FETCH.search(page)
    assert page.lower().count("<script") == scripts and page.lower().count("<script>") == scripts
    assert "<link" not in page.lower() and "<iframe" not in page.lower()


def test_report_is_self_contained_and_complete(demo_report):
    page = render_html(demo_report)
    assert_self_contained(page)
    assert page.startswith("<!DOCTYPE html>")
    for key in ("loss", "loss_alt", "lr", "grad_norm", "grad_heatmap", "update_ratio", "weight_norm"):
        assert f'id="chart-{key}"' in page, key
    assert page.count("<svg") == 14  # each chart drawn wide and phone-narrow
    assert 'id="crash"' in page and "RuntimeError" in page and "Traceback (most recent call last)" in page
    assert "prefers-color-scheme:dark" in page and 'name="viewport"' in page
    # The verdict comes before the charts: it is the first screen.
    verdict, charts = page.index('id="verdict"'), page.index('id="charts"')
    assert verdict < charts and "curve: unstable" in page[verdict:charts] and "status: crashed" in page[verdict:charts]
    assert page.index("nonfinite_loss", verdict) < charts
    # Every finding links to its reference, embedded in the page: no link needs docs/ or a network.
    assert "docs/detectors.md" not in page
    for finding in demo_report.diagnosis.findings:
        assert f'href="#ref-{finding.code}"' in page and f'id="ref-{finding.code}"' in page
    assert "<th scope=\"row\">seed</th><td>1234</td>" in page
    assert "part r0-00000003.parquet could not be read" in page


def test_hostile_input_is_escaped(hostile_report):
    page = render_html(hostile_report)
    assert_self_contained(page)
    assert HOSTILE not in page and "<script>alert(2)" not in page
    assert "onerror=alert(1)" in page  # still shown, as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.count("<img") == 0


def test_byte_identical_twice(demo_report):
    first = render_html(demo_report)
    again = render_html(make_report(make_run(spikes=(100, 300), nan_at=550, crash=True)))
    assert first == again


def test_byte_identical_across_processes():
    """matplotlib's SVG ids, embedded PNGs and set/dict orders must not depend
    on process state: two fresh interpreters with different hash seeds agree."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    code = ("import sys; sys.path.insert(0, sys.argv[1]);"
            "from report_fixtures import make_report, make_run;"
            "from runlens.render.report.html import render_html;"
            "sys.stdout.buffer.write(render_html(make_report(make_run(spikes=(100, 300), nan_at=550, crash=True))).encode())")
    outs = [subprocess.run([sys.executable, "-c", code, str(here)], capture_output=True, check=True, timeout=300,
                           env=dict(os.environ, PYTHONHASHSEED=seed)).stdout for seed in ("1", "2")]
    assert outs[0] == outs[1] and outs[0].startswith(b"<!DOCTYPE html>")


def test_embedded_reference_comes_from_the_catalog():
    from markupsafe import escape
    from report_fixtures import report_of

    from runlens.detectors.catalog import documented
    from runlens.diagnosis import CurveVerdict, Finding

    docs = documented()
    for code in [*sorted(REGISTRY_CODES())[:3], "baseline_new_nonfinite", "unreadable_run"]:
        diagnosis = report_of(make_run(), curve=CurveVerdict("healthy", "fine"),
                                     findings=(Finding(code, "warning", "something"),))
        page = render_html(diagnosis)
        assert f'id="ref-{code}"' in page and f'href="#ref-{code}"' in page
        for heading, body in docs[code].sections.items():
            if heading:
                assert f"<h4>{heading}</h4>" in page
                assert str(escape(body.replace("``", "`"))) in page
    with_url = render_html(diagnosis, docs_base="https://example.org/x/")
    assert 'href="https://example.org/x/docs/detectors.md#unreadable_run"' in with_url


def REGISTRY_CODES():
    from runlens.detectors import REGISTRY

    return [c for c in REGISTRY if c != "curve"]


def test_run_without_tables_still_renders():
    from runlens.diagnosis import CurveVerdict, Finding
    from runlens.testing import build_run

    run = build_run(name="/runs/empty", status="crashed", meta={"name": "empty", "run_id": "x", "error": {
        "type": "torch.OutOfMemoryError", "message": "CUDA out of memory", "traceback": "tb", "step": None}})
    from report_fixtures import report_of

    diagnosis = report_of(run, curve=CurveVerdict("insufficient_data", "no steps"),
                                 findings=(Finding("crash_oom", "error", "out of memory"),))
    page = render_html(diagnosis)
    assert_self_contained(page)
    assert "<svg" not in page and "no recorded steps" in page
    assert "before training started" in page


def test_index_links_every_run(demo_report, hostile_report):
    page = render_index([(build_view(demo_report), "demo-run.html"), (build_view(hostile_report), None)])
    assert_self_contained(page, scripts=1)
    assert 'href="demo-run.html"' in page and HOSTILE not in page


def test_values_near_the_float_limit_render_marked_as_overflow():
    # Hypothesis found it: a loss of 1.8e308 beside -1e292 gives an axis whose span overflows, and
    # matplotlib cannot invert its transform; such a value is marked as a NaN/Inf is, not drawn.
    import numpy as np

    import runlens
    from runlens.render.report.markdown import render_markdown
    from runlens.report_data import build_report_data
    from runlens.signals import signals_of
    from runlens.testing import build_run

    run = build_run(loss=np.array([0.0, 1.7976931348623157e308, -9.9792015476736e291]), steps=np.array([0, 1, 2]))
    data = build_report_data(runlens.analyze(run), signals_of(run))
    page = render_html(data)
    assert_self_contained(page)
    assert "<svg" in page and "NaN/Inf" in page
    assert "×" in render_markdown(data)
