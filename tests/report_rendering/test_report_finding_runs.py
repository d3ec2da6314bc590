"""Finding runs in a list of many: the index worst first with counts, a filter box and a header in
the worst run's colour; runs that share a name told apart by a short path (index and audit alike);
names wrapping only between words; no green status badge on a failed run."""

from __future__ import annotations

import csv
import dataclasses
import io
import re

from report_fixtures import make_run, report_of

from runlens.audit import AuditResult, AuditRow
from runlens.diagnosis import CurveVerdict, Finding
from runlens.render.audit.csv import render_audit_csv
from runlens.render.audit.html import render_audit_html
from runlens.render.audit.markdown import render_audit_markdown
from runlens.render.audit.text import render_audit_text
from runlens.render.escape import wordbreaks
from runlens.render.names import distinct_names
from runlens.render.report.html import render_html, render_index
from runlens.render.report.view import build_view


def _view(name: str, path: str, curve: str = "healthy", severities: tuple[str, ...] = (), status: str = "finished"):
    run = dataclasses.replace(make_run(name=name, steps=60, status=status), path=path)
    findings = tuple(Finding(f"code_{i}_{s}", s, f"{s} thing") for i, s in enumerate(severities))
    return build_view(report_of(run, curve=CurveVerdict(curve, "why"), findings=findings))


def _cards(page: str) -> list[str]:
    return re.findall(r'<li class="run-card sev-(\w+)".*?</li>', page, flags=re.S)


def test_distinct_names_add_the_shortest_telling_path_only_where_names_collide():
    runs = [("healthy", "sample_runs/healthy"), ("healthy", "/tmp/copy/healthy"), ("nan", "runs/nan"),
            ("exp", "a/b/exp"), ("exp", "a/b/exp")]
    assert distinct_names(runs) == ["healthy (sample_runs/healthy)", "healthy (copy/healthy)", "nan",
                                    "exp (a/b/exp #1)", "exp (a/b/exp #2)"]
    assert distinct_names([("x", "C:\\runs\\a\\x"), ("x", "C:\\runs\\b\\x")]) == ["x (a/x)", "x (b/x)"]


def test_index_is_worst_first_with_counts_filter_and_the_worst_colour():
    entries = [(_view("calm", "/r/calm"), "calm.html"),
               (_view("noisy", "/r/noisy", "unstable", ("warning",)), "noisy.html"),
               (_view("broken", "/r/broken", "diverged", ("error", "warning")), "broken.html"),
               (_view("notes", "/r/notes", "healthy", ("info",)), None),
               (_view("worse", "/r/worse", "diverged", ("error", "error")), "worse.html")]
    page = render_index(entries)
    assert _cards(page) == ["error", "error", "warning", "info", "none"]
    order = [page.index(f">{n}<") for n in ("worse", "broken", "noisy", "notes", "calm")]
    assert order == sorted(order)  # two errors before one; info before no findings
    assert '<header class="verdict sev-error"' in page
    for text in ("2 with errors", "1 with warnings", "1 with info only", "1 without findings"):
        assert text in page
    assert 'id="filter"' in page and "dataset.search" in page
    assert 'data-search="worse /r/worse diverged' in page
    calm_only = render_index([(_view("calm", "/r/calm"), "calm.html")])
    assert '<header class="verdict sev-none"' in calm_only


def test_two_runs_named_alike_are_told_apart_in_the_index_and_every_audit_format():
    entries = [(_view("healthy", "sample_runs/healthy"), "a.html"), (_view("healthy", "/tmp/copy/healthy"), "b.html")]
    page = render_index(entries)
    assert "healthy (sample_<wbr>runs/<wbr>healthy)" in page and "healthy (copy/<wbr>healthy)" in page
    rows = tuple(AuditRow(run=path, name="healthy", status="finished", curve="healthy", findings=())
                 for path in ("sample_runs/healthy", "/tmp/copy/healthy"))
    result = AuditResult(rows=rows, workers=1, backend="inline")
    html = render_audit_html(result)
    md = render_audit_markdown(result)
    text = render_audit_text(result)
    table = list(csv.DictReader(io.StringIO(render_audit_csv(result))))
    for label in ("healthy (sample_runs/healthy)", "healthy (copy/healthy)"):
        assert label in html and label in text
        assert label.replace("_", "\\_") in md or label in md
        assert label in [r["label"] for r in table]
    assert [r["name"] for r in table] == ["healthy", "healthy"]  # the name column keeps the run's name


def test_names_wrap_between_words_only():
    assert str(wordbreaks("late_loss_variance")) == "late_<wbr>loss_<wbr>variance"
    assert str(wordbreaks("<b>x</b>")) == "&lt;b&gt;x&lt;/<wbr>b&gt;"
    page = render_index([(_view("late_loss_variance", "/r/l"), "l.html")])
    assert ">late_<wbr>loss_<wbr>variance</span>" in page
    assert "overflow-wrap:anywhere}" not in page.split(".name{")[1].split("}")[0]


def test_a_failed_run_never_wears_a_green_status_badge():
    assert _view("d", "/r/d", "diverged", ("error",)).status_tone == "neutral"
    assert _view("w", "/r/w", "healthy", ("warning",)).status_tone == "neutral"
    assert _view("c", "/r/c", "healthy", (), status="crashed").status_tone == "bad"
    assert _view("k", "/r/k", "healthy", (), status="killed").status_tone == "bad"
    assert _view("h", "/r/h", "healthy", ("info",)).status_tone == "ok"
    run = make_run(name="diverged-run", steps=60)
    page = render_html(report_of(run, curve=CurveVerdict("diverged", "grew"),
                                        findings=(Finding("diverged", "error", "grew"),)))
    badge = re.search(r'<span class="badge status ([\w-]+)"[^>]*>status: finished</span>', page)
    assert badge and badge.group(1) == "tone-neutral"
    style = page[page.index("<style>"):page.index("</style>")]
    assert ".tone-neutral{color:var(--muted)}" in style and "status-finished" not in style
