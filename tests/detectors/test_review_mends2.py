"""Refactors from a review, whose rules these tests pin where a second copy could drift or a shortcut
could go wrong:

- the per-epoch swing rule is one helper for the curve's ``chaotic`` (no progress) and ``swinging``
  (after progress) readings;
"""

from __future__ import annotations

import pytest

from runlens.detectors.curve import CurveClassifier
from runlens.detectors.curve.underfitting import chaotic, epoch_swings


def _features(spread: float, end: float, *, per_epoch: bool = True) -> dict:
    # ``late_step_ratio`` memoised as None: no step sizes logged.
    return {"per_epoch": per_epoch, "end_level": end, "late_spread": spread, "late_step_ratio": None}


@pytest.mark.parametrize(("spread", "end", "per_epoch", "swings"), [
    (1.0, 3.0, True, True),     # fires: a spread of a third of the end level
    (0.99, 3.0, True, False),   # silent twin: just under a third
    (1.0, -3.0, True, True),    # a negative level (a log-likelihood) is read by its size
    (1.0, 3.0, False, False),   # silent twin: a per-step log swings that much alone
])
def test_one_swing_rule_reads_no_progress_and_progress_alike(spread, end, per_epoch, swings):
    cfg = CurveClassifier()
    f = _features(spread, end, per_epoch=per_epoch)
    assert epoch_swings(cfg, f, None, spread) is swings
    assert chaotic(cfg, f, None) is swings  # the no-progress reading is the same rule on the late spread


def test_a_loss_ending_at_zero_is_not_chaotic():
    assert chaotic(CurveClassifier(), _features(1.0, 0.0), None) is False
