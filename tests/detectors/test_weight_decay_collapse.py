"""weight_decay_collapse: weights shrunk to a tenth or less, with a decay budget that explains it."""

from __future__ import annotations

import dataclasses

import numpy as np
from bug_fixtures import assert_fixed_twin_silent, leading_finding
from gradients_synth import check, falling_loss, healthy_net, make_run


def test_real_run_names_the_bug_first_and_leads_its_symptoms():
    diag, f = leading_finding("weight_decay_collapse-mlp", "weight_decay_collapse")
    assert f.evidence["weight_norm_ratio"] < 0.1
    for symptom in diag.findings[1:]:
        if symptom.code in ("underfitting", "unstable", "learning_rate_too_high", "dead_layers"):
            assert symptom.evidence["caused_by"][0] == "weight_decay_collapse"
    assert diag.curve.label == "healthy" or "weight_decay_collapse" in diag.curve.reason


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("weight_decay_collapse-mlp-fixed", "weight_decay_collapse")


def _run(shrink, config):
    g, w, u = healthy_net(0, n=60, m=4)
    w = w * np.linspace(1, shrink, 60)[:, None]
    run = make_run(g, w, u, loss=falling_loss(0, 60))
    return dataclasses.replace(run, meta={**run.meta, "config": config})


def test_collapse_with_strong_decay_fires():
    [f] = check("weight_decay_collapse", _run(1e-3, {"weight_decay": 10.0, "lr": 0.05}))
    assert f.evidence["decay_budget"] > np.log(10)


def test_collapse_without_enough_decay_is_silent():
    """A collapse the decay cannot explain (wd 1e-4 over 60 steps) is not this bug."""
    assert check("weight_decay_collapse", _run(1e-3, {"weight_decay": 1e-4, "lr": 0.05})) == []


def test_strong_decay_without_collapse_is_silent():
    assert check("weight_decay_collapse", _run(0.9, {"weight_decay": 10.0, "lr": 0.05})) == []


def test_nested_optimizer_params_are_read():
    [f] = check("weight_decay_collapse", _run(1e-3, {"optimizer_params": {"weight_decay": 10.0, "lr": 0.05}}))
    assert f.evidence["weight_decay_source"] == "config.optimizer_params.weight_decay"
