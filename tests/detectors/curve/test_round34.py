"""Round 34's curve readings, from third-fresh33's curve misses (a development set since its one grading in
round 33), each on a recorded run with its fixed twin and on synthetic series, each with a silent twin:

- a held-out loss that gave back every gain (it ends above its first evaluation, along a significant rise
  after its minimum) while the training loss kept falling overfit, however small its fall before the turn
  (training on shuffled labels);
- a loss that fell and came back to within ``min_drop`` of its start made no net progress: underfitting,
  not instability (a missing ``zero_grad``), with the bug named as its cause;
- a best level within twice the late noise of the end level is the end level's own noise, not progress
  (raw inputs: a loss 8% down whose lowest bucket medians dip 11% below its start).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runlens import analyze
from runlens.io.loader import load_run
from tests.detectors.loss_synth import make_run

THIRD = Path(__file__).resolve().parents[2] / "fixtures" / "third"


def _recorded(folder: str, which: str):
    return analyze(load_run(THIRD / folder / which))


@pytest.mark.parametrize("folder", ["labels_shuffled-moe", "no_zero_grad-mixer", "raw_inputs-moe_slow"])
def test_silent_twins_the_recorded_runs_without_their_bug_are_healthy(folder):
    d = _recorded(folder, "twin")
    assert d.curve.label == "healthy" and not d.findings, (d.curve, d.findings)


# -- a held-out loss that gave back every gain ---------------------------------------------------------

def test_recorded_shuffled_labels_overfit_by_where_the_held_out_loss_ends():
    d = _recorded("labels_shuffled-moe", "fault")
    assert d.curve.label == "overfitting" and d.curve.evidence["kind"] == "val_gave_back_all", d.curve
    assert d.curve.evidence["val_end"] > d.curve.evidence["val_first"]


def _held_out(val_first: float, rng_seed: int = 0):
    rng = np.random.default_rng(rng_seed)
    n = 800
    train = 1.6 * np.exp(-np.arange(n) / 3000) * np.exp(0.03 * rng.standard_normal(n))
    vs = np.arange(40, n, 40)
    # The held-out loss dips to its second evaluation, then rises steadily to the end.
    val = 1.50 + 0.0025 * np.arange(vs.size) + 0.0003 * rng.standard_normal(vs.size)
    val[0] = val_first
    return analyze(make_run(train, steps=np.arange(n), val_loss=val, val_steps=vs))


def test_a_held_out_loss_ending_above_its_first_evaluation_overfit():
    d = _held_out(1.52)
    assert d.curve.label == "overfitting" and d.curve.evidence["kind"] == "val_gave_back_all", d.curve


def test_silent_twin_a_held_out_loss_that_kept_most_of_its_gain_is_not_this_reading():
    d = _held_out(1.80)  # fell 17% first: the rise (3%) gave back a fifth of it
    assert d.curve.evidence.get("kind") != "val_gave_back_all", d.curve


# -- a loss that came back to its start ----------------------------------------------------------------

def test_recorded_missing_zero_grad_made_no_net_progress_and_names_its_cause():
    d = _recorded("no_zero_grad-mixer", "fault")
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "progress_lost", d.curve
    assert d.findings[0].code == "gradients_accumulate"
    assert "gradients_accumulate" in (next(f for f in d.findings if f.code == "underfitting")
                                      .evidence.get("caused_by") or [])


def _back(end: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 600
    t = np.arange(n)
    # Down from 1.5 to 0.4 in the first fifth, then back up along a slow drift to ``end``.
    base = np.where(t < 120, 1.5 - 1.1 * t / 120, 0.4 + (end - 0.4) * (t - 120) / (n - 120))
    return analyze(make_run(base * np.exp(0.25 * rng.standard_normal(n)), steps=t))


def test_a_loss_back_at_its_start_made_no_net_progress():
    d = _back(1.45)
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "progress_lost", d.curve


def test_silent_twin_a_loss_that_kept_a_third_of_its_fall_is_not_this_reading():
    d = _back(1.0)
    assert d.curve.evidence.get("kind") != "progress_lost", d.curve


# -- a best level within the end's noise ---------------------------------------------------------------

def test_recorded_raw_inputs_made_no_progress_beyond_their_noise():
    d = _recorded("raw_inputs-moe_slow", "fault")
    assert d.curve.label == "underfitting", d.curve
    ev = d.curve.evidence  # the numbers that decided it: the best level within 2 sd of its noise of the end
    assert ev["end_level"] - ev["min_level"] <= ev["apart_sd"] * ev["min_noise"]
    assert d.findings[0].code == "inputs_not_normalized"


def _noisy_fall(drop: float, seed: int = 3):
    rng = np.random.default_rng(seed)
    n = 700
    base = 1.9 * (1 - drop * (1 - np.exp(-np.arange(n) / 120)))
    return analyze(make_run(base * np.exp(0.07 * rng.standard_normal(n)), steps=np.arange(n)))


def test_a_fall_smaller_than_min_drop_whose_best_buckets_dip_in_noise_is_no_progress():
    d = _noisy_fall(0.08)
    assert d.curve.label == "underfitting", d.curve


@pytest.mark.parametrize("drop", [0.2, 0.4])
def test_silent_twins_a_fall_beyond_min_drop_is_progress(drop):
    assert _noisy_fall(drop).curve.label == "healthy"
