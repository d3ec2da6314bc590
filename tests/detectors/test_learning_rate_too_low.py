"""learning_rate_too_low: tiny updates with healthy gradients and a flat loss."""

from __future__ import annotations

import numpy as np
import pytest
from grad_norm_runs import grads
from gradients_synth import (
    adam_weights,
    check,
    falling_loss,
    flat_loss,
    healthy_net,
    make_run,
    required_run,
    sgd_weights,
)

from runlens.detectors import Skip


@pytest.mark.parametrize("seed", range(20))
def test_fires_on_tiny_updates_and_a_flat_loss(seed):
    g, w, u = healthy_net(seed, n=80, m=5, ratio=1e-6)
    [f] = check("learning_rate_too_low", make_run(g, w, u, loss=flat_loss(seed, 80)))
    assert f.evidence["median_update_ratio"] < 1e-5
    assert "< 1e-04" in f.title
    assert f.severity == "warning"


@pytest.mark.parametrize("ratio", [1e-3, 3e-4])
def test_silent_with_healthy_updates_for_every_seed(ratio):
    fired = [s for s in range(100) if check(
        "learning_rate_too_low", make_run(*healthy_net(s, n=30, m=4, ratio=ratio), loss=flat_loss(s, 30)))]
    assert fired == []


def test_silent_when_the_loss_fell_a_lot():
    g, w, u = healthy_net(1, n=80, m=5, ratio=1e-6)
    assert check("learning_rate_too_low", make_run(g, w, u, loss=falling_loss(1, 80))) == []


def test_underfitting_curve_counts_as_barely_moving():
    g, w, u = healthy_net(2, n=80, m=5, ratio=1e-6)
    loss = np.linspace(2.3, 1.8, 80)  # -22%: the curve detector said underfitting
    assert check("learning_rate_too_low", make_run(g, w, u, loss=loss)) == []
    assert len(check("learning_rate_too_low", make_run(g, w, u, loss=loss), curve="underfitting")) == 1


def test_diverged_curve_is_not_a_low_learning_rate():
    g, w, u = healthy_net(3, n=80, m=5, ratio=1e-6)
    assert check("learning_rate_too_low", make_run(g, w, u, loss=flat_loss(3, 80)), curve="diverged") == []


def test_vanishing_profile_is_left_to_vanishing_gradients():
    g, w, u = healthy_net(4, n=80, m=6, ratio=1e-6)
    g *= 10 ** (-0.8 * (5 - np.arange(6)))
    assert check("learning_rate_too_low", make_run(g, w, u, loss=flat_loss(4, 80))) == []


def test_a_layer_without_gradient_is_not_a_learning_rate():
    g, w, u = healthy_net(5, n=80, m=5, ratio=1e-6)
    g[:, 1] = 0.0
    assert check("learning_rate_too_low", make_run(g, w, u, loss=flat_loss(5, 80))) == []


def test_updates_rounded_to_zero_count_as_tiny():
    g, w, u = healthy_net(6, n=80, m=5)
    assert len(check("learning_rate_too_low", make_run(g, w, np.zeros_like(u), loss=flat_loss(6, 80)))) == 1


def test_uniformly_small_gradient_with_normal_updates_is_silent():
    # Adam normalizes the step: a small gradient everywhere does not mean small updates.
    g, w, u = healthy_net(7, n=80, m=5, ratio=1e-3)
    assert check("learning_rate_too_low", make_run(g * 1e-8, w, u, loss=flat_loss(7, 80))) == []


def test_without_update_norm_it_is_skipped():
    g, w, _ = healthy_net(8, n=20, m=4)
    with pytest.raises(Skip):
        check("learning_rate_too_low", make_run(g, w, None, loss=flat_loss(8, 20)))


@pytest.mark.parametrize("seed", range(5))
def test_lr_too_low_fires_from_logged_lr_under_plain_sgd(seed):
    g = grads(seed)
    run = required_run(g, sgd_weights(seed, g, 1e-4), loss=flat_loss(seed, 120), lr=1e-4)
    [f] = check("learning_rate_too_low", run)
    assert f.evidence["update_source"] == "lr_x_grad_norm"
    assert f.evidence["optimizer_assumed"] == "sgd (inferred)"
    assert f.evidence["lr_source"] == "scalars.lr"
    assert "estimated as lr x gradient norm" in f.title
    assert f.evidence["median_update_ratio"] < 1e-4


@pytest.mark.parametrize("seed", range(5))
def test_lr_too_low_silent_on_the_healthy_sgd_twin(seed):
    g = grads(seed)
    run = required_run(g, sgd_weights(seed, g, 0.05), loss=flat_loss(seed, 120), lr=0.05)
    assert check("learning_rate_too_low", run) == []


@pytest.mark.parametrize("seed", range(10))
def test_lr_too_low_silent_on_adam_at_a_normal_rate_with_a_flat_loss(seed):
    # lr x ||g|| / ||w|| is ~1e-5 here, but the weight norms move faster than plain
    # SGD allows, so the Adam bound (lr x sqrt(numel)) is used and it is not tiny.
    g = grads(seed)
    run = required_run(g, adam_weights(seed, 120, 5, 1e-3), loss=flat_loss(seed, 120), lr=1e-3)
    assert check("learning_rate_too_low", run) == []


def test_lr_too_low_uses_the_adam_bound_when_the_config_names_adam():
    g = grads(3)
    run = required_run(g, adam_weights(3, 120, 5, 1e-7), loss=flat_loss(3, 120), lr=1e-7,
                       config={"optimizer": "AdamW"})
    [f] = check("learning_rate_too_low", run)
    assert f.evidence["update_source"] == "lr_x_sqrt_numel"
    assert f.evidence["optimizer_assumed"] == "adam"


def test_lr_too_low_takes_a_constant_lr_from_the_config():
    g = grads(4)
    run = required_run(g, sgd_weights(4, g, 1e-4), loss=flat_loss(4, 120), config={"optimizer": "SGD", "lr": 1e-4})
    [f] = check("learning_rate_too_low", run)
    assert f.evidence["lr_source"].startswith("config.lr")


def test_lr_too_low_without_any_learning_rate_is_skipped_and_says_why():
    g = grads(5)
    with pytest.raises(Skip, match="learning rate"):
        check("learning_rate_too_low", required_run(g, sgd_weights(5, g, 1e-4), loss=flat_loss(5, 120)))


def test_lr_too_low_without_shapes_cannot_bound_a_non_sgd_optimizer():
    g = grads(6)
    run = required_run(g, adam_weights(6, 120, 5, 1e-3), loss=flat_loss(6, 120), lr=1e-3, shapes=False)
    with pytest.raises(Skip, match="numel"):
        check("learning_rate_too_low", run)


def test_silent_when_one_module_steps_by_a_large_share_of_its_weights():
    # A loss summed over the batch: the head moves by half its norm a step while the body's steps stay
    # tiny. The median module looks starved; a higher rate would only make the head's steps larger.
    g, w, u = healthy_net(5, n=80, m=5, ratio=1e-6)
    loud = u.copy()
    loud[:, -1] = 0.6 * w[:, -1]
    assert check("learning_rate_too_low", make_run(g, w, loud, loss=flat_loss(5, 80))) == []
    # Its twin: the same run with every module's steps tiny still fires.
    assert len(check("learning_rate_too_low", make_run(g, w, u, loss=flat_loss(5, 80)))) == 1
