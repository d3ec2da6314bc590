"""A comparison as GitHub Markdown (a PR comment)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from runlens.render.compare.table import config_rows, rows, verdict
from runlens.render.escape import md_cell, md_inline

if TYPE_CHECKING:
    from runlens.compare.model import Comparison


def render_compare_markdown(c: Comparison) -> str:
    lines = [f"## {md_inline(c.run_name)} vs baseline {md_inline(c.baseline_name)}", "",
             f"**{md_inline(verdict(c))}** ({c.shared_steps:,} shared steps)", ""]
    for f in c.findings:
        lines.append(f"- **{f.severity}** `{f.code}`: {md_inline(f.title)}")
    if c.findings:
        lines.append("")
    lines += ["| check | run | baseline | test |", "|---|---:|---:|---|"]
    lines += ["| " + " | ".join(md_cell(x) for x in r) + " |" for r in rows(c)]
    config = config_rows(c)
    if config:
        lines += ["", "**Config diff**", "", "| key | change | run | baseline |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(md_cell(x) for x in r) + " |" for r in config]
    if c.notes:
        lines += [""] + [f"- note: {md_inline(n)}" for n in c.notes]
    return "\n".join(lines) + "\n"
