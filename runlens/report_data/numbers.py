"""Key numbers of a run, and findings' evidence as readable items with units.

Everything here is computed once, on the engine side, from the run's
signals (the same reading of the loss the detectors use: a null loss is
missing, not NaN); renderers only format it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class KeyNumber:
    """``label``: ``value`` (a number, text or a (low, high) pair), optionally ``at`` a step."""

    label: str
    value: Any
    at: int | None = None
    unit: str = ""


@dataclass(frozen=True)
class Item:
    """One evidence entry: a readable ``label``, the raw ``key``, its ``value`` and ``unit``;
    ``threshold`` when the value is a detector parameter rather than something observed."""

    key: str
    label: str
    value: Any
    unit: str = ""
    threshold: bool = False


WORDS = {
    "p": "p-value", "lr": "learning rate", "val": "validation", "sd": "standard deviation",
    "ci95": "95% interval", "rho": "ρ", "tau": "τ", "z": "z-score", "log10": "log10",
    "min": "min", "max": "max", "frac": "fraction", "num": "number of", "pct": "percent",
    "ts": "Theil-Sen", "mk": "Mann-Kendall", "nan": "NaN", "nonfinite": "non-finite",
    "grad": "gradient", "norm": "norm", "abs": "absolute", "std": "standard deviation",
}
ACRONYMS = {"mad": "MAD", "oom": "OOM", "cuda": "CUDA", "gpu": "GPU", "cpu": "CPU", "ln": "ln"}


def label_of(key: str) -> str:
    """``min_update_ratio`` -> ``min update ratio``; ``p`` -> ``p-value``; ``val_loss`` ->
    ``validation loss``. The first letter is capitalised."""
    words = [w for w in re.split(r"[_\s]+", str(key)) if w]
    if not words:
        return str(key)
    out = [ACRONYMS.get(w.lower(), WORDS.get(w.lower(), w)) for w in words]
    text = " ".join(out)
    return text[:1].upper() + text[1:]


def unit_of(key: str, value: Any) -> str:
    """The unit a key's name implies (steps, orders of magnitude, seconds, ...), or ``""``."""
    k = str(key).lower()
    if not _is_number(value) and not isinstance(value, (list, tuple)):
        return ""
    if k in ("step", "steps", "length", "window", "points") or k.endswith(("_step", "_steps", "step_range")) \
            or k.startswith(("step_", "steps_")) or k.endswith("_length"):
        return "steps"
    if "decades" in k or k.endswith("_orders") or k.startswith("orders_"):
        return "orders of magnitude"
    if k.endswith(("_seconds", "_s")) or k == "seconds":
        return "s"
    if k.endswith("_bytes"):
        return "bytes"
    if k.endswith(("_relative", "_share", "_fraction", "_frac")) or k.startswith("relative_"):
        return "fraction"
    return ""


def evidence_items(evidence: Mapping[str, Any], params: Mapping[str, Any] | None) -> tuple[Item, ...]:
    """The evidence of a finding, observations first, then the thresholds it was judged by
    (the keys that are parameters of the detector that made it)."""
    params = params or {}
    observed, thresholds = [], []
    for key, value in evidence.items():
        item = Item(str(key), label_of(key), value, unit_of(key, value), str(key) in params)
        (thresholds if item.threshold else observed).append(item)
    return tuple(observed + thresholds)


def key_numbers(signals: Any, run: Any) -> tuple[KeyNumber, ...]:
    """The few numbers a reader looks at first, from the run's signals."""
    rows: list[KeyNumber] = []
    steps = run.steps("scalars")
    if len(steps):
        rows.append(KeyNumber("steps recorded", len(steps), unit=f"(step {steps[0]:,} to {steps[-1]:,})"))
    loss = signals.loss_logged
    if len(loss):
        rows += _extremes("loss", loss.steps, loss.values)
    if signals.first_nonfinite_step is not None:
        rows.append(KeyNumber("first NaN/Inf loss", None, at=signals.first_nonfinite_step))
    for name, val in signals.validation.items():
        finite = np.isfinite(val.values)
        if finite.any():
            best = int(np.nanargmin(np.where(finite, val.values, np.nan)))
            label = "validation loss" if name == "val_loss" else f"validation loss ({name.split('@', 1)[1]})"
            rows.append(KeyNumber(f"best {label}", float(val.values[best]), at=int(val.steps[best])))
            rows.append(KeyNumber(f"final {label}", float(val.values[-1]), at=int(val.steps[-1])))
    lr = signals.lr
    if lr is not None and len(lr):
        rows.append(KeyNumber("learning rate", (float(lr.values.min()), float(lr.values.max())),
                              unit=f"final {float(lr.values[-1]):.4g}"))
    grad = signals.grad_norm
    if grad is not None and np.isfinite(grad.values).any():
        fin = np.isfinite(grad.values)
        at = int(np.argmax(np.where(fin, grad.values, -np.inf)))
        rows.append(KeyNumber("gradient norm (median)", float(np.median(grad.values[fin]))))
        rows.append(KeyNumber("gradient norm (max)", float(grad.values[at]), at=int(grad.steps[at])))
    n_layers = len(run.layer_names())
    if n_layers:
        rows.append(KeyNumber("layers recorded", n_layers))
    rows.append(KeyNumber("duration", duration(run), unit="s"))
    return tuple(rows)


def duration(run: Any) -> float | None:
    """Wall-clock seconds from the first to the last recorded step; None when unknown
    (an imported log without times, or times that do not move)."""
    time = run.column("scalars", "time")
    if time is None or len(time) < 2 or not np.isfinite(time[[0, -1]]).all():
        return None
    seconds = float(time[-1] - time[0])
    config = run.config if isinstance(run.config, Mapping) else {}
    imported = isinstance(config.get("imported_from"), Mapping)
    if seconds <= 0 or (imported and np.unique(time).size < 2):
        return None
    return seconds


def _extremes(label: str, steps: np.ndarray, values: np.ndarray) -> list[KeyNumber]:
    finite = np.isfinite(values)
    if not finite.any():
        return [KeyNumber(label, "never finite")]
    at = int(np.nanargmin(np.where(finite, values, np.nan)))
    return [KeyNumber(f"first {label}", float(values[0]), at=int(steps[0])),
            KeyNumber(f"last {label}", float(values[-1]), at=int(steps[-1])),
            KeyNumber(f"lowest {label}", float(values[at]), at=int(steps[at]))]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
