"""parameters_without_gradient: trainable parameters whose gradient is never set."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from bug_fixtures import assert_fixed_twin_silent, leading_finding, without_meta_key
from gradients_synth import check, healthy_net, make_run

from runlens.analysis import analyze

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "bugs"


def test_real_run_names_the_bug_first():
    _, f = leading_finding("parameters_without_gradient-bn_cnn", "parameters_without_gradient")
    assert f.evidence["modules"] == ["stem.0", "stem.1"]


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("parameters_without_gradient-bn_cnn-fixed", "parameters_without_gradient")


def test_real_run_without_the_run_json_key_reads_the_layers_table():
    run = without_meta_key("parameters_without_gradient-bn_cnn", "params_without_grad")
    [f] = check("parameters_without_gradient", run)
    assert f.evidence["source"].startswith("layers")
    assert {"stem.0.weight", "stem.0.bias"} <= set(f.evidence["params"])


def test_synthetic_null_first_module_fires():
    g, w, u = healthy_net(0, n=50, m=4)
    null = np.zeros(g.shape, bool)
    null[:, 0] = True
    [f] = check("parameters_without_gradient", make_run(g, w, u, null_grad=null))
    assert set(f.evidence["params"]) == {"l0.weight", "l0.bias"}


def test_synthetic_all_gradients_is_silent_and_frozen_does_not_count():
    g, w, u = healthy_net(0, n=50, m=4)
    assert check("parameters_without_gradient", make_run(g, w, u)) == []
    null = np.zeros(g.shape, bool)
    null[:, 0] = True
    run = make_run(g, w, u, null_grad=null)
    frozen = [{**e, "trainable": not e["name"].startswith("l0.")} for e in run.meta["layers"]]
    assert check("parameters_without_gradient", dataclasses.replace(run, meta={"layers": frozen})) == []


def test_run_json_empty_list_is_silent():
    g, w, u = healthy_net(0, n=50, m=4)
    run = make_run(g, w, u)
    assert check("parameters_without_gradient",
                 dataclasses.replace(run, meta={**run.meta, "params_without_grad": []})) == []


def test_a_listed_parameter_that_got_a_gradient_later_is_silent():
    """A two-phase fine-tune: the backbone had no gradient while frozen, then got one."""
    g, w, u = healthy_net(0, n=50, m=4)
    null = np.zeros(g.shape, bool)
    null[:25, 0] = True
    run = make_run(g, w, u, null_grad=null)
    listed = dataclasses.replace(run, meta={**run.meta, "params_without_grad": ["l0.weight", "l0.bias"]})
    assert check("parameters_without_gradient", listed) == []


def test_real_two_phase_unfreeze_is_silent():
    """The stem frozen for three epochs, then trained: neither missing a gradient nor outside the optimizer."""
    codes = {f.code for f in analyze(FIX / "control-two_phase_unfreeze-bn_cnn").findings}
    assert not codes & {"parameters_without_gradient", "parameters_not_in_optimizer"}, codes
