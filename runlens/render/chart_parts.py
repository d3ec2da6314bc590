"""Figure plumbing shared by the report's charts: the two sizes each chart is drawn at, the step
axis, the magnitude scale, the failure markers, the legend below the axes and the SVG clean-up.

Output is deterministic (same run, same bytes): ids come from a fixed per-chart
``svg.hashsalt``, the date metadata is dropped, and text stays text
(``svg.fonttype='none'``) so no glyph outlines depend on font caches.
Foreground colours are drawn with sentinel values and swapped for CSS
variables afterwards, which is how one SVG follows the page into dark mode.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogFormatter
from matplotlib.transforms import blended_transform_factory

from runlens.render.format import DRAWABLE

if TYPE_CHECKING:
    from matplotlib.axis import Axis
    from matplotlib.typing import RcKeyType

    from runlens.render.contracts import MarksLike

# Sentinel colours (never used for data) replaced by CSS variables in the SVG.
FG, GRID, MUTED = "#010203", "#020304", "#030405"
_CSS_VARS = {FG: "var(--chart-fg)", GRID: "var(--chart-grid)", MUTED: "var(--chart-muted)"}
BAD_C, VERDICT_C = "#d62728", "#8c564b"
# A magnitude whose positive values span more than this ratio gets a log axis: on a linear
# one, weights that end at 1e16 flatten every earlier step to zero.
LOG_RATIO = 20.0
_LABEL_PT = 7.5  # marker label font size

RC: dict[RcKeyType, object] = {
    "svg.fonttype": "none",
    "text.parse_math": False,  # a `$` in a layer name is text, not TeX
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 9,
    "text.color": FG,
    "axes.labelcolor": FG,
    "axes.edgecolor": MUTED,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "xtick.labelcolor": FG,
    "ytick.labelcolor": FG,
    "grid.color": GRID,
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
class Layout:
    """One drawing size. A chart is drawn wide (a desktop column) and narrow (a phone, where the
    SVG is scaled to the screen width and its 9 pt text still reads at about 10 px)."""

    name: str
    width: float  # inches
    tall: float  # height factor
    legend_cols: int

    def size(self, height: float) -> tuple[float, float]:
        return self.width, height * self.tall


WIDE = Layout("wide", 9.0, 1.0, 4)
NARROW = Layout("narrow", 4.6, 1.35, 2)


def figure(layout: Layout, height: float = 2.8) -> tuple[Figure, Axes]:
    """A figure of one plot."""
    fig, axes = figure_grid(layout, height)
    return fig, axes[0]


def figure_grid(layout: Layout, height: float = 2.8, *, cols: int = 1, rows: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure of ``rows`` x ``cols`` plots, row by row."""
    fig = Figure(figsize=layout.size(height * rows), layout="constrained")
    axes: list[Axes] = list(fig.subplots(rows, cols, squeeze=False).ravel())
    for ax in axes:
        ax.xaxis.set_major_formatter(STEPS)
    return fig, axes


def step_label(value: float, _pos: int | None = None) -> str:
    """Step ticks as ``250k`` / ``1.5M`` rather than an offset like ``1e6``."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:g}M"
    if size >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


STEPS = FuncFormatter(step_label)


def log_axis(axis: Axis) -> None:
    """Plain-text log tick labels (``1e-04``): mathtext is off so that run
    text such as a `$` in a layer name is never read as TeX."""
    axis.set_major_formatter(LogFormatter())
    axis.set_minor_formatter(LogFormatter(minor_thresholds=(2, 0.5)))


def magnitude_scale(ax: Axes, values: np.ndarray, *, y: bool = True) -> str:
    """Put a magnitude (a norm, a rate) on a log axis when its positive values span more than
    ``LOG_RATIO``; exact zeros (a dead layer) then need a symmetric-log axis, linear near zero.
    Returns the scale used."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    positive = v[v > 0]
    if not len(positive) or (v < 0).any() or positive.max() / positive.min() <= LOG_RATIO:
        return "linear"
    axis = ax.yaxis if y else ax.xaxis
    if (v == 0).any():
        (ax.set_yscale if y else ax.set_xscale)("symlog", linthresh=float(positive.min()))
        axis.set_major_formatter(FuncFormatter(lambda t, _p: f"{t:.0e}" if t else "0"))
        return "symlog"
    (ax.set_yscale if y else ax.set_xscale)("log")
    log_axis(axis)
    return "log"


def shared_x(ax: Axes, x_range: tuple[int, int] | None) -> None:
    """The report's one x range, with a margin so a crash at the last step is a visible line,
    not the right edge of the axes."""
    if x_range is None:
        return
    lo, hi = x_range
    pad = max(1.0, 0.015 * (hi - lo))
    ax.set_xlim(lo - pad, hi + pad)


def drawable(y: np.ndarray) -> np.ndarray:
    """``y`` with every value a chart cannot draw (NaN, Inf, beyond ``DRAWABLE``) as NaN: a gap in the line
    (matplotlib cannot invert the transform of an axis whose span overflows)."""
    y = np.asarray(y, dtype=float)
    return np.where(np.isfinite(y) & (np.abs(y) <= DRAWABLE), y, np.nan)


def nonfinite_ticks(ax: Axes, x: np.ndarray, y: np.ndarray) -> None:
    """Red crosses along the top of the axes where a value was NaN/Inf (or beyond ``DRAWABLE``)."""
    bad = np.isnan(drawable(y))
    if bad.any():
        trans = blended_transform_factory(ax.transData, ax.transAxes)
        ax.plot(x[bad], np.full(int(bad.sum()), 0.97), "x", color=BAD_C, markersize=4,
                transform=trans, clip_on=False, label="NaN/Inf")


def failure_marks(marks: MarksLike) -> list[tuple[int, str, str, str, str]]:
    """``(step, label, colour, line style, kind)`` of every step a chart marks: the verdict's step
    (where the failure starts), the first NaN/Inf and the crash or kill, each step once (a crash
    that is itself where the failure starts is drawn as the crash)."""
    out = []
    if marks.verdict_step is not None and marks.verdict_step != marks.stop:
        out.append((marks.verdict_step, marks.verdict_label, VERDICT_C, "-.", "verdict"))
    if marks.first_nan is not None and marks.first_nan != marks.verdict_step:
        out.append((marks.first_nan, f"first NaN/Inf (step {marks.first_nan:,})", BAD_C, "--", "nan"))
    if marks.stop is not None:
        out.append((marks.stop, f"{marks.stop_label} (step {marks.stop:,})", FG, "-", "stop"))
    return out


def draw_marks(ax: Axes, marks: MarksLike, gid: str) -> None:
    """Vertical lines at the marked steps that lie inside the x range, labelled above the axes
    (never over the data or the validation-minimum star). Labels of nearby steps go on separate
    rows; a label near the right edge ends at its line instead of starting there."""
    lo, hi = ax.get_xlim()
    shown = sorted(m for m in failure_marks(marks) if lo <= m[0] <= hi)
    fig = ax.figure
    if not isinstance(fig, Figure):  # the label widths are measured against the whole page's width
        raise TypeError("charts draw on whole figures, never on subfigures")
    span_pt = fig.get_figwidth() * 72 * 0.82
    rows: list[float] = []  # right end (axes fraction) of the last label on each row
    for step, label, color, style, kind in shown:
        line = ax.axvline(step, color=color, linestyle=style, linewidth=1.6 if kind == "stop" else 1.3)
        line.set_gid(f"{gid}-mark-{kind}")
        frac = (step - lo) / (hi - lo) if hi > lo else 0.5
        width = (len(label) + 1) * _LABEL_PT * 0.58 / span_pt
        right = frac > 1 - width
        start, end = (frac - width, frac) if right else (frac, frac + width)
        row = next((i for i, r in enumerate(rows) if r + 0.01 < start), len(rows))
        rows[row:row + 1] = [end]
        ax.annotate(label, xy=(step, 1.0), xycoords=blended_transform_factory(ax.transData, ax.transAxes),
                    xytext=(-2 if right else 2, 2 + 10 * row), textcoords="offset points", color=color,
                    fontsize=_LABEL_PT, fontweight="bold" if kind == "stop" else "normal",
                    ha="right" if right else "left", va="bottom", annotation_clip=False)


def legend_below(fig: Figure, axes: Axes | Sequence[Axes], layout: Layout, ncol: int | None = None) -> None:
    """One legend for every labelled line of ``axes`` (twin axes included), below the plot,
    where it never covers data."""
    handles, labels = [], []
    for ax in [axes] if isinstance(axes, Axes) else axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", fontsize=7.5,
                   ncol=min(len(labels), ncol or layout.legend_cols))


def finish(fig: Figure, key: str, title: str) -> str:
    """The figure as inline SVG (see :func:`clean_svg`)."""
    FigureCanvasSVG(fig)
    buf = io.StringIO()
    with matplotlib.rc_context({**RC, "svg.hashsalt": f"runlens-{key}"}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return clean_svg(buf.getvalue(), title)


_GROUP_ID = re.compile(r' id="[A-Za-z][\w.]*_\d+"')
_SIZE = re.compile(r'<svg ([^>]*?)width="[\d.]+pt" height="[\d.]+pt"')


def clean_svg(svg: str, title: str) -> str:
    """Inline-ready SVG: no XML prologue or metadata, no fixed size (the viewBox scales it to its
    box), no duplicate group ids across charts, colours bound to the page's theme."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    label = html.escape(title, quote=True)
    svg = _SIZE.sub(lambda m: f'<svg class="chart" role="img" aria-label="{label}" {m.group(1)}', svg, count=1)
    svg = _GROUP_ID.sub("", svg)
    for sentinel, var in _CSS_VARS.items():
        svg = svg.replace(sentinel, var)
    return svg.strip()
