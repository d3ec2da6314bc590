"""A baseline comparison as text, JSON, Markdown or HTML.

Each renderer shows the same three parts: the verdict (findings, most
severe first), the table of checks with their numbers, and notes on what
could not be compared. Nothing is computed here beyond formatting.
"""

from __future__ import annotations

import json
from typing import Any

import jinja2

from runlens.render.audit_cells import number
from runlens.render.escape import html_value, md_cell, md_inline, term_inline


def rows(c: Any) -> list[tuple[str, str, str, str]]:
    """(check, run, baseline, test) for the table of every renderer: the key numbers of both runs
    (the values every command shows), then the checks."""
    out = _key_rows(c)
    for level in (c.loss, c.val_loss):
        if level is not None:
            name = "late loss (median)" if level.metric == "loss" else "late val loss (median)"
            test = (f"{level.relative_change:+.1%}, {level.test} p={level.p_value:.2g}, "
                    f"Cliff's delta {level.effect_size:.2f}, steps {level.first_step:,}-{level.last_step:,}")
            out.append((name, number(level.run_median), number(level.baseline_median), test))
    conv = c.convergence
    if conv is not None:
        ratio = "never" if conv.run_step is None else f"{conv.ratio:.2g}x"
        out.append((f"steps to loss {conv.target_loss:.4g}", _step(conv.run_step),
                    _step(conv.baseline_step), f"{ratio} the baseline's ({conv.fraction:.0%} of its improvement)"))
    grad = (getattr(c, "run_nonfinite_grad_step", None), getattr(c, "baseline_nonfinite_grad_step", None))
    if grad != (None, None):
        out.append(("first NaN/Inf grad norm step", _step(grad[0]), _step(grad[1]), ""))
    if c.spikes is not None:
        out.append(("loss spikes", str(c.spikes.run_count), str(c.spikes.baseline_count),
                    f"binomial p={c.spikes.p_value:.2g}"))
    for g in c.gradient_shifts[:10]:
        out.append((f"grad norm {g.layer}", number(g.run_median), number(g.baseline_median),
                    f"10^{g.log10_ratio:+.1f}"))
    return out


def _key_rows(c: Any) -> list[tuple[str, str, str, str]]:
    r, b = getattr(c, "run_numbers", {}) or {}, getattr(c, "baseline_numbers", {}) or {}

    def at(n: Any, value: str, step: str) -> str:
        return "—" if n.get(value) is None else f"{number(n[value])} @ {n[step]:,}"

    out = [("final loss", at(r, "final_loss", "final_loss_step"), at(b, "final_loss", "final_loss_step"),
            "the last logged training loss")]
    if r.get("val_min") is not None or b.get("val_min") is not None:
        out.append(("best val loss", at(r, "val_min", "val_min_step"), at(b, "val_min", "val_min_step"), ""))
    out.append(("first NaN/Inf loss step", _step(r.get("first_nonfinite_step")),
                _step(b.get("first_nonfinite_step")), ""))
    out.append(("steps recorded", _step(r.get("steps")), _step(b.get("steps")), ""))
    return out


def config_rows(c: Any) -> list[tuple[str, str, str, str]]:
    """(key, change, run, baseline) for every config key that differs; a usual suspect
    (learning rate, batch size, optimizer, precision) is named in the change column."""
    out = []
    for ch in getattr(c, "config_changes", ()):
        kind = f"{ch.kind} ({ch.knob})" if ch.knob else ch.kind
        out.append((ch.key, kind, "—" if ch.kind == "removed" else _value(ch.run_value),
                    "—" if ch.kind == "added" else _value(ch.baseline_value)))
    return out


def _value(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else v
    return text if len(text) <= 80 else text[:79] + "…"


def _step(step: int | None) -> str:
    return "—" if step is None else f"{step:,}"


def verdict_line(c: Any) -> str:
    """``run vs baseline: <verdict>`` on one line (the summary of ``compare -o``)."""
    return f"{term_inline(c.run_name)} vs baseline {term_inline(c.baseline_name)}: {_verdict(c)}"


def _verdict(c: Any) -> str:
    loud = [f for f in c.findings if f.severity != "info"]
    notes = len(c.findings) - len(loud)
    tail = f" ({notes} change{'s' if notes != 1 else ''} noted)" if notes else ""
    if not loud:
        better = any(lv is not None and getattr(lv, "better", False) for lv in (c.loss, c.val_loss))
        return ("better than the baseline, beyond noise" if better
                else "no regression against the baseline") + tail
    return f"{len(loud)} regression{'s' if len(loud) != 1 else ''}, worst: {c.worst}" + tail


_ANSI = {"error": "\033[1;31m", "warning": "\033[33m", "info": "\033[36m"}
_MAX_CONFIG = 6


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + "." if dot else text


def render_compare_text(c: Any, *, color: bool = False, quiet: bool = False, verbose: bool = False) -> str:
    """The comparison for a terminal: ``quiet`` the verdict line alone; ``verbose`` adds each
    finding's evidence and every config key that differs."""
    head = f"{term_inline(c.run_name)} vs baseline {term_inline(c.baseline_name)}"
    if quiet:
        return f"{head}: {_verdict(c)}\n"
    lines = [f"{head}  ({c.shared_steps:,} shared steps)", f"verdict: {_verdict(c)}", ""]
    for f in c.findings:
        mark = f"{f.severity.upper():7}"
        if color:
            mark = f"{_ANSI.get(f.severity, '')}{mark}\033[0m"
        lines.append(f"{mark} {f.code}: {term_inline(f.title)}")
        if verbose:
            lines += [f"        {term_inline(k)}: {term_inline(json.dumps(v, default=str))}"
                      for k, v in f.evidence.items()]
        if f.advice:
            lines.append(f"        try: {term_inline(f.advice if verbose else _first_sentence(f.advice))}")
    if c.findings:
        lines.append("")
    # Layer names in the checks come from the runs: no escape sequences reach the terminal.
    table = [("check", "run", "baseline", "test"), *(tuple(term_inline(x) for x in r) for r in rows(c))]
    widths = [max(len(r[i]) for r in table) for i in range(3)]
    for r in table:
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])
    config = [tuple(term_inline(x) for x in r) for r in config_rows(c)]
    if config:
        # The usual suspects (a knob is named) first; the rest behind -v past a few lines.
        config.sort(key=lambda r: "(" not in r[1])
        shown = config if verbose else config[:_MAX_CONFIG]
        lines += ["", "config diff (run vs baseline):"]
        width = max(len(r[0]) for r in shown)
        lines += [f"  {r[0].ljust(width)}  {r[1]}: {r[3]} -> {r[2]}" for r in shown]
        if len(shown) < len(config):
            lines.append(f"  ... and {len(config) - len(shown)} more keys (-v shows them)")
    else:
        lines += ["", "config: the same in both runs"]
    lines += [f"note: {term_inline(n)}" for n in c.notes]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def render_compare_json(c: Any) -> str:
    return json.dumps(c.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_compare_markdown(c: Any) -> str:
    lines = [f"## {md_inline(c.run_name)} vs baseline {md_inline(c.baseline_name)}", "",
             f"**{md_inline(_verdict(c))}** ({c.shared_steps:,} shared steps)", ""]
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


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ c.run_name }} vs {{ c.baseline_name }}</title>
<style>body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1f2328}
table{border-collapse:collapse}th,td{padding:.3rem .6rem;border-bottom:1px solid #d1d9e0;text-align:left}
.error{color:#a40e26}.warning{color:#7d4e00}.info{color:#0550ae}small{color:#59636e}</style></head><body>
<h1>{{ c.run_name }} <small>vs baseline</small> {{ c.baseline_name }}</h1>
<p><b>{{ verdict }}</b> <small>({{ "{:,}".format(c.shared_steps) }} shared steps; {{ c.run }} vs {{ c.baseline }})</small></p>
<ul>{% for f in c.findings %}<li class="{{ f.severity }}"><b>{{ f.severity }}</b> <code>{{ f.code }}</code>: {{ f.title }}
{% if f.advice %}<br><small>{{ f.advice }}</small>{% endif %}</li>{% endfor %}</ul>
<table><thead><tr><th>check</th><th>run</th><th>baseline</th><th>test</th></tr></thead><tbody>
{% for r in rows %}<tr>{% for x in r %}<td>{{ x }}</td>{% endfor %}</tr>{% endfor %}
</tbody></table>
{% if config %}<h2>Config diff</h2>
<table><thead><tr><th>key</th><th>change</th><th>run</th><th>baseline</th></tr></thead><tbody>
{% for r in config %}<tr>{% for x in r %}<td>{{ x }}</td>{% endfor %}</tr>{% endfor %}
</tbody></table>{% endif %}
{% for n in c.notes %}<p><small>note: {{ n }}</small></p>{% endfor %}
</body></html>
"""
_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, finalize=html_value)


def render_compare_html(c: Any) -> str:
    return _ENV.from_string(_TEMPLATE).render(c=c, rows=rows(c), config=config_rows(c), verdict=_verdict(c))


RENDERERS = {"text": render_compare_text, "json": render_compare_json,
             "md": render_compare_markdown, "html": render_compare_html}
