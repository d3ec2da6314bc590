"""Round 21: three readings of a short log, each found on a paste of the seventh thread set (a
development set since its one grading), each with silent twins.

- ``short_stuck_tail``: the last two thirds of the points within a thousandth of their level with no
  trend, after whatever fall came first (FANN's "Current error" 187.36, then 34.07-34.09).
- ``short_both_high``: the training loss and a held-out loss both ended ten times their lowest
  (RAT-SQL's 0.92 -> 95.8 with validation 3.54 -> 112.6): one bad batch does not move a held-out loss.
- ``short_val_turned``: the held-out loss rose at each of 5 evaluations or more after its minimum
  (exact p = 1/k!) while the training loss fell by ``min_drop`` (a GPT trained on one short story).
"""

from __future__ import annotations

import pytest
from loss_synth import analyze_lines

FANN = [187.3569030762, 34.0731391907, 34.0791511536, 34.0858230591, 34.0767517090, 34.0764961243,
        34.0817642212, 34.0817031860, 34.0721969604, 34.0795860291, 34.0741653442, 34.0833320618,
        34.0826034546, 34.0909080505, 34.0811843872]


def _analyzed(tmp_path, lines):
    return analyze_lines(tmp_path, lines)


def _errors(tmp_path, values):
    lines = ["Max epochs   100000. Desired error: 0.0000100000."]
    lines += [f"Epochs {max(1, 1000 * i):12d}. Current error: {v:.10f}. Bit fail 8." for i, v in enumerate(values)]
    return _analyzed(tmp_path, lines)


def test_a_loss_that_stopped_within_a_thousandth_after_its_fall_is_stuck(tmp_path):
    diag = _errors(tmp_path, FANN)
    assert diag.curve.label == "underfitting", diag.curve.reason
    ev = diag.curve.evidence
    assert ev["kind"] == "short_stuck_tail" and ev["tail_points"] == 14 and ev["relative_band"] < 1e-3
    assert "underfitting" in [f.code for f in diag.findings]


@pytest.mark.parametrize("why, values", [
    ("a tail that creeps down at every print is still learning",
     [187.36] + [34.08 - 0.002 * i for i in range(14)]),
    ("a tail spread over a percent is an epoch's noise, not a stop",
     [187.36] + [34.08 * (1 + 0.01 * ((-1) ** i)) for i in range(14)]),
    ("printed too coarsely to resolve a thousandth: a converged loss repeats",
     [2.31, 0.91, 0.42, 0.21] + [0.05] * 12),
    ("five points held still are too few", [187.36, 60.2, 50.1, 45.3, 40.2] + [34.0801, 34.0811, 34.0795, 34.0806, 34.0799]),
])
def test_silent_twins_of_a_stuck_tail(tmp_path, why, values):
    diag = _errors(tmp_path, values)
    assert diag.curve.evidence.get("kind") != "short_stuck_tail", (why, diag.curve.reason)


def _steps(tmp_path, train, val):
    lines = ["[2020-07-28T15:25:54] Logging to logdir/bert_run/bs=6,lr=7.4e-04,bert_lr=3.0e-06,end_lr=0e0,att=1", "..."]
    for i, (t, v) in enumerate(zip(train, val, strict=True)):
        step = 14100 + 100 * i
        lines += [f"[2020-07-29T13:59:21] Step {step} stats, train: loss = {t}",
                  f"[2020-07-29T13:59:27] Step {step} stats, val: loss = {v}", "..."]
    return _analyzed(tmp_path, lines)


def test_training_and_held_out_loss_both_ten_times_their_lowest_is_diverged(tmp_path):
    diag = _steps(tmp_path, [1.1323808431625366, 0.9168887138366699, 2.303567111492157, 95.80101776123047],
                  [3.3228100538253784, 3.5443124771118164, 4.652050733566284, 112.55300903320312])
    assert diag.curve.label == "diverged", diag.curve.reason
    assert diag.curve.evidence["kind"] == "short_both_high"
    assert diag.curve.evidence["eval_set"] == "val_loss"


@pytest.mark.parametrize("why, train, val", [
    ("the held-out loss stayed where it was: one bad batch",
     [1.13, 0.92, 2.30, 95.8], [3.32, 3.54, 3.60, 3.71]),
    ("both rose, by less than tenfold", [1.13, 0.92, 2.30, 8.1], [3.32, 3.54, 4.65, 30.2]),
])
def test_silent_twins_of_both_ended_high(tmp_path, why, train, val):
    diag = _steps(tmp_path, train, val)
    assert diag.curve.evidence.get("kind") != "short_both_high", (why, diag.curve.reason)


GPT_TRAIN = [9.781, 8.111, 6.661, 5.961, 5.726, 5.201, 4.417, 4.069, 3.732, 2.850, 2.427, 2.104, 1.882,
             1.320, 0.985, 0.717, 0.541, 0.391]
GPT_VAL = [9.933, 8.339, 7.048, 6.616, 6.600, 6.348, 6.278, 6.226, 6.160, 6.179, 6.141, 6.134, 6.233,
           6.238, 6.242, 6.293, 6.393, 6.452]


def _gpt(tmp_path, train, val):
    return _analyzed(tmp_path, [f"Ep {i // 2 + 1} (Step {5 * i:06d}): Train loss {t:.3f}, Val loss {v:.3f}"
                                for i, (t, v) in enumerate(zip(train, val, strict=True))])


def test_a_held_out_loss_that_turned_while_training_fell_is_overfitting(tmp_path):
    diag = _gpt(tmp_path, GPT_TRAIN, GPT_VAL)
    assert diag.curve.label == "overfitting", diag.curve.reason
    ev = diag.curve.evidence
    assert ev["kind"] == "short_val_turned" and ev["evals_after_min"] == 6
    assert ev["val_perm_p"] == pytest.approx(1 / 720)
    assert "overfitting" in [f.code for f in diag.findings]


@pytest.mark.parametrize("why, train, val", [
    ("four rises after the minimum: 1/4! is no test", GPT_TRAIN, GPT_VAL[:13] + [6.120, 6.125, 6.130, 6.135, 6.140]),
    ("it came back down once", GPT_TRAIN, GPT_VAL[:15] + [6.236, 6.393, 6.452]),
    ("the training loss stopped falling too", GPT_TRAIN[:12] + [2.11, 2.10, 2.12, 2.09, 2.11, 2.10], GPT_VAL),
])
def test_silent_twins_of_a_turned_held_out_loss(tmp_path, why, train, val):
    diag = _gpt(tmp_path, train, val)
    assert diag.curve.evidence.get("kind") != "short_val_turned", (why, diag.curve.reason)
