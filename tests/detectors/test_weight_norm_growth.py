"""weight_norm_growth: unbounded growth versus healthy, levelling growth."""

from __future__ import annotations

import numpy as np
import pytest
from grad_norm_runs import grads
from gradients_synth import (
    check,
    healthy_net,
    make_run,
    required_run,
)

from runlens.detectors import Skip


def with_weights(total_curve, seed=0, m=4):
    n = len(total_curve)
    g, w, u = healthy_net(seed, n=n, m=m)
    rng = np.random.default_rng(seed)
    w = w[:1] * total_curve[:, None] * (1 + 0.002 * rng.standard_normal((n, m)))
    return make_run(g, w, u)


@pytest.mark.parametrize("seed", range(10))
def test_fires_on_exponential_growth(seed):
    t = np.linspace(0, 1, 200)
    [f] = check("weight_norm_growth", with_weights(np.exp(4 * t), seed))
    assert f.evidence["growth_factor"] > 20
    assert f.evidence["late_share"] > 0.5
    assert "(>= 10x)" in f.title


def test_fires_on_linear_growth():
    t = np.linspace(0, 1, 300)
    assert len(check("weight_norm_growth", with_weights(1 + 40 * t))) == 1


@pytest.mark.parametrize("seed", range(10))
def test_silent_on_healthy_sqrt_growth(seed):
    t = np.linspace(0, 1, 300)
    assert check("weight_norm_growth", with_weights(np.sqrt(1 + 8 * t), seed)) == []


def test_silent_when_growth_levels_off():
    t = np.linspace(0, 1, 300)
    assert check("weight_norm_growth", with_weights(1 + 30 * (1 - np.exp(-12 * t)))) == []


def test_small_zero_initialized_parameters_do_not_dominate():
    n = 200
    g, w, u = healthy_net(1, n=n, m=4)
    w[:, 0] = 1e-3 * np.exp(6 * np.linspace(0, 1, n))  # a zero-init gain growing from nothing
    assert check("weight_norm_growth", make_run(g, w, u)) == []


def test_ignores_steps_after_a_nonfinite_loss():
    t = np.linspace(0, 1, 200)
    curve = np.where(t < 0.5, 1.0, np.exp(8 * (t - 0.5)))
    assert check("weight_norm_growth", with_weights(curve), first_nonfinite=100) == []


def test_short_runs_are_skipped_with_the_reason():
    # too short to decide is a Skip, not "ran and found nothing"
    with pytest.raises(Skip, match="10 recorded steps"):
        check("weight_norm_growth", with_weights(np.array([1.0, 10, 100, 1000])))


def test_a_run_that_blew_up_into_nan_is_left_to_the_divergence_findings():
    t = np.linspace(0, 1, 200)
    assert check("weight_norm_growth", with_weights(np.exp(4 * t)), curve="diverged", first_nonfinite=200) == []
    assert len(check("weight_norm_growth", with_weights(np.exp(4 * t)), curve="healthy")) == 1


def test_a_finite_divergence_driven_by_growing_weights_is_reported():
    # e.g. negative weight decay: the loss grows without bound but stays finite,
    # and the weights grow steadily throughout; the growth is the mechanism.
    t = np.linspace(0, 1, 200)
    assert len(check("weight_norm_growth", with_weights(np.exp(4 * t)), curve="diverged")) == 1


def test_weight_norm_growth_fires_with_required_columns_only():
    t = np.linspace(0, 1, 200)
    w = (5 * np.exp(4 * t)[:, None] * np.ones(4)).astype(np.float32)
    assert len(check("weight_norm_growth", required_run(grads(7, n=200, m=4), w))) == 1


def test_weight_norm_growth_silent_on_the_healthy_twin():
    t = np.linspace(0, 1, 200)
    w = (5 * np.sqrt(1 + 3 * t)[:, None] * np.ones(4)).astype(np.float32)
    assert check("weight_norm_growth", required_run(grads(7, n=200, m=4), w)) == []
