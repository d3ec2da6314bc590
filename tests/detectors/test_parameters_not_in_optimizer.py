"""parameters_not_in_optimizer: trainable parameters in no param group."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from bug_fixtures import assert_fixed_twin_silent, leading_finding, without_meta_key
from gradients_synth import check, healthy_net, make_run

from runlens.detectors import Skip

LR = {"lr": np.full(50, 0.01)}


def test_real_run_names_the_bug_first():
    _, f = leading_finding("parameters_not_in_optimizer-decoder", "parameters_not_in_optimizer")
    assert f.evidence["modules"] == ["head"]


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("parameters_not_in_optimizer-decoder-fixed", "parameters_not_in_optimizer")


def test_real_run_without_the_run_json_key_reads_the_constant_weights():
    key = "params_outside_optimizer"
    [f] = check("parameters_not_in_optimizer", without_meta_key("parameters_not_in_optimizer-decoder", key))
    assert "head.weight" in f.evidence["params"]
    fixed = without_meta_key("parameters_not_in_optimizer-decoder-fixed", key)
    assert check("parameters_not_in_optimizer", fixed) == []


def test_synthetic_constant_weight_with_gradient_fires():
    g, w, u = healthy_net(0, n=50, m=4)
    w[:, 2] = w[0, 2]  # bit-for-bit the same norm on every row, while its gradient is healthy
    [f] = check("parameters_not_in_optimizer", make_run(g, w, scalars=LR))
    assert "l2.weight" in f.evidence["params"]


def test_synthetic_moving_weights_are_silent():
    g, w, u = healthy_net(0, n=50, m=4)
    assert check("parameters_not_in_optimizer", make_run(g, w, scalars=LR)) == []


def test_a_vanishing_gradient_that_cannot_move_the_weight_is_silent():
    g, w, u = healthy_net(0, n=50, m=4)
    w[:, 0] = w[0, 0]
    g[:, 0] = 1e-12  # non-zero, but lr x g moves nothing visible in float32
    assert check("parameters_not_in_optimizer", make_run(g, w, scalars=LR)) == []


def test_a_tiny_rate_whose_steps_leave_the_norm_within_rounding_is_silent():
    # lr 1e-5 moves the matrix by at most 5e-4 of its norm over the run, mostly orthogonally: its
    # norm changes by ~(5e-4)^2 / 2, under float32 rounding. That is a learning rate too low, not a
    # parameter left out.
    g, w, u = healthy_net(0, n=50, m=4)
    w[:, 0] = w[0, 0]
    g[:, 0] = w[0, 0]  # relative gradient 1: SGD would move it 5e-4 of its norm over the 50 steps
    assert check("parameters_not_in_optimizer", make_run(g, w, scalars={"lr": np.full(50, 1e-5)})) == []


def test_without_a_learning_rate_the_layers_reading_skips():
    g, w, u = healthy_net(0, n=50, m=4)
    with pytest.raises(Skip, match="learning rate"):
        check("parameters_not_in_optimizer", make_run(g, w))


def test_run_json_list_decides():
    g, w, u = healthy_net(0, n=50, m=4)
    w[:, 3] = w[0, 3]
    run = make_run(g, w)
    [f] = check("parameters_not_in_optimizer",
                dataclasses.replace(run, meta={**run.meta, "params_outside_optimizer": ["l3.weight"]}))
    assert f.evidence["source"] == "run.json params_outside_optimizer"
    assert check("parameters_not_in_optimizer",
                 dataclasses.replace(run, meta={**run.meta, "params_outside_optimizer": []})) == []


def test_a_listed_parameter_whose_weights_moved_is_silent():
    """Added to the optimizer after an unfreeze: listed at the start, but its weights did change."""
    g, w, u = healthy_net(0, n=50, m=4)
    run = make_run(g, w, scalars=LR)
    listed = dataclasses.replace(run, meta={**run.meta, "params_outside_optimizer": ["l0.weight"]})
    assert check("parameters_not_in_optimizer", listed) == []
