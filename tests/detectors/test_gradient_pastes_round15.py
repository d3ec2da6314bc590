"""Gradient-norm and loss readings of a few pasted lines, from the thread pastes' misses of round 14:
a lone spike among three losses, a norm and loss that jump together on the last of two lines, a
norm multiplied by a steady factor per line while the loss stands still (not a sum of gradients),
a spike on the log's last line, and a NaN gradient norm the log goes on from (a skipped step).
Each firing case has its silent twin."""

from __future__ import annotations

import numpy as np
import pytest
from gradients_synth import check
from loss_synth import make_run


def _run(loss, grad_norm=None):
    loss = np.asarray(loss, dtype=float)
    scalars = {} if grad_norm is None else {"grad_norm": np.asarray(grad_norm, dtype=float)}
    return make_run(loss, steps=np.arange(loss.size), scalars=scalars)


def test_the_middle_of_three_losses_ten_times_both_neighbours_is_a_spike():
    [f] = check("loss_spikes", _run([0.2586, 3.17e14, 0.2525]))
    assert f.evidence["three_points"] and f.step == 1 and "3 points" in f.title


@pytest.mark.parametrize("x", [[0.26, 2.0, 0.25], [0.26, 30.0, 2.6], [0.26, 0.25, 30.0]])
def test_silent_twin_under_tenfold_neighbours_apart_or_a_last_point(x):
    assert check("loss_spikes", _run(x)) == []


def test_a_norm_and_loss_jumping_together_on_the_last_of_two_lines_explode():
    [f] = check("exploding_gradients", _run([1.5043, 63.1261], [3.4572, 31101415.5974]))
    assert f.evidence["surge_decades"] > 6 and "last recorded step" in f.title


def test_silent_twin_the_norm_jumps_but_the_loss_does_not():
    assert check("exploding_gradients", _run([1.5043, 1.49], [3.4572, 31101415.5974])) == []


GEOMETRIC = 3.8e12 * 1.5 ** np.arange(10)
FLAT_LOSS = [11.68, 11.43, 11.32, 11.25, 11.11, 11.24, 11.38, 11.23, 11.39, 11.28]


def test_a_norm_multiplied_by_a_steady_factor_with_a_flat_loss_explodes_not_accumulates():
    run = _run(FLAT_LOSS, GEOMETRIC)
    [f] = check("exploding_gradients", run)
    assert f.evidence["geometric"]["r2"] > f.evidence["geometric"]["r2_linear"]
    assert check("gradients_accumulate", run) == []


def test_silent_twin_a_norm_growing_in_a_straight_line_is_a_sum_not_an_explosion():
    run = _run(FLAT_LOSS, 5.0 * np.arange(1, 11))
    assert check("exploding_gradients", run) == []
    [f] = check("gradients_accumulate", run)
    assert "x over 10 points" in f.title and "inf" not in f.title


def test_silent_twin_a_steady_factor_while_the_loss_falls():
    assert check("exploding_gradients", _run(np.linspace(11.7, 6.0, 10), GEOMETRIC)) == []


UNSLOTH = [14.98, 9.78, 7.64, 92.10, 29.00, 5.21, 7.83, 7.79, 11140.0]
LOSS9 = [1.46, 1.28, 1.60, 1.14, 1.54, 1.61, 1.36, 1.36, 1.51]


def test_a_spike_on_the_last_line_is_flagged_as_unknown_whether_it_came_back():
    [f] = check("grad_norm_spike", _run(LOSS9, UNSLOTH))
    assert f.evidence["at_end"] and f.step == 8 and "last line" in f.title


def test_silent_twin_a_last_line_under_the_ratio():
    assert check("grad_norm_spike", _run(LOSS9, [*UNSLOTH[:-1], 40.0])) == []


def test_a_nan_gradient_norm_the_log_goes_on_from_was_not_applied():
    assert check("nonfinite_gradient", _run([1.9091, 0.9186], [float("nan"), 3.9772])) == []


@pytest.mark.parametrize("loss, gn", [
    ([1.9, 0.92], [3.97, float("nan")]),               # the log ends on it
    ([1.9, 0.92, 0.9], [float("nan"), float("nan"), 3.0]),  # the next norm is NaN too
    ([1.9, 0.0, 0.0], [float("nan"), 3.0, 3.0]),       # the loss after it collapsed to 0
])
def test_silent_twin_a_nan_gradient_norm_nothing_finite_follows(loss, gn):
    assert [f.code for f in check("nonfinite_gradient", _run(loss, gn))] == ["nonfinite_gradient"]


def test_silent_twin_a_last_finite_norm_before_a_blow_up_is_not_a_spike_at_the_end():
    run = _run([*LOSS9, float("nan")], [*UNSLOTH, float("nan")])
    assert check("grad_norm_spike", run) == []
