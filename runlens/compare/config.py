"""The config diff of a comparison, and which changed key can explain a finding.

Both runs' run.json ``config`` objects are flattened (nested keys joined
with dots: ``optimizer.lr``) and compared key by key. A finding is linked
to a changed key when the key is one of the usual suspects for that kind
of regression: the learning rate, the batch size, the optimizer, the
numeric precision (matched on the last part of the key's name).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The last component of a flattened key -> the knob it is.
KNOBS = {
    "learning rate": re.compile(r"^(lr|learning_rate|base_lr|max_lr|peak_lr|init_lr)$", re.I),
    "batch size": re.compile(r"^(batch_size|bs|batch|per_device_train_batch_size|train_batch_size|"
                             r"global_batch_size|micro_batch_size|gradient_accumulation_steps)$", re.I),
    "optimizer": re.compile(r"^(optimizer|optim|opt|optimizer_name|optimizer_type|betas|momentum|"
                            r"weight_decay|eps)$", re.I),
    "precision": re.compile(r"^(precision|dtype|amp|fp16|bf16|mixed_precision|autocast|half|"
                            r"torch_dtype|loss_scale)$", re.I),
}
# Which knobs can explain which comparison finding, most likely first.
SUSPECTS = {
    "baseline_regression_loss": ("learning rate", "batch size", "optimizer", "precision"),
    "baseline_regression_val_loss": ("learning rate", "batch size", "optimizer"),
    "baseline_slower_convergence": ("learning rate", "batch size", "optimizer"),
    "baseline_new_nonfinite": ("learning rate", "precision", "optimizer"),
    "baseline_new_spikes": ("learning rate", "batch size", "optimizer", "precision"),
    "baseline_gradient_shift": ("precision", "learning rate", "optimizer"),
}
_MISSING = object()


@dataclass(frozen=True)
class ConfigChange:
    """One key that differs: ``kind`` is added (only in the run), removed (only in the
    baseline) or changed; ``knob`` names what it is when it is a usual suspect."""

    key: str
    kind: str
    run_value: Any
    baseline_value: Any
    knob: str = ""

    def describe(self) -> str:
        if self.kind == "added":
            return f"{self.key} = {_show(self.run_value)} (not in the baseline)"
        if self.kind == "removed":
            return f"{self.key} removed (baseline {_show(self.baseline_value)})"
        return f"{self.key}: {_show(self.baseline_value)} -> {_show(self.run_value)}"


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """Nested objects as dotted keys; an empty object stays a value of its own."""
    if not isinstance(config, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def config_diff(run_config: Any, baseline_config: Any) -> tuple[ConfigChange, ...]:
    """Every key added, removed or changed, in key order (provenance keys left out)."""
    run, base = flatten(run_config), flatten(baseline_config)
    changes = []
    for key in sorted(set(run) | set(base)):
        if key.startswith(("imported_from.", "import_fields.")):
            continue
        a, b = run.get(key, _MISSING), base.get(key, _MISSING)
        if a is _MISSING:
            changes.append(ConfigChange(key, "removed", None, b, knob_of(key)))
        elif b is _MISSING:
            changes.append(ConfigChange(key, "added", a, None, knob_of(key)))
        elif not _same(a, b):
            changes.append(ConfigChange(key, "changed", a, b, knob_of(key)))
    return tuple(changes)


def knob_of(key: str) -> str:
    last = key.rsplit(".", 1)[-1]
    return next((name for name, pattern in KNOBS.items() if pattern.match(last)), "")


def explaining(code: str, changes: tuple[ConfigChange, ...]) -> tuple[ConfigChange, ...]:
    """The changed keys that can explain a finding ``code``, most likely first."""
    order = SUSPECTS.get(code, ())
    hits = [c for c in changes if c.knob in order]
    return tuple(sorted(hits, key=lambda c: (order.index(c.knob), c.key)))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
