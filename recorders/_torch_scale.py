"""The loss scale a step's backward used, and whether the scaler skipped the step.

Public ``GradScaler`` API only (``is_enabled``, ``get_scale``,
``get_backoff_factor``, ``get_growth_factor``, ``get_growth_interval``):
the scale changes only in ``scaler.update()``, so the scale this step's
backward used is the one the previous step's update left, and the update
lowered it exactly when it found non-finite gradients and skipped the step.
``get_scale()`` is read in ``rec.step``, after the step's one host transfer
has already waited for the device, so it costs no extra wait.

The first recorded step has no previous update to look at. When the
recorder was given the scaler up front (``Recorder(..., scaler=s)``) the
scale is read then; otherwise it is inferred: a step whose gradients were
non-finite was skipped and backed the scale off; a fresh scaler grows only
after ``growth_interval`` clean steps, so a clean first step used the scale
as it is now unless ``growth_interval`` is 1.
"""

from __future__ import annotations

from typing import Any


def enabled(scaler: Any) -> bool:
    return scaler is not None and bool(scaler.is_enabled())


class ScaleTracker:
    """Remembers the scale after each update; one call per recorded step."""

    def __init__(self) -> None:
        self.after_update: float | None = None

    def start(self, scaler: Any) -> None:
        """Read the scale before the first backward (a scaler handed to the recorder up front)."""
        if enabled(scaler) and self.after_update is None:
            self.after_update = float(scaler.get_scale())

    def step(self, scaler: Any, nonfinite: bool | None) -> tuple[float, int]:
        """``(scale used by this step's backward, 1 if the step was skipped else 0)``.

        ``nonfinite``: whether this step's gradients held Inf/NaN (None when not read).
        """
        now = float(scaler.get_scale())
        prev = self.after_update
        self.after_update = now
        if prev is not None:
            return prev, int(now < prev)
        if nonfinite:
            return now / float(scaler.get_backoff_factor()), 1
        if nonfinite is False and int(scaler.get_growth_interval()) == 1:
            return now / float(scaler.get_growth_factor()), 0
        return now, 0
