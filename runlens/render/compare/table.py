"""What every format of a comparison shows: the verdict, the table of checks with their numbers
(the key numbers of both runs first) and the config keys that differ. Nothing is computed here
beyond formatting."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runlens.render.escape import term_inline
from runlens.render.format import cell_number

if TYPE_CHECKING:
    from runlens.compare.model import Comparison


def rows(c: Comparison) -> list[tuple[str, str, str, str]]:
    """(check, run, baseline, test) for the table of every renderer: the key numbers of both runs
    (the values every command shows), then the checks."""
    out = _key_rows(c)
    for level in (c.loss, c.val_loss):
        if level is not None:
            name = "late loss (median)" if level.metric == "loss" else "late val loss (median)"
            test = (f"{level.relative_change:+.1%}, {level.test} p={level.p_value:.2g}, "
                    f"Cliff's delta {level.effect_size:.2f}, steps {level.first_step:,}-{level.last_step:,}")
            out.append((name, cell_number(level.run_median), cell_number(level.baseline_median), test))
    conv = c.convergence
    if conv is not None:
        ratio = "never" if conv.run_step is None else f"{conv.ratio:.2g}x"
        out.append((f"steps to loss {conv.target_loss:.4g}", _step(conv.run_step),
                    _step(conv.baseline_step), f"{ratio} the baseline's ({conv.fraction:.0%} of its improvement)"))
    grad = (c.run_nonfinite_grad_step, c.baseline_nonfinite_grad_step)
    if grad != (None, None):
        out.append(("first NaN/Inf grad norm step", _step(grad[0]), _step(grad[1]), ""))
    if c.spikes is not None:
        out.append(("loss spikes", str(c.spikes.run_count), str(c.spikes.baseline_count),
                    f"binomial p={c.spikes.p_value:.2g}"))
    for g in c.gradient_shifts[:10]:
        out.append((f"grad norm {g.layer}", cell_number(g.run_median), cell_number(g.baseline_median),
                    f"10^{g.log10_ratio:+.1f}"))
    return out


def _key_rows(c: Comparison) -> list[tuple[str, str, str, str]]:
    r, b = c.run_numbers, c.baseline_numbers

    def at(n: Mapping[str, Any], value: str, step: str) -> str:
        return "—" if n.get(value) is None else f"{cell_number(n[value])} @ {n[step]:,}"

    out = [("final loss", at(r, "final_loss", "final_loss_step"), at(b, "final_loss", "final_loss_step"),
            "the last logged training loss")]
    if r.get("val_min") is not None or b.get("val_min") is not None:
        out.append(("best val loss", at(r, "val_min", "val_min_step"), at(b, "val_min", "val_min_step"), ""))
    out.append(("first NaN/Inf loss step", _step(r.get("first_nonfinite_step")),
                _step(b.get("first_nonfinite_step")), ""))
    out.append(("steps recorded", _step(r.get("steps")), _step(b.get("steps")), ""))
    return out


def config_rows(c: Comparison) -> list[tuple[str, str, str, str]]:
    """(key, change, run, baseline) for every config key that differs; a usual suspect
    (learning rate, batch size, optimizer, precision) is named in the change column."""
    out = []
    for ch in c.config_changes:
        kind = f"{ch.kind} ({ch.knob})" if ch.knob else ch.kind
        out.append((ch.key, kind, "—" if ch.kind == "removed" else _value(ch.run_value),
                    "—" if ch.kind == "added" else _value(ch.baseline_value)))
    return out


def _value(v: object) -> str:
    text = json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else v
    return text if len(text) <= 80 else text[:79] + "…"


def _step(step: int | None) -> str:
    return "—" if step is None else f"{step:,}"


def verdict_line(c: Comparison) -> str:
    """``run vs baseline: <verdict>`` on one line (the summary of ``compare -o``)."""
    return f"{term_inline(c.run_name)} vs baseline {term_inline(c.baseline_name)}: {verdict(c)}"


def verdict(c: Comparison) -> str:
    loud = [f for f in c.findings if f.severity != "info"]
    notes = len(c.findings) - len(loud)
    tail = f" ({notes} change{'s' if notes != 1 else ''} noted)" if notes else ""
    if not loud:
        better = any(lv is not None and lv.better for lv in (c.loss, c.val_loss))
        return ("better than the baseline, beyond noise" if better
                else "no regression against the baseline") + tail
    return f"{len(loud)} regression{'s' if len(loud) != 1 else ''}, worst: {c.worst}" + tail
