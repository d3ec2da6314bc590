"""The Markdown report: GitHub-flavoured, for a PR comment or a job summary.

GitHub rejects comments over 65,536 characters, so the report has a hard
cap (60,000 by default) that holds for any run, a 5,000-layer model
included. The report is built from sections of known importance; when it
is too long the least severe sections go first, and if the rest still does
not fit it is cut on a line boundary with any open ``<details>`` or code
fence closed. The verdict is never dropped, and a note says what was left
out. A hidden marker (``<!-- runlens:report run=<run_id> -->``) lets a CI
job find its earlier comment and update it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from runlens.render.format import DRAWABLE
from runlens.render.report.view import FindingView, ReportView, build_view, fmt
from runlens.render.templates import get_template

if TYPE_CHECKING:
    from runlens.render.contracts import ReportDataLike, SparkLike

MAX_CHARS = 60_000
GLYPHS = "▁▂▃▄▅▆▇█"
NONFINITE_GLYPH = "×"
ICONS = {"error": "🔴", "warning": "🟠", "info": "🔵", "none": "✅"}
_KEEP = 1000  # sections ranked at or above this are never dropped, only cut
_MIN_CHARS = 2_000


@dataclass(frozen=True)
class _Section:
    title: str
    rank: int
    text: str


def render_markdown(data: ReportDataLike, max_chars: int = MAX_CHARS, *, docs_base: str = "") -> str:
    """The Markdown report of one run's :class:`~runlens.report_data.ReportData`, at most
    ``max_chars`` characters.

    ``docs_base`` prefixes the links to the detector reference
    (``docs/detectors.md#<code>``), e.g. a repository URL for PR comments.
    """
    if max_chars < _MIN_CHARS:
        raise ValueError(f"max_chars must be >= {_MIN_CHARS}, got {max_chars}")
    view = build_view(data, docs_base=docs_base)
    status = data.diagnosis.status_text or view.status  # never a bare "finished" on a failure
    return _fit(_sections(view, docs_base, status), max_chars, _macros())


def marker(run_id: str) -> str:
    """The hidden marker's run id: characters that cannot end the comment."""
    return re.sub(r"[^A-Za-z0-9._:-]", "_", run_id)[:128] or "unknown"


# -- sections ---------------------------------------------------------------
def _sections(v: ReportView, docs_base: str, status: str = "") -> list[_Section]:
    m = _macros()
    out = [_Section("verdict", _KEEP + 2, m.header(v, marker(v.run_id), ICONS, status or v.status))]
    if v.findings:
        out.append(_Section("findings table", _KEEP + 1, m.findings_table(v, ICONS)))
    else:
        out.append(_Section("findings", _KEEP + 1, m.no_findings()))
    if v.crash:
        out.append(_Section("crash", 900, m.crash(v.crash)))
    if v.key_numbers:
        out.append(_Section("key numbers", 800, m.key_numbers(v)))
    trend_rows = _trend_rows(v)
    if trend_rows:
        out.append(_Section("trends", 550, m.trends(trend_rows)))
    if v.crash and v.crash["traceback"]:
        out.append(_Section("traceback", 700, m.traceback(v.crash)))
    rank = {"error": 600, "warning": 500, "info": 400}
    for f in v.findings:
        out.append(_Section(f"details of {f.severity} findings", rank.get(f.severity, 400),
                            m.finding_details(f, ICONS, docs_base)))
    if v.warning_count:
        out.append(_Section("warnings", 350, m.warnings(v)))
    if v.outcomes:
        rows = tuple((code, f"{state}: {reason}") for code, state, reason in v.outcomes)
        out.append(_Section("detectors that did not run", 300, m.kv_details("Detectors that did not run", rows)))
    out.append(_Section("run facts", 250, m.kv_details("Run", v.run_facts)))
    if v.config:
        out.append(_Section("config", 240, m.kv_details("Config", v.config)))
    if v.environment:
        out.append(_Section("environment", 230, m.kv_details("Environment", v.environment)))
    if v.attempts:
        out.append(_Section("attempts", 220, m.attempts(v.attempts)))
    if v.layers:
        out.append(_Section("layer list", 100, m.layers(v.layers[:_MAX_MD_LAYERS], v.layers_total)))
    return out


_MAX_MD_LAYERS = 500


def _fit(sections: list[_Section], max_chars: int, m: _Macros) -> str:
    """Join ``sections``, dropping the lowest-ranked (latest first) until the
    text fits; then cut what still does not fit on a line boundary."""
    kept = [(s, len(s.text.strip("\n"))) for s in sections]
    dropped: list[str] = []
    while True:
        size = sum(n for _, n in kept) + 2 * (len(kept) - 1) + 1  # what _join makes
        note = _note(dropped, max_chars, m)
        if size + len(note) <= max_chars:
            return _join([s for s, _ in kept]) + note
        droppable = [i for i, (s, _) in enumerate(kept) if s.rank < _KEEP]
        if not droppable:
            break
        victim = min(droppable, key=lambda i: (kept[i][0].rank, -i))
        dropped.append(kept.pop(victim)[0].title)
    dropped.append("the end of the findings table")
    note = _note(dropped, max_chars, m)
    return _cut(_join([s for s, _ in kept]), max_chars - len(note)) + note


def _join(sections: list[_Section]) -> str:
    return "\n\n".join(s.text.strip("\n") for s in sections) + "\n"


def _note(dropped: list[str], max_chars: int, m: _Macros) -> str:
    if not dropped:
        return ""
    counts = Counter(dropped)
    titles = [t if counts[t] == 1 else f"{t} ({counts[t]})" for t in dict.fromkeys(dropped)]
    return "\n" + m.left_out(titles, max_chars).strip("\n") + "\n"


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _cut(text: str, budget: int) -> str:
    """The longest prefix of whole lines that, with its open ``<details>``
    and code fence closed, fits in ``budget`` characters."""
    kept: list[str] = []
    size = 0
    for line in text.split("\n"):
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    while kept:
        closers = _closers(kept)
        if size + len(closers) <= budget:
            return "\n".join(kept) + closers + "\n"
        size -= len(kept.pop()) + 1
    return ""


def _closers(lines: list[str]) -> str:
    """What closes the fence and ``<details>`` blocks left open by ``lines``."""
    fence: str | None = None
    depth = 0
    for line in lines:
        found = _FENCE.match(line)
        if fence is not None:
            if found and found.group(1)[0] == fence[0] and len(found.group(1)) >= len(fence) \
                    and not line.strip()[len(found.group(1)):]:
                fence = None
            continue
        if found:
            fence = found.group(1)
            continue
        depth += line.count("<details") - line.count("</details>")
    closing = f"\n{fence}" if fence else ""
    return closing + "\n\n</details>" * max(depth, 0)


# -- sparklines ---------------------------------------------------------------
def sparkline(spark: SparkLike) -> str:
    """A :class:`runlens.report_data.Spark` as a row of block glyphs, one per bucket (its
    maximum, so a spike shows); ``×`` where a bucket held NaN/Inf (or beyond ``DRAWABLE``)."""
    peaks = np.asarray(spark.peaks, dtype=np.float64)
    if not len(peaks):
        return ""
    finite = np.isfinite(peaks) & (np.abs(peaks) <= DRAWABLE)
    if not finite.any():
        return NONFINITE_GLYPH * len(peaks)
    scaled = np.where(finite, peaks, 0.0)
    lo, hi = peaks[finite].min(), peaks[finite].max()
    if spark.log:
        scaled, lo, hi = np.log10(np.where(finite, peaks, lo)), np.log10(lo), np.log10(hi)
    span = hi - lo
    level = np.zeros(len(peaks), dtype=int) if span <= 0 else \
        np.clip(((scaled - lo) / span * (len(GLYPHS) - 1)).round(), 0, len(GLYPHS) - 1).astype(int)
    return "".join(GLYPHS[lv] if ok else NONFINITE_GLYPH for lv, ok in zip(level, finite, strict=True))


def _trend_rows(v: ReportView) -> tuple[tuple[str, str, str, str, str], ...]:
    rows = []
    for s in v.sparks:
        low = f"{fmt(s.low)} / {fmt(s.high)}" if s.low is not None else "never finite"
        rows.append((s.label, sparkline(s), fmt(s.first), fmt(s.last), low))
    return tuple(rows)


# -- template plumbing ----------------------------------------------------------
class _Macros(Protocol):
    """The macros of ``report.md.j2``, one per section, as Jinja exposes them on the template's module."""

    def header(self, v: ReportView, marker: str, icons: Mapping[str, str], status: str) -> str: ...
    def findings_table(self, v: ReportView, icons: Mapping[str, str]) -> str: ...
    def no_findings(self) -> str: ...
    def crash(self, c: Mapping[str, str]) -> str: ...
    def traceback(self, c: Mapping[str, str]) -> str: ...
    def key_numbers(self, v: ReportView) -> str: ...
    def trends(self, rows: tuple[tuple[str, str, str, str, str], ...]) -> str: ...
    def finding_details(self, f: FindingView, icons: Mapping[str, str], docs_prefix: str) -> str: ...
    def warnings(self, v: ReportView) -> str: ...
    def kv_details(self, title: str, rows: tuple[tuple[str, str], ...]) -> str: ...
    def attempts(self, rows: tuple[tuple[str, str, str, str], ...]) -> str: ...
    def layers(self, rows: tuple[tuple[str, str, str, str], ...], total: int) -> str: ...
    def left_out(self, titles: list[str], max_chars: int) -> str: ...


@lru_cache(maxsize=1)
def _macros() -> _Macros:
    # Jinja makes a template's macros attributes of its module at run time; the Protocol names them.
    return cast("_Macros", get_template("report.md.j2").module)
