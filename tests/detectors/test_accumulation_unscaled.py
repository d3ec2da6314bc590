"""accumulation_unscaled: updates K times too large with K accumulation steps and SGD."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from bug_fixtures import assert_fixed_twin_silent, leading_finding
from gradients_synth import check, falling_loss, healthy_net, make_run


def test_real_run_names_the_bug_first():
    _, f = leading_finding("accumulation_unscaled-conv1d", "accumulation_unscaled")
    assert f.evidence["accumulation_steps"] == 8
    assert f.evidence["reading"] == "recorder: the logits' gradient"  # recorded with ce_grad_scale


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("accumulation_unscaled-conv1d-fixed", "accumulation_unscaled")


def _run(ratio, config):
    g, w, u = healthy_net(0, n=60, m=4, ratio=ratio)
    run = make_run(g, w, u, loss=falling_loss(0, 60))
    return dataclasses.replace(run, meta={**run.meta, "config": config})


def test_large_updates_with_accumulation_and_sgd_fire():
    [f] = check("accumulation_unscaled", _run(4e-2, {"gradient_accumulation_steps": 8, "optimizer": "SGD"}))
    assert f.evidence["update_ratio_over_k"] < 1e-2


@pytest.mark.parametrize("config", [
    {"gradient_accumulation_steps": 8, "optimizer": "AdamW"},  # Adam's step does not scale with the gradient
    {"optimizer": "SGD"},  # no accumulation
    {"accumulate_grad_batches": 1, "optimizer": "SGD"},
])
def test_other_setups_are_silent(config):
    assert check("accumulation_unscaled", _run(4e-2, config)) == []


def test_healthy_updates_with_accumulation_are_silent():
    assert check("accumulation_unscaled", _run(1e-3, {"accum_steps": 8, "optimizer": "SGD"})) == []


def test_updates_too_large_even_divided_by_k_are_silent():
    """Then the learning rate is too high whatever the accumulation: another finding's job."""
    assert check("accumulation_unscaled", _run(0.5, {"accum_steps": 4, "optimizer": "SGD"})) == []


def test_an_optimizer_it_cannot_place_is_silent():
    assert check("accumulation_unscaled", _run(4e-2, {"gradient_accumulation_steps": 8, "optimizer": "Shampoo"})) == []


def test_no_optimizer_named_reads_as_sgd():
    assert check("accumulation_unscaled", _run(4e-2, {"gradient_accumulation_steps": 8}))


def _recorded(ratio, config, scale, passes=None, amp=None):
    """A run with ordinary-sized steps and the recorder's reading of the logits' gradient."""
    g, w, u = healthy_net(0, n=60, m=4, ratio=ratio)
    scalars = {"ce_grad_scale": np.full(60, np.nan)}
    scalars["ce_grad_scale"][::10] = scale
    if passes is not None:
        scalars["backward_passes"] = np.where(np.isfinite(scalars["ce_grad_scale"]), passes, np.nan)
    if amp is not None:
        scalars["loss_scale"] = np.full(60, amp)
    run = make_run(g, w, u, loss=falling_loss(0, 60), scalars=scalars)
    return dataclasses.replace(run, meta={**run.meta, "config": config})


def test_the_recorder_reading_fires_whatever_the_step_size():
    # Steps of an ordinary size (1e-3 of the weights): the update reading cannot tell; the logits can.
    [f] = check("accumulation_unscaled", _recorded(1e-3, {"gradient_accumulation_steps": 8, "optimizer": "SGD"},
                                                   scale=0.97))
    assert f.evidence["reading"] == "recorder: the logits' gradient"
    assert f.evidence["loss_factor_at_least"] == pytest.approx(0.97)


def test_a_loss_divided_by_k_reads_silent():
    # Silent twin: the bound sits at 1/K.
    assert check("accumulation_unscaled", _recorded(1e-3, {"gradient_accumulation_steps": 8, "optimizer": "SGD"},
                                                    scale=0.125)) == []


def test_k_comes_from_the_recorder_when_the_config_has_none():
    [f] = check("accumulation_unscaled", _recorded(1e-3, {"optimizer": "SGD"}, scale=0.9, passes=4))
    assert f.evidence["accumulation_steps"] == 4 and f.evidence["accumulation_source"].startswith("recorder")
    assert check("accumulation_unscaled", _recorded(1e-3, {"optimizer": "SGD"}, scale=0.9, passes=1)) == []


def test_a_gradscaler_s_factor_is_divided_out():
    # fp16 with a GradScaler at 65536 and a loss divided by 8: the raw reading is 8192, the loss's own 1/8.
    run = _recorded(1e-3, {"gradient_accumulation_steps": 8, "optimizer": "SGD"}, scale=8192.0, amp=65536.0)
    assert check("accumulation_unscaled", run) == []
