"""The signals stage: what a run's tables mean, computed once per run, read by every consumer.

Data flows one way: ``io`` (disk -> :class:`~runlens.io.run.Run`) ->
``signals`` (this package) -> detectors and the curve -> Diagnosis ->
render. Nothing downstream reads the raw tables to recompute a series
that is defined here: the training loss (nulls and scaler-skipped
non-finite steps handled one way), the first non-finite step, the
validation series, the global gradient norm, the learning rate and the
per-layer matrices with their ratios.

Get it with :func:`signals_of` (cached on the run) or, in a detector,
``ctx.signals_of(run)``. Parts are computed on first use, so a detector
that needs only the loss never builds a layer matrix.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from runlens.signals.layers import COLUMNS, MAX_ROWS, MIN_MODULES, LayerSignals, ModuleMatrix
from runlens.signals.logits import LogitsReadings, logits_readings
from runlens.signals.loss import LossSignals, loss_signals, skipped_steps
from runlens.signals.series import Series, logged

if TYPE_CHECKING:
    from runlens.io.run import Run

__all__ = ["COLUMNS", "MAX_ROWS", "MIN_MODULES", "LayerSignals", "LogitsReadings", "LossSignals", "ModuleMatrix",
           "Series", "Signals", "signals_of"]

VAL_PREFIX = "val_loss"


class Signals:
    """Derived series of one run; every attribute is computed once, on first use."""

    def __init__(self, run: Run) -> None:
        self.run = run

    @cached_property
    def _loss(self) -> LossSignals:
        return loss_signals(self.run)

    def loss_spikes(self, **params: float) -> list[dict[str, float]]:
        """:func:`~runlens.stats.spikes.rolling_spikes` of :attr:`loss` with ``params``, once per
        parameter set: the curve and ``loss_spikes`` ask for the same (a pass of rolling
        medians over every step)."""
        from runlens.stats.spikes import ROLLING_DEFAULTS, rolling_spikes

        key = tuple(sorted({**ROLLING_DEFAULTS, **params}.items()))
        memo = self.__dict__.setdefault("_spike_memo", {})
        if key not in memo:
            memo[key] = rolling_spikes(self.loss.values, **dict(key))
        return memo[key]

    @property
    def loss(self) -> Series:
        """Training loss by step: finite, before the first non-finite step, nulls and
        scaler-skipped non-finite steps left out."""
        return self._loss.loss

    @property
    def loss_logged(self) -> Series:
        """Every counted training loss by step (non-finite ones too; nulls and
        scaler-skipped non-finite steps left out)."""
        return self._loss.logged

    @property
    def first_nonfinite_step(self) -> int | None:
        """The first step whose (counted) training loss is NaN or +/-Inf; None if none."""
        return self._loss.first_nonfinite_step

    @property
    def first_nonfinite_value(self) -> float | None:
        return self._loss.first_nonfinite_value

    @property
    def nonfinite_loss_count(self) -> int:
        return self._loss.nonfinite_count

    @cached_property
    def skipped_steps(self) -> np.ndarray:
        """Steps a loss scaler skipped (``step_skipped``, else inferred from ``loss_scale``)."""
        return skipped_steps(self.run)

    @cached_property
    def validation(self) -> dict[str, Series]:
        """``val_loss`` and every ``val_loss@<set>`` evals column, nulls dropped, by step
        (non-finite values kept); ``val_loss`` first, then the sets by name."""
        ev = self.run.evals
        if ev is None:
            return {}
        names = [c for c in ev.column_names if c == VAL_PREFIX or c.startswith(VAL_PREFIX + "@")]
        out = {}
        for name in sorted(names, key=lambda c: (c != VAL_PREFIX, c)):
            found = logged(self.run, "evals", name)
            if found is not None and len(found[0]):
                out[name] = found[0]
        return out

    @cached_property
    def lr(self) -> Series | None:
        """``scalars.lr`` where finite and >= 0, by step; None when not logged."""
        found = logged(self.run, "scalars", "lr")
        if found is None:
            return None
        s = found[0]
        ok = np.isfinite(s.values) & (s.values >= 0)
        return Series(s.steps[ok], s.values[ok], s.source) if ok.any() else None

    @cached_property
    def grad_norm(self) -> Series | None:
        """The global gradient norm on the steps the optimizer took: ``scalars.grad_norm``
        (a null is "no gradient", dropped) when it holds a number, else the L2 norm over the
        layers (Inf where a layer is non-finite). Scaler-skipped steps are left out; None when neither exists."""
        found = logged(self.run, "scalars", "grad_norm")
        if found is not None and (~np.isnan(found[0].values)).any():  # an all-NaN column says nothing
            return found[0].without(self.skipped_steps)
        if not self.layers or not self.layers.has("grad_norm"):
            return None
        total = self.layers.total("grad_norm")
        if total is None:
            return None
        ok = ~np.isnan(total)
        if not ok.any():
            return None
        s = Series(self.layers.steps[ok], total[ok], "layers.grad_norm (L2 over layers)")
        return s.without(self.skipped_steps)

    @cached_property
    def logits(self) -> LogitsReadings | None:
        """The recorder's readings of the loss's input (``ce_grad_scale``...); None without them."""
        return logits_readings(self.run)

    @cached_property
    def layers(self) -> LayerSignals:
        """Per-layer matrices (falsy when the run has no layers table)."""
        return LayerSignals(self.run, self.first_nonfinite_step)

    @property
    def layer_names(self) -> tuple[str, ...]:
        """Layer names in depth order: those run.json declares, then any the layers table names."""
        return self.run.layer_names()

    @property
    def declared_layers(self) -> tuple[Mapping[str, Any], ...]:
        """run.json's ``layers`` entries (name, index, kind, numel, shape), in depth order."""
        return self.run.layer_info

    def events(self, kind: str) -> tuple[np.ndarray, tuple[str | None, ...]]:
        """``(steps, layers)`` of the writer's events of ``kind`` (e.g. ``nonfinite_grad``), in table order;
        empty without an events table."""
        ev = self.run.events
        if ev is None or "kind" not in ev.column_names:
            return np.empty(0, dtype=np.int64), ()
        kinds = ev.column("kind").to_pylist()
        rows = [i for i, k in enumerate(kinds) if k == kind]
        steps = self.run.steps("events")[rows] if rows else np.empty(0, dtype=np.int64)
        names = ev.column("layer").to_pylist() if "layer" in ev.column_names else [None] * len(kinds)
        return steps, tuple(names[i] for i in rows)

    def scalar(self, name: str) -> Series | None:
        """Any numeric scalars column, nulls dropped, by step."""
        found = logged(self.run, "scalars", name)
        return None if found is None else found[0]


def signals_of(run: Run) -> Signals:
    """The run's :class:`Signals`, computed once and cached on the run."""
    cache = run._cache  # noqa: SLF001 - the run's own memo, which exists for this
    if "signals" not in cache:
        cache["signals"] = Signals(run)
    return cache["signals"]
