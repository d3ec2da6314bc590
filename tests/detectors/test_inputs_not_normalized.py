"""inputs_not_normalized: the first layer's relative gradient decades off at the start."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from gradients_synth import check, falling_loss, healthy_net, make_run

from runlens.analysis import analyze

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "bugs"


def test_real_run_names_the_bug_first():
    diag = analyze(FIX / "inputs_not_normalized-mlp")
    f = diag.findings[0]
    assert f.code == "inputs_not_normalized"
    assert f.evidence["first_relative_grad"] > 100


def test_real_fixed_twin_is_silent():
    diag = analyze(FIX / "inputs_not_normalized-mlp-fixed")
    assert "inputs_not_normalized" not in {f.code for f in diag.findings}


@pytest.mark.parametrize("seed", range(5))
def test_first_layer_decades_above_the_rest_fires(seed):
    g, w, u = healthy_net(seed, n=60, m=5)
    g[:, 0] *= 1e3  # a normalization layer after the first keeps the rest on scale
    [f] = check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 60)))
    assert f.evidence["gap_decades"] > 2


@pytest.mark.parametrize("seed", range(10))
def test_healthy_nets_are_silent(seed):
    g, w, u = healthy_net(seed, n=60, m=5)
    assert check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 60))) == []


def test_every_layer_scaled_with_a_huge_first_loss_fires_only_with_classes():
    g, w, u = healthy_net(0, n=60, m=5)
    g = w * 1e4 * g / np.median(g)  # relative gradients of ~1e4 everywhere, as a ReLU net on raw inputs has
    loss = np.full(60, 3e3)
    run = make_run(g, w, u, loss=loss)
    assert check("inputs_not_normalized", run) == []  # K unknown: the loss level means nothing
    [f] = check("inputs_not_normalized", dataclasses.replace(run, meta={**run.meta, "config": {"num_classes": 4}}))
    assert f.evidence["first_loss_over_chance"] > 10


def test_embedding_first_is_silent():
    g, w, u = healthy_net(0, n=60, m=5)
    g[:, 0] *= 1e3
    run = make_run(g, w, u, loss=falling_loss(0, 60))
    layers = [{**e, "kind": "Embedding"} if e["module"] == "l0" else e for e in run.meta["layers"]]
    assert check("inputs_not_normalized", dataclasses.replace(run, meta={"layers": layers})) == []
