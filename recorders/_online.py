"""Online tests the recorder runs on the host, step by step, in bounded memory."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable


class SpikeDetector:
    """Flags a value far above its recent history, robustly.

    Works on log10 of the value (gradient norms vary over decades), against
    the median and MAD of the last ``window`` finite values; a value is a
    spike when its robust z-score exceeds ``threshold`` and it is at least
    ``min_ratio`` times the median. Needs ``min_history`` values first.
    Spikes enter the history too: the median and MAD shrug off a few.
    """

    def __init__(self, *, window: int = 100, threshold: float = 6.0, min_history: int = 20,
                 min_ratio: float = 3.0, refresh: int = 16) -> None:
        self.window = window
        self.threshold = threshold
        self.min_history = min_history
        self.min_ratio = min_ratio
        self.refresh = refresh
        self._history: deque[float] = deque(maxlen=window)
        self._center: tuple[float, float] | None = None
        self._since_refresh = 0

    def __len__(self) -> int:
        return len(self._history)

    def update(self, value: float) -> float | None:
        """Robust z-score of ``value`` when it is a spike, else None."""
        if not (value > 0 and math.isfinite(value)):
            return None
        x = math.log10(value)
        z = None
        if len(self._history) >= self.min_history:
            med, spread = self._robust_center()
            score = (x - med) / spread
            if score > self.threshold and x - med >= math.log10(self.min_ratio):
                z = score
        self._history.append(x)
        self._since_refresh += 1
        return z

    def _robust_center(self) -> tuple[float, float]:
        # Median and MAD move slowly; recomputing them every few steps keeps
        # the per-step cost to a comparison.
        if self._center is None or self._since_refresh >= self.refresh:
            med = _median(self._history)
            mad = _median([abs(v - med) for v in self._history])
            # A floor on the spread keeps a flat history from turning noise into spikes.
            # 1.4826 is the normal-consistency factor the engine takes from scipy
            # (median_abs_deviation(scale="normal")); the recorder may not import scipy.
            self._center = (med, max(1.4826 * mad, 0.02))
            self._since_refresh = 0
        return self._center


def _median(values: Iterable[float]) -> float:
    # A hundred floats: sorting in Python beats numpy's call overhead.
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
