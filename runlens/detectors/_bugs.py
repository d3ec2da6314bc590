"""Shared readings of the training-loop-bug detectors (issue 21).

Each bug detector reads a few things the others read too: a config value
under one of several spellings, the recorder's run.json lists, the number of
steps in an epoch, the training loss around an evaluation, an accuracy
column. They are here once, so every detector reads them the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

if TYPE_CHECKING:
    from runlens.io.run import Run
    from runlens.signals import Series

ACCURACY_COLUMNS = ("accuracy", "acc", "train_acc", "train_accuracy")
VAL_ACCURACY_COLUMNS = ("val_accuracy", "val_acc")
ACCUMULATION_KEYS = ("gradient_accumulation_steps", "accumulate_grad_batches", "accum_steps",
                     "accumulation_steps", "grad_accum_steps")
CLIP_KEYS = ("max_grad_norm", "clip_grad_norm", "gradient_clip_val", "clip_norm", "grad_clip", "clip")
DROPOUT_KEYS = ("dropout", "dropout_rate", "hidden_dropout_prob", "attention_dropout", "p_dropout", "drop_rate")
STEPS_PER_EPOCH_KEYS = ("steps_per_epoch", "num_batches", "batches_per_epoch", "iters_per_epoch")


def config_number(config: Mapping[str, Any], keys: Iterable[str]) -> tuple[float | None, str | None]:
    """The first positive finite number the config holds under one of ``keys`` (one level deep too)."""
    keys = tuple(keys)
    for key in keys:
        v = config.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v > 0:
            return float(v), f"config.{key}"
    for name, sub in config.items():
        if isinstance(sub, Mapping):
            for key in keys:
                v = sub.get(key)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) and v > 0:
                    return float(v), f"config.{name}.{key}"
    return None, None


def name_list(run: Run, key: str) -> list[str] | None:
    """A run.json list of parameter names the recorder wrote (None when the key is absent or malformed)."""
    v = run.meta.get(key)
    if not isinstance(v, list):
        return None
    return [str(x) for x in v if isinstance(x, str)]


def trainable(run: Run) -> dict[str, bool]:
    """Per run.json layer name: whether it is trainable (run.json ``trainable``, True when unsaid)."""
    return {e["name"]: e.get("trainable") is not False for e in run.layer_info}


@dataclass(frozen=True)
class Untrained:
    """What run.json says of the parameters the optimizer does not train: those outside every
    param group (``params_outside_optimizer``), those without a gradient (``params_without_grad``),
    each None when the recorder did not write it, and per layer whether it is ``trainable``."""

    outside_optimizer: list[str] | None
    without_grad: list[str] | None
    trainable: dict[str, bool]

    def names(self) -> set[str]:
        """Every parameter that keeps its initialization: left out, without a gradient or frozen."""
        return ({*(self.outside_optimizer or ()), *(self.without_grad or ())}
                | {n for n, t in self.trainable.items() if not t})


def untrained(run: Run) -> Untrained:
    """run.json's lists of untrained parameters, read one way for every detector that needs them."""
    return Untrained(name_list(run, "params_outside_optimizer"), name_list(run, "params_without_grad"),
                     trainable(run))


def steps_per_epoch(run: Run) -> tuple[int | None, str | None]:
    """Optimizer steps in one epoch: from the ``epoch`` column (the median gap between the first
    logged steps of consecutive epochs), else from the config."""
    epoch = run.column("scalars", "epoch")
    if epoch is not None:
        steps = run.steps("scalars")
        ok = np.isfinite(epoch)
        e, s = epoch[ok], steps[ok]
        if e.size and np.all(e == np.round(e)):  # a fractional epoch (0.01, 0.02...) counts progress, not epochs
            starts = s[np.flatnonzero(np.r_[True, np.diff(e) != 0])]
            if starts.size >= 3:
                gap = int(np.median(np.diff(starts)))
                if gap >= 2:
                    return gap, "scalars.epoch"
    v, src = config_number(run.config, STEPS_PER_EPOCH_KEYS)
    if v is not None and v >= 2:
        return int(v), src
    return None, None


def scalar_column(run: Run, names: Iterable[str], table: str = "scalars", *, min_points: int = 3,
                  any_case: bool = False) -> tuple[np.ndarray, np.ndarray, str] | None:
    """(steps, values, column) of the first of ``names`` the table holds with ``min_points`` finite
    values or more; ``any_case``: a name matches in any case (a console log keeps ``Train_acc`` as printed)."""
    t = getattr(run, table, None) if any_case else None
    held = {c.lower(): c for c in t.column_names} if t is not None else {}
    for name in names:
        v = run.column(table, held.get(name.lower(), name))
        if v is not None:
            ok = np.isfinite(v)
            if ok.sum() >= min_points:
                return run.steps(table)[ok], v[ok], f"{table}.{name}"
    return None


def fractions(*values: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """``values`` as fractions: unchanged when all lie in [0, 1], divided by 100 when all are
    percentages (some above 1, none above 100); None when out of range or on mixed scales."""
    if min(float(v.min()) for v in values) < 0 or max(float(v.max()) for v in values) > 100:
        return None
    if max(float(v.max()) for v in values) <= 1:
        return values
    if min(float(v.max()) for v in values) <= 1:
        return None  # one a fraction and the other a percentage
    return tuple(v / 100 for v in values)


def train_loss_at(loss: Series, at: np.ndarray) -> np.ndarray:
    """The median training loss over the steps since the previous evaluation, for each step of ``at``
    (NaN where no training step was logged in that window).

    The loss is sorted by step once and each window is a slice found by bisection, so a
    million-step loss with a thousand evaluations is not scanned a thousand times."""
    at = np.asarray(at)
    order = np.argsort(loss.steps, kind="stable")
    steps, values = loss.steps[order], loss.values[order]
    # "nearest earlier" is the latest logged of the steps up to s, as the log was written
    latest = np.maximum.accumulate(order) if len(order) else order
    out = np.full(len(at), np.nan)
    hi = np.asarray(np.searchsorted(steps, at, side="right"))
    lo = np.asarray(np.searchsorted(steps, np.r_[-np.inf, at[:-1]], side="right")) if len(at) else hi
    for i in range(len(at)):
        if lo[i] < hi[i]:
            out[i] = float(np.median(values[lo[i]:hi[i]]))
        elif hi[i] > 0:  # sparse logging: the nearest earlier training loss
            out[i] = loss.values[latest[hi[i] - 1]]
    return out


def sign_p(successes: int, n: int, p0: float = 0.5) -> float:
    """One-sided binomial p-value of ``successes`` or more out of ``n`` under probability ``p0``."""
    if n == 0:
        return 1.0
    return float(stats.binomtest(successes, n, p0, alternative="greater").pvalue)


def decades(x: float) -> float:
    return float(np.log10(x)) if x > 0 and np.isfinite(x) else float("nan")
