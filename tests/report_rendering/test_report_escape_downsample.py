"""Markdown escaping and chart downsampling: the two places where a run's
contents could break a report or disappear from it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from report_fixtures import HOSTILE_NAMES, MD, table_rows

from runlens.render.escape import md_cell, md_code_block, md_code_span, md_inline
from runlens.report_data.series import downsample, minmax_indices, reduce_rows


def test_hostile_cells_keep_table_shape():
    table = "| a | b |\n|---|---|\n" + "".join(f"| {md_cell(n)} | {md_code_span(n)} |\n" for n in HOSTILE_NAMES)
    rows = table_rows(table)
    assert len(rows) == 1 + len(HOSTILE_NAMES)
    assert all(len(r) == 2 for r in rows)
    html = MD.render(table)
    assert "<img" not in html and "<script" not in html


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_stays_in_its_cell(text):
    table = f"| x | y |\n|---|---|\n| {md_cell(text)} | {md_code_span(text)} |\n"
    rows = table_rows(table)
    assert len(rows) == 2 and len(rows[1]) == 2
    html = MD.render(table)
    assert "<img" not in html and "<script" not in html


def test_inline_text_is_literal():
    for text in ("# heading", "- item", "1. item", "**bold**", "[x](http://e)", "`code`", "a_b_c", "<b>x</b>"):
        rendered = MD.render(md_inline(text))
        assert rendered.startswith("<p>"), (text, rendered)
        assert "<strong>" not in rendered and "<a " not in rendered and "<code>" not in rendered
        assert "<b>" not in rendered


def test_code_block_cannot_be_closed_from_inside():
    body = "a\n```\n</details>\n````\nb"
    tokens = [t for t in MD.parse(md_code_block(body) + "\n\nafter") if t.type == "fence"]
    assert len(tokens) == 1 and tokens[0].content.rstrip("\n") == body


def test_downsample_keeps_spike_and_nan():
    rng = np.random.default_rng(3)
    y = 1 + 0.01 * rng.standard_normal(1_000_000)
    y[123_457] = 50.0
    y[654_321] = np.nan
    y[800_000] = -np.inf
    x = np.arange(len(y))
    xs, ys = downsample(x, y, 1200)
    assert len(xs) <= 3 * 1200 + 2
    assert 123_457 in xs and np.nanmax(ys) == 50.0
    assert 654_321 in xs and 800_000 in xs
    assert xs[0] == 0 and xs[-1] == len(y) - 1
    assert np.all(np.diff(xs) > 0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=400),
       st.integers(1, 30))
def test_downsample_keeps_extremes_of_any_series(values, buckets):
    y = np.array(values, dtype=np.float64)
    idx = minmax_indices(y, buckets)
    kept = y[idx]
    finite = y[np.isfinite(y)]
    if len(finite):
        assert np.nanmax(np.where(np.isfinite(kept), kept, np.nan)) == finite.max()
        assert np.nanmin(np.where(np.isfinite(kept), kept, np.nan)) == finite.min()
    assert (~np.isfinite(kept)).any() == (~np.isfinite(y)).any()


def test_reduce_rows_keeps_max_and_flags():
    values = np.ones((1000, 3))
    values[517, 1] = 1e6
    bad = np.zeros_like(values, dtype=bool)
    bad[901, 2] = True
    out, out_bad, starts = reduce_rows(values, 100, bad)
    assert out.shape[0] <= 100 and out.max() == 1e6
    assert out_bad[:, 2].any() and not out_bad[:, :2].any()
    assert starts[0] == 0
