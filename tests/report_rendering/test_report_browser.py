"""Open generated reports in headless Chromium (Debian's /usr/bin/chromium)
over the DevTools protocol: the charts render, nothing is logged as an
error, and no request leaves the file; at a phone's 390 px and a laptop's
1366 px the verdict, every chart's failure markers and the index's cards are
inside the viewport. Screenshots go to test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_browser import CHROMIUM, Browser

from runlens.io.output import write_index, write_reports

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SAMPLE_NAMES = ("nan_divergence", "vanishing_gradients", "crash_shape", "killed", "exploding_gradients",
                "overfitting")
SCREENS = {"phone": (390, 844), "laptop": (1366, 768)}

# What the page looks like once loaded: charts drawn with a real size (the
# alternative loss scale is hidden until toggled, and of each chart's wide and
# narrow drawing the screen shows one), the verdict present, and
# the page's own theme applied.
PROBE = """(() => {
  // The wide or the narrow drawing of each chart, whichever this screen shows.
  const charts = [...document.querySelectorAll('svg.chart')].filter(
    s => !s.closest('.chart-alt') && getComputedStyle(s.parentElement).display !== 'none');
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
    from report_fixtures import analyzed, make_report, make_run

    hostile = make_report(make_run(hostile=True, crash=True, spikes=(100, 300), nan_at=550,
                                      name="hostile <img src=x onerror=alert(1)>"), hostile=True)
    entries = [(hostile, write_reports(hostile, out, ("html",), stem="hostile")[0])]
    for name in SAMPLE_NAMES:
        run = ROOT / "sample_runs" / name
        if run.is_dir():
            data = analyzed(run)
            entries.append((data, write_reports(data, out, ("html",), stem=name)[0]))
    write_index([(d.diagnosis, p.name) for d, p in entries], out)
    return out, entries


def _check(report, page: Path) -> None:
    assert not report.console_errors, report.console_errors
    foreign = [u for u in report.requests if u != page.resolve().as_uri() and not u.startswith("data:")]
    assert not foreign, f"network requests besides the file itself: {foreign}"


def test_reports_render_without_errors_or_requests(browser, pages):
    out, entries = pages
    ARTIFACTS.mkdir(exist_ok=True)
    for data, page in entries:
        report = browser.open(page, evaluate=PROBE, screenshot=True)
        _check(report, page)
        probe = report.evaluated
        assert probe["charts"] >= 5 and probe["drawn"] == probe["charts"], probe
        assert probe["paths"] > 20 and probe["imgs"] == 0
        assert data.diagnosis.curve.label in probe["verdict"] and data.diagnosis.status in probe["verdict"]
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
    # Charts fit the phone's width (nothing to scroll sideways to) with text still readable.
    texts = probe["chartText"]
    assert texts and texts[len(texts) // 10] >= 9, texts[:20]
    assert probe["clipped"] == 0 and probe["scrollable"] == 0, probe
    (ARTIFACTS / "report-phone.png").write_bytes(phone.screenshot)


# Where things are on the first screen: the verdict's name and headline, every drawn chart and
# each failure marker in it (the vertical lines charts.py tags with "<chart>-<size>-mark-<kind>").
VIEWPORT = """(() => {
  const W = window.innerWidth, H = window.innerHeight;
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top,
                                                                  bottom: r.bottom, width: r.width}; };
  const drawn = [...document.querySelectorAll('svg.chart')].filter(s => s.getBoundingClientRect().width > 0);
  const charts = drawn.map(s => ({figure: s.closest('figure').id, box: box(s),
    marks: [...s.querySelectorAll('g[id*="-mark-"]')].map(g => ({kind: g.id.split('-mark-')[1], box: box(g)}))}));
  const v = document.getElementById('verdict');
  return {W, H, overflow: document.documentElement.scrollWidth - W, charts,
          h1: box(v.querySelector('h1')), headline: box(document.getElementById('headline') || v), verdict: box(v)};
})()"""

INDEX = """(() => {
  const W = window.innerWidth, H = window.innerHeight;
  const cards = [...document.querySelectorAll('.run-card')].map(c => {
    const r = c.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, height: r.height, sev: c.className,
            name: c.querySelector('.run-name').getBoundingClientRect().width,
            worst: c.querySelector('.run-worst').getBoundingClientRect().width};
  });
  const box = document.getElementById('filter');
  box.value = 'killed'; box.dispatchEvent(new Event('input'));
  const shown = [...document.querySelectorAll('.run-card')].filter(c => !c.hidden).length;
  return {W, H, overflow: document.documentElement.scrollWidth - W, cards, shown, filterHidden: box.hidden,
          header: getComputedStyle(document.getElementById('verdict')).borderLeftColor,
          error: getComputedStyle(document.documentElement).getPropertyValue('--error').trim()};
})()"""


def _inside(box: dict, width: float, *, line: bool = False) -> bool:
    """Within the screen's width; a box of its own width unless it is a vertical line."""
    return box["left"] >= -0.5 and box["right"] <= width + 0.5 and (line or box["width"] > 0)


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_verdict_and_every_charts_failure_markers_are_in_the_viewport(browser, pages, screen):
    from runlens.render.chart_parts import failure_marks

    width, height = SCREENS[screen]
    _, entries = pages
    ARTIFACTS.mkdir(exist_ok=True)
    for data, page in entries:
        report = browser.open(page, evaluate=VIEWPORT, viewport=(width, height), mobile=screen == "phone",
                              screenshot=True)
        _check(report, page)
        probe = report.evaluated
        assert probe["overflow"] <= 0, (page.name, probe["overflow"])
        # The run's name and its one-sentence verdict are on the first screen.
        assert _inside(probe["h1"], width) and probe["h1"]["top"] >= 0
        assert _inside(probe["headline"], width) and probe["headline"]["bottom"] <= height, (page.name, probe)
        expected = {m[4] for m in failure_marks(data.marks)}
        assert probe["charts"], page.name
        for chart in probe["charts"]:
            assert _inside(chart["box"], width), (page.name, chart["figure"], chart["box"])
            kinds = {m["kind"] for m in chart["marks"]}
            if chart["figure"] != "chart-onset":  # a zoom shows only the marks inside its window
                assert kinds == expected, (page.name, chart["figure"], kinds, expected)
            for mark in chart["marks"]:
                # The marker line lies within the chart and the screen: no side scroller hides it.
                assert _inside(mark["box"], width, line=True), (page.name, chart["figure"], mark)
                assert chart["box"]["left"] - 1 <= mark["box"]["left"] <= chart["box"]["right"] + 1
        (ARTIFACTS / f"viewport-{screen}-{page.stem}.png").write_bytes(report.screenshot)


@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_index_cards_fit_the_screen_worst_first_and_filter(browser, pages, screen):
    width, height = SCREENS[screen]
    out, entries = pages
    index = out / "index.html"
    report = browser.open(index, evaluate=INDEX, viewport=(width, height), mobile=screen == "phone",
                          screenshot=True)
    _check(report, index)
    probe = report.evaluated
    cards = probe["cards"]
    assert len(cards) == len(entries) and probe["overflow"] <= 0
    assert cards[0]["top"] < height and "sev-error" in cards[0]["sev"]  # the worst run is on the first screen
    for card in cards:
        assert card["left"] >= 0 and card["right"] <= width
        # A card, not a collapsed table row: the worst finding gets most of the width, not 32 px.
        assert card["worst"] >= (0.8 * (card["right"] - card["left"]) if screen == "phone" else 300), card
        assert card["height"] <= (260 if screen == "phone" else 140), card
    assert probe["shown"] == 1 and probe["filterHidden"] is False
    assert probe["header"] != "rgba(0, 0, 0, 0)"
    (ARTIFACTS / f"index-{screen}.png").write_bytes(report.screenshot)
