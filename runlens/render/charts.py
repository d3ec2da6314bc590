"""The report's charts: matplotlib (Agg, no display) drawn to inline SVG.

Every chart is drawn from the diagnosis's report data
(:mod:`runlens.report_data`: downsampled series, heatmap matrices, marks);
nothing here reads the run's tables or computes a statistic, it only draws.
When the failure starts early, an onset chart zooms on the steps around it.

Output is deterministic (same run, same bytes): ids come from a fixed
per-chart ``svg.hashsalt``, the date metadata is dropped, and text stays
text (``svg.fonttype='none'``) so no glyph outlines depend on font caches.
Foreground colours are drawn with sentinel values and swapped for CSS
variables afterwards, which is how one SVG follows the page into dark mode.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogFormatter, MaxNLocator
from matplotlib.transforms import blended_transform_factory

# Sentinel colours (never used for data) replaced by CSS variables in the SVG.
_FG, _GRID, _MUTED = "#010203", "#020304", "#030405"
_CSS_VARS = {_FG: "var(--chart-fg)", _GRID: "var(--chart-grid)", _MUTED: "var(--chart-muted)"}
TRAIN, VAL, LR_C, GRAD_C = "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"
BAD_C, MARK_C, CRASH_C, DEAD_C, VERDICT_C = "#d62728", "#e377c2", "#7f7f7f", "#3b3b3b", "#8c564b"
VAL_COLORS = (VAL, "#bcbd22", "#17becf", "#8c564b")
MAX_DEPTH_TICKS = 8

_RC = {
    "svg.fonttype": "none",
    "text.parse_math": False,  # a `$` in a layer name is text, not TeX
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 9,
    "text.color": _FG,
    "axes.labelcolor": _FG,
    "axes.edgecolor": _MUTED,
    "xtick.color": _MUTED,
    "ytick.color": _MUTED,
    "xtick.labelcolor": _FG,
    "ytick.labelcolor": _FG,
    "grid.color": _GRID,
    "axes.grid": True,
    "grid.linewidth": 0.5,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.facecolor": "none",
    "axes.facecolor": "none",
    "savefig.facecolor": "none",
    "path.simplify": True,
}


@dataclass(frozen=True)
class Chart:
    """One drawn chart: ``key`` names it for anchors and tests."""

    key: str
    title: str
    caption: str
    svg: str


def render_charts(diagnosis: Any) -> tuple[Chart, ...]:
    """Every chart the run has data for, in reading order (the onset chart, when there is one,
    right after the loss chart)."""
    data = diagnosis.report_data
    if data is None:
        raise ValueError("this diagnosis carries no report data (see runlens.report_data.attach)")
    marks = data.marks
    with matplotlib.rc_context(_RC):  # tick labels read rcParams at draw time
        charts: list[Chart | None] = [
            *_loss_charts(data, marks),
            _onset_chart(data.onset, marks),
            _line_chart(data.series.get("lr"), "lr", "Learning rate", LR_C, marks, log=False),
            _line_chart(data.series.get("grad_norm"), "grad_norm", "Global gradient norm", GRAD_C, marks,
                        log=True),
            *(_heatmap(h) for h in data.heatmaps),
            _weight_norms(data),
        ]
    return tuple(c for c in charts if c is not None)


def _vline(ax: Any, step: int | None, label: str, color: str, style: str = "--", *, top: bool = True) -> None:
    """A vertical marker; labels go above the axes (``top``) or along the
    line inside it, so two markers at nearby steps do not overwrite each other."""
    if step is None:
        return
    ax.axvline(step, color=color, linestyle=style, linewidth=1)
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    if top:
        ax.text(step, 1.0, f" {label}", transform=trans, color=color, fontsize=7.5,
                va="bottom", ha="left", clip_on=False)
    else:
        ax.text(step, 0.03, f"{label} ", transform=trans, color=color, fontsize=7.5,
                va="bottom", ha="right", rotation=90)


def _log_axis(axis: Any) -> None:
    """Plain-text log tick labels (``1e-04``): mathtext is off so that run
    text such as a `$` in a layer name is never read as TeX."""
    axis.set_major_formatter(LogFormatter())
    axis.set_minor_formatter(LogFormatter(minor_thresholds=(2, 0.5)))


def _nonfinite_ticks(ax: Any, x: np.ndarray, y: np.ndarray) -> None:
    """Red crosses along the top of the axes where a value was NaN/Inf."""
    bad = ~np.isfinite(y)
    if bad.any():
        trans = blended_transform_factory(ax.transData, ax.transAxes)
        ax.plot(x[bad], np.full(int(bad.sum()), 0.97), "x", color=BAD_C, markersize=4,
                transform=trans, clip_on=False, label="NaN/Inf")


# -- line charts ------------------------------------------------------------
def _loss_charts(data: Any, marks: Any) -> tuple[Chart | None, Chart | None]:
    """The loss chart (``loss``) and the same on the other y scale (``loss_alt``). Log comes
    first when the finite loss spans more than three decades: on a linear axis a blow-up
    flattens everything before it."""
    loss = data.series.get("loss")
    if loss is None:
        return None, None
    finite = loss.values[np.isfinite(loss.values)]
    log_first = bool(len(finite)) and finite.min() > 0 and finite.max() / finite.min() > 1e3
    first = _loss_chart(data, marks, log=log_first, key="loss")
    return first, _loss_chart(data, marks, log=not log_first, key="loss_alt")


def _plot(ax: Any, s: Any, color: str, **kw: Any) -> None:
    ax.plot(s.steps, np.where(np.isfinite(s.values), s.values, np.nan), color=color, **kw)


def _loss_chart(data: Any, marks: Any, *, log: bool, key: str) -> Chart | None:
    loss = data.series["loss"]
    finite = loss.values[np.isfinite(loss.values)]
    if log and (not len(finite) or finite.min() <= 0):
        return None
    fig, ax = _figure()
    _plot(ax, loss, TRAIN, linewidth=0.9, label=loss.label)
    _nonfinite_ticks(ax, loss.steps, loss.values)
    if marks.spikes:
        ax.plot([s for s, _ in marks.spikes], [v for _, v in marks.spikes], "v", color=MARK_C,
                markersize=5, label="spike")
    _val_lines(ax, data, marks)
    _step_marks(ax, marks)
    if log:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (log)" if log else "loss")
    ax.legend(loc="best", fontsize=7.5)
    title = "Loss (log scale)" if log else "Loss (linear scale)"
    caption = "Training loss (min/max per bucket, so spikes stay visible) and validation loss."
    if marks.verdict_step is not None:
        caption += f" Brown dash-dot line: the step the verdict names ({marks.verdict_step:,})."
    return _finish(fig, key, title, caption)


def _val_lines(ax: Any, data: Any, marks: Any) -> None:
    vals = [s for k, s in data.series.items() if k.startswith("val_loss")]
    for color, s in zip(VAL_COLORS, vals, strict=False):
        _plot(ax, s, color, linewidth=1.2, marker="o" if len(s) <= 60 else None, markersize=3, label=s.label)
    if marks.val_best is not None:
        step, value = marks.val_best
        ax.plot([step], [value], "*", color=VAL, markersize=11, markeredgecolor=_FG,
                markeredgewidth=0.5, label=f"val minimum (step {step:,})")


def _step_marks(ax: Any, marks: Any, *, verdict: bool = True) -> None:
    """The first non-finite loss, the step the verdict names and the stop, as vertical lines."""
    if marks.first_nan is not None:
        _vline(ax, marks.first_nan, f"first NaN/Inf (step {marks.first_nan:,})", BAD_C)
    if verdict and marks.verdict_step is not None and marks.verdict_step != marks.first_nan:
        _vline(ax, marks.verdict_step, marks.verdict_label, VERDICT_C, "-.", top=False)
    _vline(ax, marks.stop, marks.stop_label, CRASH_C, ":", top=False)


def _onset_chart(onset: Any, marks: Any) -> Chart | None:
    """The steps around an early failure at full resolution: on the full chart they are a
    sliver at the left edge."""
    if onset is None or onset.loss is None:
        return None
    fig, ax = _figure(height=2.6)
    _plot(ax, onset.loss, TRAIN, linewidth=1.1, marker="." if len(onset.loss) <= 120 else None,
          markersize=4, label=onset.loss.label)
    _nonfinite_ticks(ax, onset.loss.steps, onset.loss.values)
    if onset.val_loss is not None:
        _plot(ax, onset.val_loss, VAL, linewidth=1.2, marker="o", markersize=3, label=onset.val_loss.label)
    if onset.grad_norm is not None and np.isfinite(onset.grad_norm.values).any():
        twin = ax.twinx()
        _plot(twin, onset.grad_norm, GRAD_C, linewidth=0.9, linestyle="--", label=onset.grad_norm.label)
        _nonfinite_ticks(twin, onset.grad_norm.steps, onset.grad_norm.values)
        positive = onset.grad_norm.values[np.isfinite(onset.grad_norm.values)]
        if len(positive) and positive.min() > 0 and positive.max() / positive.min() > 20:
            twin.set_yscale("log")
            _log_axis(twin.yaxis)
        twin.set_ylabel("grad norm", color=GRAD_C)
        twin.grid(False)
        twin.spines["right"].set_visible(True)
    _step_marks(ax, marks)
    ax.set_xlim(onset.first, onset.last)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.legend(loc="upper left", bbox_to_anchor=(0.06, 1.0), fontsize=7.5)
    title = f"Onset: steps {onset.first:,} to {onset.last:,}"
    caption = f"Every recorded step around the failure ({onset.reason}), which starts early in the run."
    return _finish(fig, "onset", title, caption)


def _line_chart(s: Any, key: str, title: str, color: str, marks: Any, *, log: bool) -> Chart | None:
    if s is None or not np.isfinite(s.values).any():
        return None
    fig, ax = _figure(height=2.2)
    _plot(ax, s, color, linewidth=0.9, label=s.label)
    _nonfinite_ticks(ax, s.steps, s.values)
    positive = s.values[np.isfinite(s.values)]
    if log and positive.min() > 0 and positive.max() / positive.min() > 20:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    if key == "grad_norm":
        at: dict[int, list[str]] = {}
        for code in ("exploding_gradients", "nonfinite_gradient"):
            if code in marks.finding_steps:
                at.setdefault(marks.finding_steps[code], []).append(code)
        for step, codes in sorted(at.items()):
            _vline(ax, step, f"{', '.join(codes)} (step {step:,})", BAD_C)
    _vline(ax, marks.stop, marks.stop_label, CRASH_C, ":", top=False)
    ax.set_xlabel("step")
    ax.set_ylabel(s.label)
    return _finish(fig, key, title, f"{title} per recorded step (min/max per bucket).")


def _weight_norms(data: Any) -> Chart | None:
    if not data.weight_lines:
        return None
    fig, ax = _figure(height=2.6)
    for s in data.weight_lines:
        ax.plot(s.steps, np.where(np.isfinite(s.values), s.values, np.nan), linewidth=0.9, label=_short(s.label))
    ax.set_xlabel("step")
    ax.set_ylabel("weight norm")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    n, total = len(data.weight_lines), data.weight_total
    shown = f"{n} of {total:,} layers" if n < total else "every layer"
    return _finish(fig, "weight_norm", "Weight norms",
                   f"L2 norm of the weights ({shown}: first, last, evenly spaced by depth and any flagged).")


def _short(name: str, limit: int = 40) -> str:
    name = " ".join(str(name).split())
    return name if len(name) <= limit else name[: limit - 1] + "…"


# -- heatmaps ---------------------------------------------------------------
def _heatmap(h: Any) -> Chart | None:
    values, bad = h.values, h.bad
    norm = LogNorm(vmin=h.vmin, vmax=h.vmax)
    cmap = matplotlib.colormaps["viridis"]
    rgba = cmap(norm(np.where(values > 0, values, np.nan)))
    rgba[~np.isfinite(values)] = (0, 0, 0, 0)
    rgba[np.isfinite(values) & (values == 0)] = matplotlib.colors.to_rgba(DEAD_C)
    rgba[bad] = matplotlib.colors.to_rgba(BAD_C)
    fig, ax = _figure(height=2.8)
    rows = values.shape[0]
    ax.imshow(rgba, aspect="auto", origin="lower", interpolation="none",
              extent=(h.x0, h.x1, -0.5, rows - 0.5))
    ax.grid(False)
    _depth_ticks(ax, h.row_starts, h.n_layers)
    _flag_layers(ax, h.flagged)
    ax.set_xlabel("step")
    ax.set_ylabel("layer depth (0 = input)")
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01, fraction=0.04)
    bar.set_label(h.unit)
    _log_axis(bar.ax.yaxis)
    grouped = f", {h.n_layers:,} layers in {rows} rows (max per row)" if rows < h.n_layers else ""
    caption = (f"Log colour scale{grouped}; red: NaN/Inf, dark grey: exactly zero, blank: not recorded; "
               f"arrows: layers a finding names. {h.hint}")
    return _finish(fig, h.key, h.title, caption)


def _depth_ticks(ax: Any, starts: np.ndarray, n_layers: int) -> None:
    """Whole-number depth labels at row centres (a row groups layers when there are many)."""
    rows = len(starts)
    picks = np.unique(np.linspace(0, rows - 1, min(rows, MAX_DEPTH_TICKS)).round().astype(int))
    ax.set_yticks(picks)
    ax.set_yticklabels([str(int(starts[r])) for r in picks])
    ax.set_ylim(-0.5, rows - 0.5)


_FLAG_COLORS = ("#e377c2", "#ff7f0e", "#17becf")


def _flag_layers(ax: Any, flagged: Any) -> None:
    """Arrows just inside the left edge of a heatmap pointing at the rows (layers) that
    findings named, one colour per finding code."""
    trans = blended_transform_factory(ax.transAxes, ax.transData)
    drawn = 0
    for code, rows in flagged:
        if drawn == len(_FLAG_COLORS):
            break
        ax.plot(np.full(len(rows), 0.008), rows, ">", color=_FLAG_COLORS[drawn], markersize=6,
                markeredgecolor="white", markeredgewidth=0.6, transform=trans, clip_on=False,
                label=f"{code} ({len(rows):,} row{'s' if len(rows) > 1 else ''})")
        drawn += 1
    if drawn:
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3, fontsize=7.5, borderaxespad=0.2)


# -- figure plumbing --------------------------------------------------------
def _figure(height: float = 2.8) -> tuple[Figure, Any]:
    fig = Figure(figsize=(9.0, height), layout="constrained")
    ax = fig.add_subplot()
    ax.xaxis.set_major_formatter(_STEPS)
    return fig, ax


def _step_label(value: float, _pos: Any = None) -> str:
    """Step ticks as ``250k`` / ``1.5M`` rather than an offset like ``1e6``."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:g}M"
    if size >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


_STEPS = FuncFormatter(_step_label)


def _finish(fig: Figure, key: str, title: str, caption: str) -> Chart:
    FigureCanvasSVG(fig)
    buf = io.StringIO()
    with matplotlib.rc_context({**_RC, "svg.hashsalt": f"runlens-{key}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return Chart(key=key, title=title, caption=caption, svg=_clean_svg(buf.getvalue(), title))


_GROUP_ID = re.compile(r' id="[A-Za-z][\w.]*_\d+"')
_SIZE = re.compile(r'<svg ([^>]*?)width="[\d.]+pt" height="[\d.]+pt"')


def _clean_svg(svg: str, title: str) -> str:
    """Inline-ready SVG: no XML prologue or metadata, no fixed size, no
    duplicate group ids across charts, colours bound to the page's theme."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    label = html.escape(title, quote=True)
    svg = _SIZE.sub(lambda m: f'<svg class="chart" role="img" aria-label="{label}" {m.group(1)}', svg, count=1)
    svg = _GROUP_ID.sub("", svg)
    for sentinel, var in _CSS_VARS.items():
        svg = svg.replace(sentinel, var)
    return svg.strip()
