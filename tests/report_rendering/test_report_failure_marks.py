"""Charts show the failure: one verdict step marked on every full-run chart, one x range, crash
markers as visible as the NaN marker with their labels above the data, log axes for magnitudes
that span decades, legends below the axes holding every line, and the validation rise as the
onset view of an overfitting run."""

from __future__ import annotations

import dataclasses

import matplotlib
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from report_fixtures import make_run, report_of

from runlens.diagnosis import CurveVerdict, Finding
from runlens.render.chart_parts import RC, WIDE, failure_marks
from runlens.render.report import charts
from runlens.render.report.html import render_html
from runlens.report_data import ReportData

FULL_RUN = ("loss", "loss_alt", "lr", "grad_norm", "grad_heatmap", "update_ratio", "weight_norm")


def _figures(data: ReportData) -> dict:
    """Each chart's wide figure, drawn (so legends and labels have their final places)."""
    out = {}
    with matplotlib.rc_context(RC):
        for key, _title, _caption, draw in charts._plans(data):  # noqa: SLF001 - the figures before SVG
            fig = draw(WIDE, f"{key}-wide", "step")
            if fig is not None:
                FigureCanvasAgg(fig).draw()
                out[key] = fig
    return out


def _crashed_with_short_layers() -> ReportData:
    """A run whose loss starts to grow at step 5, whose layer table stops at step 290 of 600,
    and which crashes at its end; the detectors' finding names another step (72)."""
    run = make_run(crash=True, name="short-layers")
    run = dataclasses.replace(run, layers=run.layers.filter(pc.less_equal(run.layers["step"], 290)))
    f = Finding("exploding_gradients", "error", "gradient norm grew", step=72)
    return report_of(run, curve=CurveVerdict("diverged", "grows", {"step": 52}),
                            findings=(f,), verdict_step=5)


def _ids(fig) -> list[str]:
    return [a.get_gid() for ax in fig.axes for a in ax.lines if a.get_gid()]


def test_every_full_run_chart_marks_the_one_verdict_step_and_shares_the_x_range():
    diagnosis = _crashed_with_short_layers()
    figs = _figures(diagnosis)
    assert set(FULL_RUN) <= set(figs)
    ranges = {key: figs[key].axes[0].get_xlim() for key in FULL_RUN}
    assert len(set(ranges.values())) == 1, ranges  # the weight norms do not stop at 290
    lo, hi = ranges["loss"]
    assert lo < 0 and hi > 600  # the crash at step 600 is inside, not on the edge
    for key in FULL_RUN:
        marked = {ln.get_gid(): ln.get_xdata()[0] for ax in figs[key].axes for ln in ax.lines if ln.get_gid()}
        assert marked.get(f"{key}-wide-mark-verdict") == 5, (key, marked)  # not the finding's 72, not 52
        assert marked.get(f"{key}-wide-mark-stop") == 600, (key, marked)
    # The page says the same step in the marker label.
    assert "diverged (step 5)" in render_html(diagnosis)


def test_crash_marker_is_as_visible_as_the_nan_marker_and_labelled_above_the_data():
    run = make_run(crash=True, nan_at=300, name="crash")
    diagnosis = report_of(run, curve=CurveVerdict("diverged", "x"), findings=(), verdict_step=250)
    fig = _figures(diagnosis)["loss"]
    ax = fig.axes[0]
    lines = {ln.get_gid().rsplit("-", 1)[-1]: ln for ln in ax.lines if ln.get_gid()}
    assert set(lines) == {"verdict", "nan", "stop"}
    assert lines["stop"].get_linewidth() >= lines["nan"].get_linewidth()
    assert lines["stop"].get_linestyle() == "-" and matplotlib.colors.to_rgb(lines["stop"].get_color()) != \
        matplotlib.colors.to_rgb("#7f7f7f")  # not the faint grey of before
    renderer = fig.canvas.get_renderer()
    top = ax.get_window_extent(renderer).y1
    labels = [t for t in ax.texts if "step" in t.get_text()]
    assert len(labels) == 3
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert all(b.y0 >= top - 0.5 for b in boxes)  # above the axes: no star or line draws over them
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_marks_list_each_step_once():
    marks = _crashed_with_short_layers().marks
    same = dataclasses.replace(marks, verdict_step=600, first_nan=600)
    assert [m[4] for m in failure_marks(same)] == ["stop"]


def test_magnitudes_that_span_decades_get_a_log_axis():
    run = make_run(name="grow")
    w = run.layers["weight_norm"].to_numpy()
    steps = run.layers["step"].to_numpy()
    grown = (w * 10.0 ** (16 * steps / steps.max())).astype(np.float32)
    layers = run.layers.set_column(run.layers.schema.get_field_index("weight_norm"), "weight_norm", pa.array(grown))
    diagnosis = report_of(dataclasses.replace(run, layers=layers), curve=CurveVerdict("healthy", "x"),
                                 findings=())
    figs = _figures(diagnosis)
    assert figs["weight_norm"].axes[0].get_yscale() == "log"
    assert figs["grad_norm"].axes[0].get_yscale() == "linear"  # 0.7..1.3: no decades to span
    flat = _figures(report_of(make_run(name="flat"), curve=CurveVerdict("healthy", "x"), findings=()))
    assert flat["weight_norm"].axes[0].get_yscale() == "linear"  # norms 1..12: one decade at most


@pytest.mark.parametrize("key", ["loss", "onset", "weight_norm", "grad_heatmap"])
def test_legends_sit_below_the_axes_and_hold_every_line(key):
    run = make_run(nan_at=20, name="early")
    named = Finding("vanishing_gradients", "warning", "x", layers=run.layer_names()[:2])  # heatmap arrows
    diagnosis = report_of(run, curve=CurveVerdict("diverged", "x", {"step": 10}), findings=(named,), verdict_step=10)
    fig = _figures(diagnosis)[key]
    renderer = fig.canvas.get_renderer()
    assert all(ax.get_legend() is None for ax in fig.axes)  # nothing inside an axes
    assert len(fig.legends) == 1
    legend = fig.legends[0].get_window_extent(renderer)
    plots = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert all(legend.y1 <= ax.get_window_extent(renderer).y0 for ax in plots)
    shown = {t.get_text() for t in fig.legends[0].get_texts()}
    labelled = {ln.get_label() for ax in plots for ln in ax.lines if not ln.get_label().startswith("_")}
    assert labelled <= shown, labelled - shown
    if key == "onset":
        assert "global grad norm" in shown  # the twin axis's line is in the legend too


def test_an_overfitting_runs_onset_view_is_its_validation_rise():
    run = make_run(name="over")
    val = run.evals["val_loss"].to_numpy().copy()
    steps = run.evals["step"].to_numpy()
    val[steps >= 150] += 0.004 * (steps[steps >= 150] - 150)  # validation rises from step 150
    evals = run.evals.set_column(run.evals.schema.get_field_index("val_loss"), "val_loss", pa.array(val))
    run = dataclasses.replace(run, evals=evals)
    diagnosis = report_of(run, curve=CurveVerdict("overfitting", "rise"), findings=(), verdict_step=150)
    onset = diagnosis.onset
    assert onset.kind == "validation" and onset.grad_norm is None
    assert onset.first < 150 and onset.last >= steps[-1]  # from before the rise to its end
    assert onset.val_loss.steps[-1] == steps[-1] and len(onset.val_loss) >= 8
    fig = _figures(diagnosis)["onset"]
    train, val_ax = fig.axes[:2]
    assert train.get_position().x1 < val_ax.get_position().x0  # side by side
    page = render_html(diagnosis)
    assert "Validation rise: steps" in page
