"""The report's charts: matplotlib (Agg, no display) drawn to inline SVG.

Every chart is built from a :class:`~runlens.diagnosis.Diagnosis` and its run;
nothing here decides anything about the run, it only draws what the tables
hold and marks where the findings point.

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
from matplotlib.ticker import FuncFormatter, LogFormatter
from matplotlib.transforms import blended_transform_factory

from runlens.render.chart_marks import Marks
from runlens.render.downsample import DEFAULT_BUCKETS, downsample, reduce_rows

# Sentinel colours (never used for data) replaced by CSS variables in the SVG.
_FG, _GRID, _MUTED = "#010203", "#020304", "#030405"
_CSS_VARS = {_FG: "var(--chart-fg)", _GRID: "var(--chart-grid)", _MUTED: "var(--chart-muted)"}
TRAIN, VAL, LR_C, GRAD_C = "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"
BAD_C, MARK_C, CRASH_C, DEAD_C = "#d62728", "#e377c2", "#7f7f7f", "#3b3b3b"
HEAT_ROWS, HEAT_COLS, MAX_WEIGHT_LINES = 160, 480, 8

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
    """Every chart the run has data for, in reading order."""
    run = diagnosis.run
    marks = Marks.of(diagnosis)
    with matplotlib.rc_context(_RC):  # tick labels read rcParams at draw time
        charts: list[Chart | None] = [
            *_loss_charts(run, marks),
            _line_chart(run, "lr", "learning rate", "Learning rate", LR_C, marks, log=False),
            _line_chart(run, "grad_norm", "global grad norm", "Global gradient norm", GRAD_C, marks, log=True),
            _heatmap(run, marks, "grad_heatmap", "Gradient norm by depth and step", "grad norm",
                     _layer_values(run, "grad_norm"),
                     "Vanishing gradients show as dark rows near depth 0, explosions as a bright band."),
            _heatmap(run, marks, "update_ratio", "Update-to-weight ratio by depth and step", "update / weight",
                     _update_ratio(run),
                     "Around 1e-3 is typical; far below means the layer barely learns, far above that it thrashes."),
            _weight_norms(run, diagnosis),
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
def _loss_charts(run: Any, marks: Marks) -> tuple[Chart | None, Chart | None]:
    """The loss chart (``loss``) and the same on the other y scale
    (``loss_alt``). Log comes first when the finite loss spans more than
    three decades: on a linear axis a blow-up flattens everything before it."""
    loss = run.column("scalars", "loss")
    finite = loss[np.isfinite(loss)] if loss is not None else np.empty(0)
    log_first = bool(len(finite)) and finite.min() > 0 and finite.max() / finite.min() > 1e3
    first = _loss_chart(run, marks, log=log_first, key="loss")
    return first, _loss_chart(run, marks, log=not log_first, key="loss_alt")


def _loss_chart(run: Any, marks: Marks, *, log: bool, key: str) -> Chart | None:
    loss = run.column("scalars", "loss")
    if loss is None or not len(loss):
        return None
    steps = run.steps("scalars")
    finite = loss[np.isfinite(loss)]
    if log and (not len(finite) or finite.min() <= 0):
        return None
    fig, ax = _figure()
    x, y = downsample(steps, loss, DEFAULT_BUCKETS)
    ax.plot(x, np.where(np.isfinite(y), y, np.nan), color=TRAIN, linewidth=0.9, label="training loss")
    _nonfinite_ticks(ax, x, y)
    if marks.spikes:
        at = np.searchsorted(steps, marks.spikes).clip(0, len(steps) - 1)
        ax.plot(steps[at], loss[at], "v", color=MARK_C, markersize=5, label="spike")
    val = run.column("evals", "val_loss")
    if val is not None and len(val):
        vsteps = run.steps("evals")
        vx, vy = downsample(vsteps, val, DEFAULT_BUCKETS)
        ax.plot(vx, np.where(np.isfinite(vy), vy, np.nan), color=VAL, linewidth=1.2,
                marker="o" if len(vx) <= 60 else None, markersize=3, label="validation loss")
        if np.isfinite(val).any():
            best = int(np.nanargmin(np.where(np.isfinite(val), val, np.nan)))
            ax.plot([vsteps[best]], [val[best]], "*", color=VAL, markersize=11,
                    markeredgecolor=_FG, markeredgewidth=0.5, label=f"val minimum (step {vsteps[best]:,})")
    _vline(ax, marks.first_nan, f"first NaN/Inf (step {marks.first_nan:,})" if marks.first_nan is not None else "", BAD_C)
    _vline(ax, marks.stop, marks.stop_label, CRASH_C, ":", top=False)
    if log:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (log)" if log else "loss")
    ax.legend(loc="best", fontsize=7.5)
    title = "Loss (log scale)" if log else "Loss (linear scale)"
    caption = "Training loss (min/max per bucket, so spikes stay visible) and validation loss."
    return _finish(fig, key, title, caption)


def _line_chart(run: Any, column: str, label: str, title: str, color: str, marks: Marks, *, log: bool) -> Chart | None:
    values = run.column("scalars", column)
    if values is None or not len(values) or not np.isfinite(values).any():
        return None
    steps = run.steps("scalars")
    fig, ax = _figure(height=2.2)
    x, y = downsample(steps, values, DEFAULT_BUCKETS)
    ax.plot(x, np.where(np.isfinite(y), y, np.nan), color=color, linewidth=0.9, label=label)
    _nonfinite_ticks(ax, x, y)
    positive = values[np.isfinite(values)]
    if log and positive.min() > 0 and positive.max() / positive.min() > 20:
        ax.set_yscale("log")
        _log_axis(ax.yaxis)
    if column == "grad_norm":
        at: dict[int, list[str]] = {}
        for code in ("exploding_gradients", "nonfinite_gradient"):
            if code in marks.finding_steps:
                at.setdefault(marks.finding_steps[code], []).append(code)
        for step, codes in sorted(at.items()):
            _vline(ax, step, f"{', '.join(codes)} (step {step:,})", BAD_C)
    _vline(ax, marks.stop, marks.stop_label, CRASH_C, ":", top=False)
    ax.set_xlabel("step")
    ax.set_ylabel(label)
    return _finish(fig, column, title, f"{title} per recorded step (min/max per bucket).")


def _weight_norms(run: Any, diagnosis: Any) -> Chart | None:
    matrix = run.layer_matrix("weight_norm")
    if matrix is None or not len(matrix.layers):
        return None
    flagged = [n for f in diagnosis.findings if f.code == "weight_norm_growth" for n in f.layers]
    chosen = _pick_layers(matrix.layers, flagged)
    fig, ax = _figure(height=2.6)
    for j in chosen:
        col = matrix.values[:, j]
        keep = matrix.present[:, j]
        if not keep.any():
            continue
        x, y = downsample(matrix.steps[keep], col[keep], DEFAULT_BUCKETS // 2)
        ax.plot(x, np.where(np.isfinite(y), y, np.nan), linewidth=0.9, label=_short(matrix.layers[j]))
    ax.set_xlabel("step")
    ax.set_ylabel("weight norm")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    shown = f"{len(chosen)} of {len(matrix.layers):,} layers" if len(chosen) < len(matrix.layers) else "every layer"
    return _finish(fig, "weight_norm", "Weight norms", f"L2 norm of the weights ({shown}: first, last, evenly spaced by depth and any flagged).")


def _pick_layers(layers: tuple[str, ...], flagged: list[str]) -> list[int]:
    if len(layers) <= MAX_WEIGHT_LINES:
        return list(range(len(layers)))
    index = {n: j for j, n in enumerate(layers)}
    picks = [index[n] for n in flagged if n in index][: MAX_WEIGHT_LINES // 2]
    spread = np.linspace(0, len(layers) - 1, MAX_WEIGHT_LINES - len(picks)).round().astype(int)
    return sorted(set(picks) | set(int(j) for j in spread))


def _short(name: str, limit: int = 40) -> str:
    name = " ".join(str(name).split())
    return name if len(name) <= limit else name[: limit - 1] + "…"


# -- heatmaps ---------------------------------------------------------------
def _layer_values(run: Any, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(steps, steps x layers values, recorded mask) for a per-layer column."""
    matrix = run.layer_matrix(column)
    if matrix is None or not len(matrix.layers):
        return None
    return matrix.steps, matrix.values, matrix.present


def _update_ratio(run: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    upd, wn = run.layer_matrix("update_norm"), run.layer_matrix("weight_norm")
    if upd is None or wn is None or upd.values.shape != wn.values.shape:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = upd.values / wn.values
    return upd.steps, ratio, upd.present & wn.present


def _heatmap(run: Any, marks: Marks, key: str, title: str, unit: str,
             data: tuple[np.ndarray, np.ndarray, np.ndarray] | None, hint: str) -> Chart | None:
    if data is None:
        return None
    steps, values, present = data
    if not present.any():
        return None
    bad = present & ~np.isfinite(values)
    zero = present & (values == 0)
    shown = np.where(present & np.isfinite(values) & (values > 0), values, np.nan)
    shown = np.where(zero, 0.0, shown)
    # Reduce steps (rows), then layers (transpose): each keeps its maximum.
    shown, bad, _ = reduce_rows(shown, HEAT_COLS, bad)
    shown_t, bad_t, layer_starts = reduce_rows(shown.T, HEAT_ROWS, bad.T)
    positive = shown_t[np.isfinite(shown_t) & (shown_t > 0)]
    if not len(positive):
        return None
    norm = LogNorm(vmin=float(positive.min()), vmax=float(max(positive.max(), positive.min() * 10)))
    cmap = matplotlib.colormaps["viridis"]
    rgba = cmap(norm(np.where(shown_t > 0, shown_t, np.nan)))
    rgba[~np.isfinite(shown_t)] = (0, 0, 0, 0)
    rgba[np.isfinite(shown_t) & (shown_t == 0)] = matplotlib.colors.to_rgba(DEAD_C)
    rgba[bad_t] = matplotlib.colors.to_rgba(BAD_C)
    fig, ax = _figure(height=2.8)
    n_layers = values.shape[1]
    x0, x1 = float(steps[0]), float(steps[-1]) if len(steps) > 1 else float(steps[0]) + 1
    ax.imshow(rgba, aspect="auto", origin="lower", interpolation="none",
              extent=(x0, x1, -0.5, n_layers - 0.5))
    ax.grid(False)
    _flag_layers(ax, marks, run.layer_names())
    ax.set_xlabel("step")
    ax.set_ylabel("layer depth (0 = input)")
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01, fraction=0.04)
    bar.set_label(unit)
    _log_axis(bar.ax.yaxis)
    grouped = f", {n_layers:,} layers in {len(layer_starts)} rows (max per row)" if len(layer_starts) < n_layers else ""
    caption = (f"Log colour scale{grouped}; red: NaN/Inf, dark grey: exactly zero, blank: not recorded; "
               f"arrows: layers a finding names. {hint}")
    return _finish(fig, key, title, caption)


_FLAG_COLORS = ("#e377c2", "#ff7f0e", "#17becf")


def _flag_layers(ax: Any, marks: Marks, names: tuple[str, ...]) -> None:
    """Arrows just inside the left edge of a heatmap pointing at the rows
    (layers) that findings named, one colour per finding code."""
    index = {n: j for j, n in enumerate(names)}
    trans = blended_transform_factory(ax.transAxes, ax.transData)
    drawn = 0
    for code, layers in marks.layers:
        rows = sorted({index[n] for n in layers if n in index})
        if not rows or drawn == len(_FLAG_COLORS):
            continue
        ax.plot(np.full(len(rows), 0.008), rows, ">", color=_FLAG_COLORS[drawn], markersize=6,
                markeredgecolor="white", markeredgewidth=0.6, transform=trans, clip_on=False, label=f"{code} ({len(rows):,} layer{'s' if len(rows) > 1 else ''})")
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
