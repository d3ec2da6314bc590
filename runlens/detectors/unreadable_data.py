"""The ``unreadable_data`` detector: a part of the run could not be read, so its data is missing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from runlens.detectors._base import Context, Detector, Needs, register
from runlens.diagnosis import Finding

if TYPE_CHECKING:
    from runlens.io.run import Run

#: The loader's lines for a part it left out (``runlens.io.loader``): "skipped <table>/<part>: <why>".
_SKIPPED = re.compile(r"^skipped (?P<path>(?P<table>scalars|evals|layers|events)/\S*): (?P<why>.+)$")


def skipped_parts(warnings: Iterable[str]) -> list[dict[str, str]]:
    """``{"table", "path", "why"}`` for each part (or table folder) the loader could not use."""
    out = []
    for line in warnings:
        m = _SKIPPED.match(line)
        if m:
            out.append({"table": m["table"], "path": m["path"].rstrip(":"), "why": m["why"]})
    return out


@register
class UnreadableData(Detector):
    """Some of the run's data could not be read (a truncated, empty or corrupt part).

    What it detects:
        Parts of the run's tables (``scalars``, ``evals``, ``layers``,
        ``events``) that the loader had to leave out: truncated or zero-byte
        Parquet files, parts without the required columns, with a column
        twice, or a table folder that cannot be listed. The evidence lists
        them per table (``parts``) and says which tables lost data.

    Why it matters:
        Every verdict is made on what could be read: a truncated scalars
        part can hide the steps where the loss went wrong, or leave no
        training step at all, and the analysis would otherwise call the
        remainder healthy. A part is usually truncated because the writer
        was killed mid-write (out of memory, a preempted job, a full disk)
        or because the folder was copied while the run was still writing.

    How it decides:
        Reads the loader's warnings (``runlens.io.loader`` leaves a part
        out with a line "skipped <table>/<part>: <why>"; loading never
        fails because of a part). Any such part fires. Severity error:
        the verdicts of this analysis are made on incomplete data.

    What to try:
        Copy the run again once the writer has closed it (``status`` in
        run.json is no longer ``running``); check the disk of the machine
        that wrote it (space, quota); re-run ``runlens validate`` on the
        folder to see every problem; if the part is lost, the steps it held
        are lost too: analyse what remains knowing that.

    Parameters:
        None.
    """

    code = "unreadable_data"
    severity = "error"
    title = "Part of the run unreadable"
    needs = Needs()

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        parts = skipped_parts(run.warnings)
        if not parts:
            return []
        tables = sorted({p["table"] for p in parts})
        empty = [t for t in tables if not run.has(t) or getattr(run, t).num_rows == 0]
        lost = (f"; nothing of {', '.join(empty)} could be read" if empty else "")
        title = (f"{len(parts)} part(s) of the run could not be read ({', '.join(tables)}): "
                 f"{parts[0]['path']}: {parts[0]['why']}{lost}")
        return [self.finding(title, evidence={"parts": parts, "tables": tables, "tables_empty": empty,
                                              "n_parts": len(parts)})]
