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

from runlens.summary import KEY_NUMBERS, lowest

__all__ = ["Item", "KeyNumber", "evidence_items", "key_numbers", "label_of", "unit_of"]


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
    # "z_scores" is "z-scores", not "z-score scores".
    text = re.sub(r"z-score (score)(s?)\b", r"z-\1\2", text)
    return text[:1].upper() + text[1:]


def unit_of(key: str, value: Any) -> str:
    """The unit a key's name implies (steps, orders of magnitude, seconds, ...), or ``""``."""
    k = str(key).lower()
    if not _is_number(value) and not isinstance(value, (list, tuple)):
        return ""
    # A step number ("died_at_step": 250) is a position, not an amount: it has no unit.
    if k == "step" or k.endswith("_step"):
        return ""
    if isinstance(value, (list, tuple)) and (k == "steps" or k.endswith("_steps")):
        return ""  # a list of step numbers
    if k in ("steps", "length", "window", "step_range") or k.endswith(("_steps", "_length", "step_range")) \
            or k.startswith(("step_", "steps_")):
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
    observed: list[Item] = []
    thresholds: list[Item] = []
    for key, value in evidence.items():
        item = Item(str(key), label_of(key), value, unit_of(key, value), str(key) in params)
        (thresholds if item.threshold else observed).append(item)
    return tuple(observed + thresholds)


def key_numbers(signals: Any, numbers: Mapping[str, Any], n_layers: int) -> tuple[KeyNumber, ...]:
    """The few numbers a reader looks at first, as labelled rows: the diagnosis's key ``numbers``
    (:func:`runlens.summary.run_numbers`, one definition each), what the signals add (learning
    rate, gradient norm) and ``n_layers``."""
    n = {**dict.fromkeys(KEY_NUMBERS), **numbers}  # a diagnosis built by hand may hold none
    rows: list[KeyNumber] = []
    axis = n.get("axis") or "step"
    if n["steps"]:
        rows.append(KeyNumber(f"{axis}s recorded", n["steps"],
                              unit=f"({axis} {n['first_step']:,} to {n['last_step']:,})"))
    loss = signals.loss_logged
    if len(loss) and n["final_loss"] is not None:  # set whenever a loss was counted (NaN included)
        if n["min_loss"] is None:
            rows.append(KeyNumber("loss", "never finite"))
        else:
            rows += [KeyNumber("first loss", n["first_loss"], at=int(loss.steps[0])),
                     KeyNumber("final loss", n["final_loss"], at=n["final_loss_step"]),
                     KeyNumber("lowest loss", n["min_loss"], at=n["min_loss_step"])]
    if n["first_nonfinite_step"] is not None:
        rows.append(KeyNumber("first NaN/Inf loss", None, at=n["first_nonfinite_step"]))
    rows += _validation_rows(signals, n)
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
    if n_layers:
        rows.append(KeyNumber("layers recorded", n_layers))
    rows.append(KeyNumber("duration", n["duration_s"], unit="s"))
    return tuple(rows)


def _validation_rows(signals: Any, n: Mapping[str, Any]) -> list[KeyNumber]:
    rows = []
    for name, val in signals.validation.items():
        if name == "val_loss":
            if n["val_min"] is not None:
                rows += [KeyNumber("best validation loss", n["val_min"], at=n["val_min_step"]),
                         KeyNumber("final validation loss", n["final_val_loss"], at=n["final_val_step"])]
            continue
        low = lowest(val.steps, val.values)
        if low is not None:
            label = f"validation loss ({name.split('@', 1)[1]})"
            rows += [KeyNumber(f"best {label}", low[1], at=low[0]),
                     KeyNumber(f"final {label}", float(val.values[-1]), at=int(val.steps[-1]))]
    return rows


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
