"""Open generated reports in headless Chromium (Debian's /usr/bin/chromium)
over the DevTools protocol: the charts render, nothing is logged as an
error, and no request leaves the file. Screenshots go to test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_browser import CHROMIUM, Browser

from runlens.analysis import analyze
from runlens.io.loader import load_run
from runlens.render.write import write_index, write_reports

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SAMPLE_NAMES = ("nan_divergence", "vanishing_gradients", "crash_shape")

# What the page looks like once loaded: charts drawn with a real size (the
# alternative loss scale is hidden until toggled), the verdict present, and
# the page's own theme applied.
PROBE = """(() => {
  const charts = [...document.querySelectorAll('svg.chart')].filter(s => !s.closest('.chart-alt'));
  const drawn = charts.filter(s => { const r = s.getBoundingClientRect(); return r.width > 100 && r.height > 50; });
  return {charts: charts.length, drawn: drawn.length, paths: document.querySelectorAll('svg.chart path').length,
          verdict: (document.getElementById('verdict') || document.body).innerText,
          bg: getComputedStyle(document.body).backgroundColor, imgs: document.images.length,
          verdictBottom: (document.getElementById('verdict') || document.body).getBoundingClientRect().bottom,
          overflow: document.documentElement.scrollWidth - window.innerWidth, height: window.innerHeight,
          // Rendered size of the chart text (tick labels, legends), and whether a chart wider than
          // its box can be scrolled to its end rather than being cut off.
          chartText: charts.flatMap(s => [...s.querySelectorAll('text')].map(t => t.getBoundingClientRect().height))
                           .filter(h => h > 0).sort((a, b) => a - b),
          clipped: charts.filter(s => { const f = s.closest('figure');
                                        return f && f.scrollWidth < s.getBoundingClientRect().width - 1; }).length,
          scrollable: charts.filter(s => { const f = s.closest('figure');
                                           return f && f.scrollWidth > f.clientWidth; }).length};
})()"""


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (.ci/run does)")
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    from report_fixtures import make_diagnosis, make_run

    hostile = make_diagnosis(make_run(hostile=True, crash=True, spikes=(100, 300), nan_at=550,
                                      name="hostile <img src=x onerror=alert(1)>"), hostile=True)
    entries = [(hostile, write_reports(hostile, out, ("html",), stem="hostile")[0])]
    for name in SAMPLE_NAMES:
        run = ROOT / "sample_runs" / name
        if run.is_dir():
            diagnosis = analyze(load_run(run))
            entries.append((diagnosis, write_reports(diagnosis, out, ("html",), stem=name)[0]))
    write_index([(d, p.name) for d, p in entries], out)
    return out, entries


def _check(report, page: Path) -> None:
    assert not report.console_errors, report.console_errors
    foreign = [u for u in report.requests if u != page.resolve().as_uri() and not u.startswith("data:")]
    assert not foreign, f"network requests besides the file itself: {foreign}"


def test_reports_render_without_errors_or_requests(browser, pages):
    out, entries = pages
    ARTIFACTS.mkdir(exist_ok=True)
    for diagnosis, page in entries:
        report = browser.open(page, evaluate=PROBE, screenshot=True)
        _check(report, page)
        probe = report.evaluated
        assert probe["charts"] >= 5 and probe["drawn"] == probe["charts"], probe
        assert probe["paths"] > 20 and probe["imgs"] == 0
        assert diagnosis.curve.label in probe["verdict"] and diagnosis.run.status in probe["verdict"]
        assert probe["verdictBottom"] <= probe["height"]  # the verdict fits the first screen
        assert probe["overflow"] <= 0
        (ARTIFACTS / f"report-{page.stem}.png").write_bytes(report.screenshot)
    index = out / "index.html"
    report = browser.open(index)
    _check(report, index)


def test_readable_without_javascript_in_dark_mode_and_on_a_phone(browser, pages):
    _, entries = pages
    page = entries[0][1]
    light = browser.open(page, evaluate=PROBE, javascript=False)
    _check(light, page)
    assert "curve: unstable" in light.evaluated["verdict"]
    dark = browser.open(page, evaluate=PROBE, dark=True, screenshot=True)
    _check(dark, page)
    assert dark.evaluated["bg"] != light.evaluated["bg"]
    (ARTIFACTS / "report-dark.png").write_bytes(dark.screenshot)
    phone = browser.open(page, evaluate=PROBE, viewport=(390, 844), screenshot=True)
    _check(phone, page)
    probe = phone.evaluated
    assert probe["overflow"] <= 0  # no sideways scrolling of the page itself
    assert probe["drawn"] == probe["charts"]
    # Charts keep their full-size text on a phone and scroll sideways inside their figure.
    texts = probe["chartText"]
    assert texts and texts[len(texts) // 10] >= 9.5, texts[:20]
    assert probe["clipped"] == 0 and probe["scrollable"] == probe["charts"], probe
    (ARTIFACTS / "report-phone.png").write_bytes(phone.screenshot)
