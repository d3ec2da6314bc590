"""Round 16, from the second thread set's misses: in a short log, a held-out loss that makes no progress
while the training loss falls, staying at twice the training loss or more (the gap widens: overfitting
without a rise to test); a short log whose last line blew up by two orders
of magnitude; and a short log's first point, which has nothing to spike from. Each firing case has a
silent twin."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import make_run

from runlens.detectors.curve import classify
from runlens.stats.spikes import short_spikes

# Epochs 530-640 of a logger's paste: the training loss falls, the validation loss stays near 2.9.
TRAIN12 = [0.98, 0.96, 0.96, 0.93, 0.93, 0.91, 0.90, 0.89, 0.87, 0.86, 0.85, 0.84]
VAL12 = [2.94, 2.90, 2.80, 3.14, 2.94, 2.79, 3.16, 2.85, 2.90, 2.67, 3.18, 3.01]


def _short(train, val=None):
    x = np.asarray(train, dtype=float)
    steps = np.arange(530, 530 + 10 * x.size, 10)
    if val is None:
        return make_run(x, steps=steps)
    return make_run(x, steps=steps, val_loss=np.asarray(val, dtype=float), val_steps=steps[:len(val)])


def test_a_flat_validation_loss_three_times_a_falling_training_loss_is_overfitting():
    v = classify(_short(TRAIN12, VAL12))
    assert v.label == "overfitting" and v.evidence["kind"] == "gap_widens"
    assert v.evidence["gap_ratio"] > 3 and v.evidence["val_trend"]["tau"] >= 0


@pytest.mark.parametrize("val", [
    [2.94 - 0.08 * i for i in range(12)],          # the validation loss falls too: learning
    # within 2x of the training loss and down by a third of its fall: the gains carry over (in round 29 a
    # flat one within 2x became overfitting: its fall under a quarter of the training loss's, CARRY)
    [1.2 - 0.004 * i + 0.02 * (i % 3) for i in range(12)],
])
def test_silent_twin_validation_that_falls_or_stays_near_the_training_loss(val):
    assert classify(_short(TRAIN12, val)).evidence.get("kind") != "gap_widens"


def test_silent_twin_a_training_loss_that_does_not_fall_makes_no_gap():
    flat = [0.9 + 0.01 * (i % 2) for i in range(12)]
    assert classify(_short(flat, VAL12)).evidence.get("kind") != "gap_widens"


@pytest.mark.parametrize("x", [[0.3477, 0.2199, 0.1751, 0.1605, 1.63e18], [2.3, 2.2, 3e4]])
def test_a_last_line_a_hundred_times_every_earlier_one_is_diverged(x):
    v = classify(_short(x))
    assert v.label == "diverged" and v.evidence["kind"] == "short_ended_high"


@pytest.mark.parametrize("x", [[0.3477, 0.2199, 0.1751, 0.1605, 15.0], [2.3, 2.2, 200.0]])
def test_silent_twin_a_last_line_under_a_hundredfold_is_not_called_diverged_by_it(x):
    assert classify(_short(x)).evidence.get("kind") != "short_ended_high"


@pytest.mark.parametrize("x", [
    [-0.0232, -0.0830, -0.1212, -0.1415, -0.1541, -0.1642, -0.1719, -0.1770, -0.1824, -0.1866],  # negative, falling
    [1763.9, 323.1, 78.9, 29.105, 29.104, 29.0236, 29.0227],                                        # a fast first fall
])
def test_a_first_point_high_above_the_rest_is_the_loss_falling_not_a_spike(x):
    assert short_spikes(np.asarray(x)) == []


def test_silent_twin_a_point_that_rises_from_its_neighbours_and_comes_back_is_a_spike():
    x = np.array([-4.45, -4.32, -4.49, 4191.68, -2.41, -2.91, -3.10, -3.3])
    found = short_spikes(x)
    assert [s["index"] for s in found] == [3]
    y = np.array([2.1, 2.0, 1.9, 60.0, 1.85, 1.8, 1.7])
    assert [s["index"] for s in short_spikes(y)] == [3]


# fastai v1's table (an issue's canonical overfitting example): the validation loss fell from 1.04 to
# 0.227, then rose at each of the 4 evaluations after it, a twentieth of its fall.
FASTAI_TRAIN = [1.513, 1.290, 1.186, 1.117, 1.023, 0.951, 0.916, 0.839, 0.750, 0.679, 0.615, 0.559, 0.518,
                0.476, 0.437, 0.457, 0.421, 0.396, 0.373]
FASTAI_VAL = [1.042, 0.995, 0.936, 0.838, 0.735, 0.627, 0.559, 0.504, 0.433, 0.368, 0.327, 0.299, 0.267,
              0.258, 0.2273, 0.2366, 0.2402, 0.2555, 0.2635]


def test_a_short_log_rising_at_each_of_four_evaluations_after_its_minimum_overfits_whatever_it_fell():
    v = classify(_short(FASTAI_TRAIN, FASTAI_VAL))
    assert v.label == "overfitting" and v.evidence["strict_rise_after_min"] == 4


def test_silent_twin_three_rises_after_the_minimum_and_a_fall_back_are_not_enough():
    val = [*FASTAI_VAL[:-1], 0.2301]  # the last evaluation fell back near the minimum
    assert classify(_short(FASTAI_TRAIN, val)).label != "overfitting"
