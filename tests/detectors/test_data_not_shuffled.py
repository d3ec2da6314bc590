"""data_not_shuffled: the loss's deviations repeat with the epoch's position."""

from __future__ import annotations

import numpy as np
import pytest
from bug_fixtures import assert_fixed_twin_silent, leading_finding
from gradients_synth import check
from loss_synth import healthy, make_run

from runlens.detectors import Skip


def test_real_run_names_the_bug_first():
    _, f = leading_finding("data_not_shuffled-mlp", "data_not_shuffled")
    assert f.evidence["kruskal_p"] < 1e-3
    assert f.evidence["steps_per_epoch"] == 20


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("data_not_shuffled-mlp-fixed", "data_not_shuffled")


def _run(loss, period, lr=None):
    n = len(loss)
    return make_run(loss, lr=lr, scalars={"epoch": np.arange(n) // period})


@pytest.mark.parametrize("seed", range(5))
def test_epoch_periodic_pattern_fires(seed):
    n, period = 600, 25
    pattern = np.random.default_rng(100 + seed).normal(0, 0.4, period)
    loss = healthy(n, seed) * np.exp(np.tile(pattern, n // period))
    [f] = check("data_not_shuffled", _run(loss, period))
    assert f.evidence["lag_epoch_autocorrelation"] > 0.5


@pytest.mark.parametrize("seed", range(5))
def test_shuffled_noise_is_silent(seed):
    assert check("data_not_shuffled", _run(healthy(600, seed), 25)) == []


def test_a_schedule_with_the_epoch_period_explains_it():
    n, period = 600, 25
    t = np.arange(n)
    lr = 0.05 * 0.5 * (1 + np.cos(np.pi * (t % period) / period)) + 1e-5
    loss = healthy(n, 0) * np.exp(0.3 * np.cos(np.pi * (t % period) / period))
    assert check("data_not_shuffled", _run(loss, period, lr=lr)) == []


def test_without_epochs_it_skips():
    with pytest.raises(Skip, match="steps per epoch"):
        check("data_not_shuffled", make_run(healthy(300, 0)))


def test_real_batches_of_four_are_silent():
    """Batches of 4, shuffled: a loud loss whose noise has no epoch pattern."""
    assert_fixed_twin_silent("control-batch_four-mlp", "data_not_shuffled")


def test_a_fractional_epoch_column_is_no_epoch_length():
    """Trainers that log the epoch as a fraction (0.01, 0.02...) count progress, not epochs."""
    n, period = 600, 25
    pattern = np.random.default_rng(100).normal(0, 0.4, period)
    loss = healthy(n, 0) * np.exp(np.tile(pattern, n // period))
    run = make_run(loss, scalars={"epoch": np.arange(n) / 250})
    with pytest.raises(Skip, match="steps per epoch"):
        check("data_not_shuffled", run)


@pytest.mark.parametrize("seed", range(5))
def test_a_loss_that_drops_at_each_epoch_start_is_silent(seed):
    """A staircase: flat within each epoch, a drop when the same samples come round again (or a
    rate stepped per epoch). Its moving mean over one epoch is a ramp across each drop, so that
    model alone leaves a sawtooth with the epoch's period: a pattern of the trend, not the data."""
    rng = np.random.default_rng(seed)
    epochs, period = 6, 8
    levels = 0.68 * np.exp(-0.25 * np.arange(epochs))
    loss = np.repeat(levels, period) * np.exp(rng.normal(0, 0.03, epochs * period))
    assert check("data_not_shuffled", _run(loss, period)) == []


@pytest.mark.parametrize("seed", range(3))
def test_a_sorted_pattern_on_a_staircase_still_fires(seed):
    """The data's order survives both models of the trend: the staircase twin plus a pattern."""
    rng = np.random.default_rng(seed)
    epochs, period = 12, 20
    levels = 0.68 * np.exp(-0.1 * np.arange(epochs))
    pattern = np.tile(rng.normal(0, 0.4, period), epochs)
    loss = np.repeat(levels, period) * np.exp(pattern + rng.normal(0, 0.03, epochs * period))
    [f] = check("data_not_shuffled", _run(loss, period))
    assert f.evidence["position_effect"] >= 0.2
