"""exploding_gradients: growth, blow-up, and the steady or numerical twins."""

from __future__ import annotations

import numpy as np
import pytest
from grad_norm_runs import grads, noisy, with_grad_norm
from gradients_synth import (
    adam_weights,
    check,
    falling_loss,
    healthy_net,
    make_run,
    required_run,
    sgd_weights,
)

from runlens.detectors import Skip
from runlens.testing import build_run


def scalar_run(grad_norm, *, loss=None, step_skipped=None, weights=None):
    n = len(grad_norm)
    g, w, u = healthy_net(0, n=n, m=4) if weights is None else weights
    if weights is None:  # the per-layer gradients move with the global norm
        g = g * np.nan_to_num(np.asarray(grad_norm, dtype=float), nan=1.0, posinf=1.0)[:, None]
    sc = {"grad_norm": grad_norm}
    loss = falling_loss(0, n) if loss is None else loss
    if step_skipped is not None:
        sc["step_skipped"] = step_skipped
    return make_run(g, w, u, loss=loss, scalars=sc)


@pytest.mark.parametrize("seed", range(10))
def test_fires_on_sustained_growth(seed):
    n = 300
    g = noisy(np.linspace(0, 4, n), n, seed)
    [f] = check("exploding_gradients", scalar_run(g))
    assert f.severity == "error"
    assert f.evidence["growth_decades"] >= 3
    assert f.evidence["kendall_p"] < 1e-6
    assert "decades over the run (>= 2" in f.title


def test_silent_on_steady_high_gradients_for_every_seed():
    fired = [s for s in range(100) if check("exploding_gradients", scalar_run(noisy(4.0, 150, s, sd=0.3)))]
    assert fired == []


@pytest.mark.parametrize("seed", range(10))
def test_silent_on_a_healthy_rise_of_under_two_decades(seed):
    n = 300
    level = np.concatenate([np.linspace(-1, 0.5, n // 2), np.full(n - n // 2, 0.5)])
    assert check("exploding_gradients", scalar_run(noisy(level, n, seed))) == []


def test_fires_when_growth_ends_in_a_blowup():
    g = noisy(np.zeros(100), 100, 1)
    g[95:100] = [1e1, 1e2, 1e3, 1e5, np.inf]
    loss = falling_loss(1, 100)
    [f] = check("exploding_gradients", scalar_run(g, loss=loss))
    assert f.step == 99 and f.evidence["rise_decades"] >= 4


def test_numerical_nan_with_healthy_gradients_is_not_an_explosion():
    g = noisy(np.zeros(100), 100, 2)
    g[60:] = np.nan
    loss = falling_loss(2, 100)
    loss[60:] = np.nan
    assert check("exploding_gradients", scalar_run(g, loss=loss), first_nonfinite=60) == []


def test_skipped_mixed_precision_steps_are_not_a_blowup():
    g = noisy(np.zeros(200), 200, 3)
    skipped = np.zeros(200)
    g[::40] = np.inf
    skipped[::40] = 1
    assert check("exploding_gradients", scalar_run(g, step_skipped=skipped)) == []


def test_fires_on_a_first_step_gradient_that_dwarfs_the_weights():
    n = 3
    gw = healthy_net(0, n=n, m=4)
    g = np.array([1e10, np.nan, np.nan])
    loss = np.array([6.0, np.nan, np.nan])
    [f] = check("exploding_gradients", scalar_run(g, loss=loss, weights=gw), first_nonfinite=1)
    assert f.evidence["grad_to_weight"] > 1e6


def test_falls_back_to_per_layer_norms():
    n = 200
    g, w, u = healthy_net(5, n=n, m=4, noise=0.1)
    g *= 10 ** np.linspace(0, 3.5, n)[:, None]
    [f] = check("exploding_gradients", make_run(g, w, u))
    assert f.evidence["source"] == "layers.grad_norm"


def test_long_runs_are_bucketed():
    n = 100_000
    [f] = check("exploding_gradients", scalar_run(noisy(np.linspace(0, 3, n), n, 6), weights=healthy_net(0, 2, 3)))
    assert f.evidence["points_tested"] <= 500


def test_no_gradient_norm_at_all_is_skipped():
    run = build_run(tables={"scalars": {"step": [0, 1], "loss": [1.0, 0.9]}}, meta={}, name="x")
    with pytest.raises(Skip):
        check("exploding_gradients", run)


def test_fires_on_a_jump_after_the_first_update_that_holds():
    # Adam at lr=1: the first step throws the weights out; the gradient jumps
    # five decades and decays only slowly, so no early window saw it low.
    n = 200
    g = noisy(np.linspace(5.5, 4.0, n), n, 7, sd=0.2)
    g[0] = 2.0
    [f] = check("exploding_gradients", scalar_run(g))
    assert f.evidence["jump_decades"] >= 4
    assert "above its first value (>= 3)" in f.title


@pytest.mark.parametrize("seed", range(10))
def test_lone_spikes_are_not_a_jump(seed):
    n = 200
    g = noisy(np.zeros(n), n, seed)
    g[[50, 120, 121]] = 1e5  # isolated spikes: the rolling median does not move
    assert check("exploding_gradients", scalar_run(g)) == []


def test_a_numerical_nan_right_after_the_start_is_not_an_explosion():
    gw = healthy_net(0, n=3, m=4)  # weights ~3-30, gradients ~1
    g = np.array([1.3, np.nan, np.nan])
    loss = np.array([2.3, np.nan, np.nan])
    assert check("exploding_gradients", scalar_run(g, loss=loss, weights=gw), first_nonfinite=1) == []


def test_growth_of_a_gradient_that_is_never_applied_is_not_an_explosion():
    # Layer 0 is left out of the optimizer: its gradient grows as the layers
    # after it grow, but nothing applies it; the learning layers are steady.
    n = 300
    g, w, u = healthy_net(11, n=n, m=4, noise=0.1)
    g[:, 0] *= 10 ** np.linspace(0, 4, n)
    u[:, 0] = 0.0
    total = np.sqrt((g ** 2).sum(axis=1) + ((g / 30) ** 2).sum(axis=1))
    run = make_run(g, w, u, loss=falling_loss(11, n), scalars={"grad_norm": total})
    assert check("exploding_gradients", run) == []
    u[:, 0] = u[:, 1]  # the same growth in a layer that is updated is an explosion
    run = make_run(g, w, u, loss=falling_loss(11, n), scalars={"grad_norm": total})
    assert len(check("exploding_gradients", run)) == 1


@pytest.mark.parametrize("seed", range(4))
def test_a_log_ending_on_one_exploded_step_that_reached_the_loss_is_a_surge(seed):
    # A watchdog stopped the run on the step whose gradient norm passed 1e7: the one before it
    # was ordinary, and the loss of that last step is six orders of magnitude up.
    grad = np.append(noisy(0.2, 300, seed), 1e7)
    loss = np.append(falling_loss(seed, 300), 1e6)
    (f,) = check("exploding_gradients", scalar_run(grad, loss=loss))
    assert f.evidence["points_in_surge"] == 1 and f.evidence["surge_decades"] > 6, f


@pytest.mark.parametrize("seed", range(4))
def test_one_exploded_last_gradient_with_an_ordinary_loss_is_not_a_surge(seed):
    grad = np.append(noisy(0.2, 300, seed), 1e7)
    loss = falling_loss(seed, 301)
    assert check("exploding_gradients", scalar_run(grad, loss=loss)) == []


@pytest.mark.parametrize("seed", range(5))
def test_recurrent_explosion_in_the_last_steps_fires(seed):
    n = 400
    gn = noisy(np.zeros(n), n, seed)
    gn[-5:] = np.geomspace(10, 1e10, 5)  # ten decades in five steps, no NaN: the run was killed there
    [f] = check("exploding_gradients", with_grad_norm(gn, seed=seed))
    assert f.evidence["surge_decades"] >= 9
    assert n - 5 <= f.step <= n - 4


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_without_the_final_surge(seed):
    n = 400
    assert check("exploding_gradients", with_grad_norm(noisy(np.zeros(n), n, seed), seed=seed)) == []


def test_one_big_final_point_is_not_a_surge():
    gn = noisy(np.zeros(400), 400, 1)
    gn[-1] = 1e6
    assert check("exploding_gradients", with_grad_norm(gn)) == []


def test_exploding_fires_from_layer_norms_alone():
    g = grads(0, n=300) * 10 ** np.linspace(0, 4, 300)[:, None]
    [f] = check("exploding_gradients", required_run(g, sgd_weights(0, g, 1e-4), loss=falling_loss(0, 300)))
    assert f.evidence["source"] == "layers.grad_norm"
    assert f.evidence["growth_decades"] >= 3


def test_exploding_silent_on_the_healthy_twin():
    g = grads(0, n=300)
    assert check("exploding_gradients", required_run(g, sgd_weights(0, g, 1e-2), loss=falling_loss(0, 300))) == []


def test_exploding_ignores_a_growing_gradient_that_no_update_applies():
    # Layer 0 is left out of the optimizer (its weight norm never changes) and
    # its gradient grows 4 decades; the updated layers are steady.
    n = 300
    g = grads(11, n=n, m=4)
    w = adam_weights(11, n, 4, 1e-3)
    g[:, 0] *= 10 ** np.linspace(0, 4, n)
    w[:, 0] = w[0, 0]
    assert check("exploding_gradients", required_run(g, w, loss=falling_loss(11, n))) == []
    w = adam_weights(11, n, 4, 1e-3)  # the same growth in a layer that is updated is an explosion
    assert len(check("exploding_gradients", required_run(g, w, loss=falling_loss(11, n)))) == 1
