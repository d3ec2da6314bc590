"""The report's charts: matplotlib (Agg, no display) drawn to inline SVG.

Every chart is drawn from the diagnosis's report data
(:mod:`runlens.report_data`: downsampled series, heatmap matrices, marks);
nothing here reads the run's tables or computes a statistic, it only draws.
Every full-run chart spans the same steps and marks the same steps: where the
failure starts (the verdict's step), the first NaN/Inf, the crash or kill.
When the failure starts early, an onset chart zooms on the steps around it;
an overfitting run gets its validation rise instead.

Each chart is drawn twice, wide for a desktop column and narrow for a phone
(the page shows one of them), so that on either screen the whole x range, and
with it the failure, fits the width with readable text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import blended_transform_factory

from runlens.render.chart_parts import (
    BAD_C,
    FG,
    NARROW,
    RC,
    WIDE,
    Layout,
    draw_marks,
    drawable,
    figure,
    figure_grid,
    finish,
    legend_below,
    log_axis,
    magnitude_scale,
    nonfinite_ticks,
    shared_x,
)

if TYPE_CHECKING:
    from runlens.render.contracts import HeatmapLike, MarksLike, OnsetLike, ReportDataLike, SeriesLike

TRAIN, VAL, LR_C, GRAD_C = "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"
MARK_C, DEAD_C = "#e377c2", "#3b3b3b"
VAL_COLORS = (VAL, "#bcbd22", "#17becf", "#8c564b")
MAX_DEPTH_TICKS = 8
_MARKS_NOTE = ("Vertical lines: where the failure starts (brown dash-dot), the first NaN/Inf (red dashed) "
               "and the crash or kill (solid).")


@dataclass(frozen=True)
class Chart:
    """One drawn chart: ``key`` names it for anchors and tests; ``svg`` is the wide drawing and
    ``svg_narrow`` the phone-width one."""

    key: str
    title: str
    caption: str
    svg: str
    svg_narrow: str = ""


# (layout, gid, axis): every chart draws over the log's x axis and names it, "step" or "epoch".
Draw = Callable[[Layout, str, str], Figure | None]


def render_charts(data: ReportDataLike) -> tuple[Chart, ...]:
    """Every chart a :class:`~runlens.report_data.ReportData` has data for, in reading order (the
    onset chart, when there is one, right after the loss chart). Its marks name the diagnosis's one
    step where the failure starts, which its headline and findings name too."""
    with matplotlib.rc_context(RC):  # tick labels read rcParams at draw time
        axis = data.diagnosis.key_numbers.get("axis") or "step"
        return tuple(c for c in (_draw(*plan, axis=axis) for plan in _plans(data)) if c is not None)


def _draw(key: str, title: str, caption: str, draw: Draw, *, axis: str = "step") -> Chart | None:
    wide = draw(WIDE, f"{key}-wide", axis)
    if wide is None:
        return None
    narrow = draw(NARROW, f"{key}-narrow", axis)
    return Chart(key, title, caption, finish(wide, key, title),
                 finish(narrow, f"{key}-narrow", title) if narrow is not None else "")


def _plans(data: ReportDataLike) -> list[tuple[str, str, str, Draw]]:
    marks = data.marks
    plans: list[tuple[str, str, str, Draw]] = []
    loss = data.series.get("loss")
    if loss is not None:
        finite = loss.values[np.isfinite(loss.values)]
        log_first = bool(len(finite)) and finite.min() > 0 and finite.max() / finite.min() > 1e3
        caption = ("Training loss (min/max per bucket, so spikes stay visible) and validation loss. "
                   + _MARKS_NOTE)
        for key, log in (("loss", log_first), ("loss_alt", not log_first)):
            if not log or (len(finite) and finite.min() > 0):
                plans.append((key, "Loss (log scale)" if log else "Loss (linear scale)", caption,
                              partial(_loss_chart, data, log=log)))
    onset = data.onset
    if onset is not None and (onset.loss is not None or onset.val_loss is not None):
        plans.append(("onset", *_onset_text(onset), lambda lay, gid, axis: _onset_chart(onset, marks, lay, gid, axis)))
    for key, title, color in (("lr", "Learning rate", LR_C), ("grad_norm", "Global gradient norm", GRAD_C)):
        s = data.series.get(key)
        plans.append((key, title, f"{title} per recorded step (min/max per bucket; log axis when it spans "
                      "decades), the same steps marked.", partial(_line_chart, data, s, color)))
    for h in data.heatmaps:
        grouped = f", {h.n_layers:,} layers in {len(h.row_starts)} rows (max per row)" \
            if len(h.row_starts) < h.n_layers else ""
        caption = (f"Log colour scale{grouped}; red: NaN/Inf, dark grey: exactly zero, blank: not recorded; "
                   f"arrows: layers a finding names. {h.hint}")
        plans.append((h.key, h.title, caption, partial(_heatmap, data, h)))
    if data.weight_lines:
        n, total = len(data.weight_lines), data.weight_total
        shown = f"{n} of {total:,} layers" if n < total else "every layer"
        plans.append(("weight_norm", "Weight norms",
                      f"L2 norm of the weights ({shown}: first, last, evenly spaced by depth and any flagged; "
                      "log axis when they span decades).", lambda lay, gid, axis: _weight_norms(data, lay, gid, axis)))
    return plans


# -- line charts ------------------------------------------------------------
def _plot(ax: Axes, s: SeriesLike, color: str, *, label: str, linewidth: float, marker: str | None = None,
          markersize: float | None = None, linestyle: str | None = None) -> None:
    # None is matplotlib's own default for each of these (the rc parameters).
    ax.plot(s.steps, drawable(s.values), color=color, label=label,
            linewidth=linewidth, marker=marker, markersize=markersize, linestyle=linestyle)


def _loss_chart(data: ReportDataLike, layout: Layout, gid: str, axis: str, *, log: bool) -> Figure:
    loss, marks = data.series["loss"], data.marks
    fig, ax = figure(layout)
    _plot(ax, loss, TRAIN, linewidth=0.9, label=loss.label)
    nonfinite_ticks(ax, loss.steps, loss.values)
    if marks.spikes:
        ax.plot([s for s, _ in marks.spikes], drawable(np.array([v for _, v in marks.spikes])), "v", color=MARK_C,
                markersize=5, label="spike")
    _val_lines(ax, data, marks)
    if log:
        ax.set_yscale("log")
        log_axis(ax.yaxis)
    shared_x(ax, data.x_range)
    draw_marks(ax, marks, gid)
    ax.set_xlabel(axis)
    ax.set_ylabel("loss (log)" if log else "loss")
    legend_below(fig, ax, layout)
    return fig


def _val_lines(ax: Axes, data: ReportDataLike, marks: MarksLike) -> None:
    vals = [s for k, s in data.series.items() if k.startswith("val_loss")]
    for color, s in zip(VAL_COLORS, vals, strict=False):
        _plot(ax, s, color, linewidth=1.2, marker="o" if len(s) <= 60 else None, markersize=3, label=s.label)
    if marks.val_best is not None:
        step, value = marks.val_best
        ax.plot([step], [value], "*", color=VAL, markersize=11, markeredgecolor=FG,
                markeredgewidth=0.5, label=f"val minimum (step {step:,})")


def _onset_text(onset: OnsetLike) -> tuple[str, str]:
    if onset.kind == "validation":
        return (f"Validation rise: steps {onset.first:,} to {onset.last:,}",
                f"Training and validation loss side by side, each on its own scale ({onset.reason}).")
    return (f"Onset: steps {onset.first:,} to {onset.last:,}",
            f"Every recorded step around the failure ({onset.reason}), which starts early in the run.")


def _onset_chart(onset: OnsetLike, marks: MarksLike, layout: Layout, gid: str, axis: str) -> Figure:
    """The steps around an early failure at full resolution (on the full chart they are a sliver
    at the left edge), or an overfitting run's validation rise next to its training loss."""
    if onset.kind == "validation":
        return _rise_chart(onset, marks, layout, gid, axis)
    fig, ax = figure(layout, 2.6)
    axes = [ax]
    if onset.loss is not None:
        _plot(ax, onset.loss, TRAIN, linewidth=1.1, marker="." if len(onset.loss) <= 120 else None,
              markersize=4, label=onset.loss.label)
        nonfinite_ticks(ax, onset.loss.steps, onset.loss.values)
    if onset.val_loss is not None:
        _plot(ax, onset.val_loss, VAL, linewidth=1.2, marker="o", markersize=3, label=onset.val_loss.label)
    if onset.grad_norm is not None and np.isfinite(onset.grad_norm.values).any():
        twin = ax.twinx()
        axes.append(twin)
        _plot(twin, onset.grad_norm, GRAD_C, linewidth=0.9, linestyle="--", label=onset.grad_norm.label)
        nonfinite_ticks(twin, onset.grad_norm.steps, onset.grad_norm.values)
        magnitude_scale(twin, onset.grad_norm.values)
        twin.set_ylabel("grad norm", color=GRAD_C)
        twin.grid(False)
        twin.spines["right"].set_visible(True)
    if onset.loss is not None:
        magnitude_scale(ax, onset.loss.values)  # a loss that blows up by decades flattens the rest
    ax.set_xlim(onset.first - 0.5, onset.last + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    draw_marks(ax, marks, gid)
    ax.set_xlabel(axis)
    ax.set_ylabel("loss")
    legend_below(fig, axes, layout)
    return fig


def _rise_chart(onset: OnsetLike, marks: MarksLike, layout: Layout, gid: str, axis: str) -> Figure:
    """Two panels over the same steps (side by side when wide, stacked when narrow): a rise of
    the validation loss that is small next to the training loss's fall still fills its panel."""
    wide = layout.width > 6
    fig, (left, right) = figure_grid(layout, 2.6 if wide else 1.6, cols=2 if wide else 1, rows=1 if wide else 2)
    if onset.loss is not None:
        _plot(left, onset.loss, TRAIN, linewidth=1.0, label=onset.loss.label)
        nonfinite_ticks(left, onset.loss.steps, onset.loss.values)
        magnitude_scale(left, onset.loss.values)
    if onset.val_loss is not None:
        _plot(right, onset.val_loss, VAL, linewidth=1.2, marker="o" if len(onset.val_loss) <= 80 else None,
              markersize=3, label=onset.val_loss.label)
    if marks.val_best is not None and onset.first <= marks.val_best[0] <= onset.last:
        right.plot([marks.val_best[0]], [marks.val_best[1]], "*", color=VAL, markersize=11,
                   markeredgecolor=FG, markeredgewidth=0.5, label=f"val minimum (step {marks.val_best[0]:,})")
    for ax, name, part in ((left, "training loss", "train"), (right, "validation loss", "val")):
        pad = max(0.5, 0.015 * (onset.last - onset.first))
        ax.set_xlim(onset.first - pad, onset.last + pad)
        draw_marks(ax, marks, f"{gid}-{part}")
        ax.set_xlabel(axis)
        ax.set_ylabel(name)
    legend_below(fig, (left, right), layout)
    return fig


def _line_chart(data: ReportDataLike, s: SeriesLike | None, color: str, layout: Layout, gid: str,
                axis: str) -> Figure | None:
    if s is None or not np.isfinite(s.values).any():
        return None
    fig, ax = figure(layout, 2.2)
    _plot(ax, s, color, linewidth=0.9, label=s.label)
    nonfinite_ticks(ax, s.steps, s.values)
    magnitude_scale(ax, s.values)
    shared_x(ax, data.x_range)
    draw_marks(ax, data.marks, gid)
    ax.set_xlabel(axis)
    ax.set_ylabel(s.label)
    return fig


def _weight_norms(data: ReportDataLike, layout: Layout, gid: str, axis: str) -> Figure:
    fig, ax = figure(layout, 2.6)
    values = []
    for s in data.weight_lines:
        ax.plot(s.steps, drawable(s.values), linewidth=0.9, label=_short(s.label))
        values.append(s.values)
    magnitude_scale(ax, np.concatenate(values))
    shared_x(ax, data.x_range)
    draw_marks(ax, data.marks, gid)
    ax.set_xlabel(axis)
    ax.set_ylabel("weight norm")
    legend_below(fig, ax, layout, ncol=min(layout.legend_cols, 3))
    return fig


def _short(name: str, limit: int = 40) -> str:
    name = " ".join(str(name).split())
    return name if len(name) <= limit else name[: limit - 1] + "…"


# -- heatmaps ---------------------------------------------------------------
def _heatmap(data: ReportDataLike, h: HeatmapLike, layout: Layout, gid: str, axis: str) -> Figure:
    values, bad = h.values, h.bad
    norm = LogNorm(vmin=h.vmin, vmax=h.vmax)
    cmap = matplotlib.colormaps["viridis"]
    rgba = cmap(norm(np.where(values > 0, values, np.nan)))
    rgba[~np.isfinite(values)] = (0, 0, 0, 0)
    rgba[np.isfinite(values) & (values == 0)] = matplotlib.colors.to_rgba(DEAD_C)
    rgba[bad] = matplotlib.colors.to_rgba(BAD_C)
    fig, ax = figure(layout, 2.8)
    rows = values.shape[0]
    ax.imshow(rgba, aspect="auto", origin="lower", interpolation="none",
              extent=(h.x0, h.x1, -0.5, rows - 0.5))
    ax.grid(False)
    _depth_ticks(ax, h.row_starts)
    _flag_layers(ax, h.flagged)
    shared_x(ax, data.x_range)
    draw_marks(ax, data.marks, gid)
    ax.set_xlabel(axis)
    ax.set_ylabel("layer depth (0 = input)")
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01, fraction=0.04)
    bar.set_label(h.unit)
    log_axis(bar.ax.yaxis)
    legend_below(fig, ax, layout, ncol=min(layout.legend_cols, 3))
    return fig


def _depth_ticks(ax: Axes, starts: np.ndarray) -> None:
    """Whole-number depth labels at row centres (a row groups layers when there are many)."""
    rows = len(starts)
    picks = np.unique(np.linspace(0, rows - 1, min(rows, MAX_DEPTH_TICKS)).round().astype(int))
    ax.set_yticks(picks)
    ax.set_yticklabels([str(int(starts[r])) for r in picks])
    ax.set_ylim(-0.5, rows - 0.5)


_FLAG_COLORS = ("#e377c2", "#ff7f0e", "#17becf")


def _flag_layers(ax: Axes, flagged: Sequence[tuple[str, tuple[int, ...]]]) -> None:
    """Arrows just inside the left edge of a heatmap pointing at the rows (layers) that
    findings named, one colour per finding code (named in the legend below)."""
    trans = blended_transform_factory(ax.transAxes, ax.transData)
    for color, (code, rows) in zip(_FLAG_COLORS, flagged, strict=False):
        ax.plot(np.full(len(rows), 0.008), rows, ">", color=color, markersize=6,
                markeredgecolor="white", markeredgewidth=0.6, transform=trans, clip_on=False,
                label=f"{code} ({len(rows):,} row{'s' if len(rows) > 1 else ''})")
