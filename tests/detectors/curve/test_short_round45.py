"""Round 45: a short log whose last losses climbed out of its level, in order (``short_ran_away``), found
on a paste of the thirty-first thread set (a development set since its one grading): a distillation
loss between 0.99 and 1.93 for seven prints, then 16.3 and 23.7 before a traceback. Under noise the last
m of n points are the m largest, in rising order, with exact p = (n - m)! / n!; each must also be ten
times the median before them. The series are made up here, with silent twins.
"""

from __future__ import annotations

import pytest
from loss_synth import analyze_lines

RAN_AWAY = [1.24, 1.36, 1.58, 0.99, 1.49, 1.07, 1.93, 1.05, 16.31, 23.72]


def _per_step(tmp_path, values, every=10):
    return analyze_lines(tmp_path, [f"iter = {400 + every * i:04d}, loss = {v:.4f}" for i, v in enumerate(values)])


def test_the_last_losses_climbing_out_of_the_level_in_order_diverged(tmp_path):
    diag = _per_step(tmp_path, RAN_AWAY)
    assert diag.curve.label == "diverged", diag.curve.reason
    ev = diag.curve.evidence
    assert ev["kind"] == "short_ran_away" and ev["tail_points"] == 2 and ev["step"] == 480
    assert ev["p_value"] == pytest.approx(1 / 90)
    assert "the last 2 of 10 losses" in diag.curve.reason


@pytest.mark.parametrize("why, values", [
    ("one high last line is a spike for all a log shows", RAN_AWAY[:-2] + [1.4, 23.72]),
    ("two high lines that came back down", RAN_AWAY + [1.3]),
    ("the last two not in rising order", RAN_AWAY[:-2] + [23.72, 16.31]),
    ("fivefold the level is within what a hard batch gives", RAN_AWAY[:-2] + [6.1, 7.0]),
    ("the last above the level but not above every value before", [1.2, 25.0, 1.3, 1.1, 1.25, 14.0, 16.0]),
    ("four points: p = 1/12 for two in order, too likely", [1.2, 1.3, 16.3, 23.7]),
])
def test_silent_twins_of_running_away(tmp_path, why, values):
    diag = _per_step(tmp_path, values)
    assert diag.curve.evidence.get("kind") != "short_ran_away", (why, diag.curve.reason)
