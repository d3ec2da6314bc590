"""Short logs (a few pasted lines) read by the effect alone where they are too short for a test:
a loss that leaps tenfold at every line after the first, a validation loss printed alike at
every evaluation, a validation loss that swings by 3x up and down. From the thread pastes'
misses of round 14; each firing case has its silent twin."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import make_run

from runlens.detectors.curve import classify


def _short(x, **kw):
    x = np.asarray(x, dtype=float)
    return make_run(x, steps=np.arange(x.size), **kw)


@pytest.mark.parametrize("x", [[19.147, 2.9e33, 1.9e33, 1.5e33], [2.3, 40.0, 65.0]])
def test_three_or_four_points_each_ten_times_the_first_diverged(x):
    v = classify(_short(x))
    assert v.label == "diverged" and v.evidence["kind"] == "short_leap"


@pytest.mark.parametrize("x", [[0.26, 3e14, 0.25], [2.3, 9.0, 20.0], [2.3, 40.0, 2.2, 2.1], [2.3, 2.2, 2.1, 2.0]])
def test_silent_twin_a_spike_that_came_back_or_a_rise_short_of_tenfold(x):
    assert classify(_short(x)).label == "insufficient_data"


def test_a_validation_loss_printed_alike_at_every_evaluation_is_stuck():
    run = _short([4.01, 4.02, 3.98, 3.96], val_loss=np.array([4.02835, 4.02835]), val_steps=np.array([0, 3]))
    v = classify(run)
    assert v.label == "underfitting" and v.evidence["kind"] == "short_frozen_validation"


@pytest.mark.parametrize("train, val", [
    ([4.01, 4.02, 3.98, 3.96], [4.02835, 4.02790]),   # the validation loss moved
    ([4.0, 3.2, 2.6, 2.1], [2.5, 2.5]),                # printed alike to two digits, the training fell
    ([4.01, 4.02, 3.98, 3.96], [4.0284]),              # one evaluation
])
def test_silent_twin_validation_that_moved_or_training_that_fell(train, val):
    run = _short(train, val_loss=np.array(val), val_steps=np.array([0, 3][:len(val)]))
    assert classify(run).evidence.get("kind") != "short_frozen_validation"


TRAIN10 = [2.27, 1.55, 1.07, 0.87, 0.59, 0.52, 0.38, 0.32, 0.21, 0.34]


def test_a_validation_loss_swinging_threefold_up_and_down_is_unstable():
    val = [3.29, 0.92, 1.43, 1.85, 0.58, 2.30, 0.17, 1.52, 0.14, 2.81]
    v = classify(_short(TRAIN10, val_loss=np.array(val), val_steps=np.arange(10)))
    assert v.label == "unstable" and v.evidence["swings_up"] >= 2 and v.evidence["swings_down"] >= 2


@pytest.mark.parametrize("val", [
    [3.29, 0.92, 0.80, 0.70, 0.66, 0.60, 0.58, 0.61, 0.59, 0.63],   # falls once by 3x, then noise
    [1.0, 0.6, 0.9, 0.55, 0.95, 0.5, 0.9, 0.5, 0.9, 0.5],           # jumps under 3x
])
def test_silent_twin_one_threefold_fall_or_jumps_under_threefold(val):
    v = classify(_short(TRAIN10, val_loss=np.array(val), val_steps=np.arange(10)))
    assert v.evidence.get("kind") != "short_val_swings"


def test_a_per_epoch_loss_ending_at_exactly_zero_between_swings_does_not_crash_the_curve(tmp_path):
    # Found by the review mend's probe: the swing reading divided by an end level of 0.
    from runlens import analyze
    v = list(np.linspace(1.0, 0.2, 10))
    for x in (0.2, 0.45, 0.6, 0.3, 0.5, 0.25, 0.55):
        v += [0.0, 0.0, x]
    path = tmp_path / "epochs.csv"
    path.write_text("epoch,loss\n" + "".join(f"{e},{x:.4f}\n" for e, x in enumerate(v[:30], 1)), encoding="utf-8")
    d = analyze(str(path))
    assert d.curve.label != "insufficient_data"
    assert not any("crashed" in w for w in d.warnings)
