"""dead_layers: zero gradients or zero updates while others learn, and the twins."""

from __future__ import annotations

import numpy as np
import pytest
from grad_norm_runs import grads
from gradients_synth import (
    adam_weights,
    check,
    healthy_net,
    make_run,
    required_run,
)


@pytest.mark.parametrize("seed", range(10))
def test_fires_on_a_layer_left_out_of_the_optimizer(seed):
    g, w, u = healthy_net(seed, n=80, m=5)
    u[:, 2] = 0.0
    w[:, 2] = w[0, 2]
    [f] = check("dead_layers", make_run(g, w, u))
    assert f.layers == ("l2.weight", "l2.bias")
    assert f.evidence["layers"]["l2.weight"]["kind"] == "no update"
    assert "optimizer" in f.advice
    assert f.severity == "warning"


def test_silent_on_healthy_nets_for_every_seed():
    assert [s for s in range(100) if check("dead_layers", make_run(*healthy_net(s, n=40, m=4)))] == []


def test_frozen_on_purpose_is_not_reported():
    g, w, u = healthy_net(1, n=80, m=5)
    null = np.zeros(g.shape, dtype=bool)
    null[:, 0] = True  # requires_grad=False: no gradient is ever computed
    u[:, 0] = 0.0
    assert check("dead_layers", make_run(g, w, u, null_grad=null)) == []


def test_fires_on_layers_whose_gradient_dies():
    g, w, u = healthy_net(2, n=100, m=6)
    g[40:, :3] = 0.0  # every unit behind them became a dead ReLU
    u[40:, :3] = 0.0
    [f] = check("dead_layers", make_run(g, w, u, zero_frac=np.where(g == 0, 1.0, 0.1)))
    assert set(f.layers) == {f"l{j}.{k}" for j in range(3) for k in ("weight", "bias")}
    assert f.step == 40
    assert f.evidence["layers"]["l0.weight"]["kind"] == "zero gradient"


def test_a_short_stretch_is_not_dead():
    g, w, u = healthy_net(3, n=100, m=4)
    g[:10, 1] = 0.0  # zero-initialized head: nothing flows for a few steps
    assert check("dead_layers", make_run(g, w, u)) == []


def test_nothing_learning_at_all_is_not_dead_layers():
    g, w, u = healthy_net(4, n=60, m=4)
    assert check("dead_layers", make_run(g, w, np.zeros_like(u))) == []


def test_updates_rounding_to_zero_are_not_dead_layers():
    # SGD with a minute learning rate: the others' updates are ~1e-9 of their
    # weights, so one layer's update rounding to exactly 0 proves nothing.
    g, w, u = healthy_net(5, n=60, m=4, ratio=1e-9)
    u[:, 1] = 0.0
    assert check("dead_layers", make_run(g, w, u)) == []


def test_vanishing_gradient_under_sgd_is_not_a_missing_optimizer_entry():
    g, w, u = healthy_net(6, n=60, m=5)
    g[:, 0] *= 1e-6
    u[:, 0] = 0.0
    assert check("dead_layers", make_run(g, w, u)) == []


def test_without_update_norm_a_bitwise_constant_weight_counts():
    g, w, u = healthy_net(7, n=60, m=4)
    w = w * (1 + 1e-3 * np.arange(60))[:, None]
    w[:, 3] = w[0, 3]
    [f] = check("dead_layers", make_run(g, w, None))
    assert "l3.weight" in f.layers


def test_too_few_steps_say_nothing():
    g, w, u = healthy_net(8, n=3, m=4)
    u[:, 0] = 0
    assert check("dead_layers", make_run(g, w, u)) == []


def test_a_layer_unfrozen_on_schedule_is_not_dead():
    g, w, u = healthy_net(9, n=100, m=4)
    u[:40, 0] = 0.0  # its param group had lr 0 for the first 40% of the run
    assert check("dead_layers", make_run(g, w, u)) == []
    u[:60, 0] = 0.0  # most of the run is too long to shrug off
    assert len(check("dead_layers", make_run(g, w, u))) == 1


def test_a_layer_dying_late_counts_when_it_stays_dead():
    g, w, u = healthy_net(10, n=300, m=4)
    g[210:, 1] = 0.0
    [f] = check("dead_layers", make_run(g, w, u))
    assert f.step == 210


@pytest.mark.parametrize("seed", range(5))
def test_a_layer_whose_own_steps_reached_float32_resolution_and_then_zero_is_not_dead(seed):
    # A deep vanishing stack: the input-side layer's gradient is close to the others' (within
    # the gap), but its updates already sit at ~1e-9 of its weights; they round to 0 from
    # mid-run on. That is rounding, not a layer left out of the optimizer.
    g, w, u = healthy_net(seed, n=120, m=5)
    g[:, 0] *= 1e-2
    u[:, 0] = w[:, 0] * 1e-9
    u[60:, 0] = 0.0
    assert check("dead_layers", make_run(g, w, u)) == []
    # The same layer with ordinary steps before it stopped moving: dead from step 60.
    u[:60, 0] = w[:60, 0] * 1e-3
    [f] = check("dead_layers", make_run(g, w, u))
    assert "l0.weight" in f.layers and f.evidence["layers"]["l0.weight"]["from_step"] == 60


def test_dead_layer_left_out_of_the_optimizer_without_update_norm():
    g = grads(1, n=100)
    w = adam_weights(1, 100, 5, 1e-3)
    w[:, 2] = w[0, 2]  # bit-for-bit the same norm at every record: never updated
    [f] = check("dead_layers", required_run(g, w))
    assert f.layers == ("l2.weight",)
    assert f.evidence["layers"]["l2.weight"]["kind"] == "no update"
    assert "update_norm not logged" in f.evidence["no_update_source"]


def test_dead_layer_with_zero_gradient_without_grad_zero_frac():
    g = grads(2, n=100)
    g[30:, 0] = 0.0
    [f] = check("dead_layers", required_run(g, adam_weights(2, 100, 5, 1e-3)))
    assert f.layers == ("l0.weight",)
    assert f.evidence["layers"]["l0.weight"]["kind"] == "zero gradient"
    assert f.evidence["zero_gradient_source"] == "grad_norm == 0"


def test_dead_layers_silent_on_the_healthy_twin():
    fired = [s for s in range(30) if check("dead_layers", required_run(grads(s, n=60), adam_weights(s, 60, 5, 1e-3)))]
    assert fired == []
