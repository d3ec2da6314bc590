"""The gradient detectors beyond MLPs: recurrent nets, normalization, attention, deep tanh
stacks, embeddings; explosions that end a run, one-step spikes, short logs; firing and silent twins."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from gradients_synth import check, falling_loss, healthy_net, make_run

from runlens.detectors import Skip
from runlens.io.run import Run


def noisy(level, n, seed, sd=0.15):
    return 10 ** (level + sd * np.random.default_rng(seed).standard_normal(n))


def with_grad_norm(gn, *, seed=0, m=4):
    g, w, u = healthy_net(seed, n=len(gn), m=m)
    return make_run(g, w, u, loss=falling_loss(seed, len(gn)), scalars={"grad_norm": gn})


def param_run(names, shapes, grad, weight, update=None, loss=None):
    """A run with arbitrary parameter names/shapes (steps x params matrices)."""
    n, m = grad.shape
    meta = [{"name": nm, "index": j, "module": nm.rsplit(".", 1)[0], "shape": sh,
             "numel": int(np.prod(sh))} for j, (nm, sh) in enumerate(zip(names, shapes, strict=True))]
    cols = {"step": np.repeat(np.arange(n), m), "layer": pa.array(list(names) * n).dictionary_encode(),
            "grad_norm": pa.array(grad.ravel(), pa.float32()), "weight_norm": pa.array(weight.ravel(), pa.float32())}
    if update is not None:
        cols["update_norm"] = pa.array(update.ravel(), pa.float32())
    loss = falling_loss(0, n) if loss is None else loss
    sc = pa.table({"step": np.arange(n), "time": np.arange(n, dtype=float), "loss": loss})
    return Run(path="x", meta={"layers": meta}, status="finished", scalars=sc, layers=pa.table(cols))


# -- explosions that end a run (a recurrent net's last steps) ------------------

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


# -- single-step spikes ----------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
def test_an_isolated_1000x_spike_is_flagged(seed):
    n = 500
    gn = noisy(np.zeros(n), n, seed)
    gn[250] *= 1000
    [f] = check("grad_norm_spike", with_grad_norm(gn, seed=seed))
    assert f.step == 250 and f.evidence["ratio"] >= 300 and f.evidence["spikes"] == 1


@pytest.mark.parametrize("seed", range(10))
def test_no_spike_in_heavy_noise_or_a_lasting_level_change(seed):
    n = 500
    assert check("grad_norm_spike", with_grad_norm(noisy(np.zeros(n), n, seed, sd=0.4), seed=seed)) == []
    step = noisy(np.where(np.arange(n) < 250, 0.0, 3.0), n, seed)
    assert check("grad_norm_spike", with_grad_norm(step, seed=seed)) == []


def test_spike_in_a_dozen_line_log_says_how_few_points():
    gn = noisy(np.zeros(12), 12, 0)
    gn[6] *= 1000
    [f] = check("grad_norm_spike", with_grad_norm(gn))
    assert f.evidence["points"] == 12 and "only 12 points" in f.title
    gn[6] /= 1000
    assert check("grad_norm_spike", with_grad_norm(gn)) == []


def test_spike_needs_a_few_points():
    with pytest.raises(Skip, match="at least 4"):
        check("grad_norm_spike", with_grad_norm(np.array([1.0, 1e3, 1.0])))


def test_nonfinite_gradient_in_a_dozen_line_log():
    gn = noisy(np.zeros(12), 12, 0)
    gn[7] = np.nan
    [f] = check("nonfinite_gradient", with_grad_norm(gn))
    assert f.step == 7 and f.evidence["logged_steps"] == 12


# -- deep tanh / sigmoid stacks, normalization, attention, embeddings ------------

def _profile_net(levels, n=200, seed=0):
    """grad, weight, update of modules whose log10 gradients sit at ``levels``."""
    m = len(levels)
    rng = np.random.default_rng(seed)
    logg = np.asarray(levels)[None, :] + 0.15 * rng.standard_normal((n, m))
    w = np.full((n, m), 8.0)
    return 10 ** logg, w, w * 1e-3


@pytest.mark.parametrize("depth", [5, 8, 12])
def test_deep_tanh_stack_first_layer_a_millionth_of_the_last(depth):
    g, w, u = _profile_net(np.linspace(-6, 0, depth))
    [f] = check("vanishing_gradients", make_run(g, w, u))
    assert f.evidence["decades"] >= 4


@pytest.mark.parametrize("depth", [5, 8, 12])
def test_deep_stack_with_a_flat_profile_is_silent(depth):
    g, w, u = _profile_net(np.zeros(depth) + np.random.default_rng(depth).normal(0, 0.3, depth))
    assert check("vanishing_gradients", make_run(g, w, u)) == []


def _transformer(n, blocks, vanish):
    """Embedding, blocks of (attn q/k/v/o, LayerNorm weight+bias, mlp), head; log10 grads by block."""
    names, shapes, levels = ["embed.weight"], [[1000, 64]], [-1.5]  # sparse rows: a small embedding gradient
    for b in range(blocks):
        lvl = -vanish * (blocks - 1 - b) / max(blocks - 1, 1)
        for p in ("q", "k", "v", "o"):
            names.append(f"blocks.{b}.attn.{p}.weight")
            shapes.append([64, 64])
            levels.append(lvl - 0.3)
        names += [f"blocks.{b}.ln.weight", f"blocks.{b}.ln.bias", f"blocks.{b}.mlp.weight"]
        shapes += [[64], [64], [256, 64]]
        levels += [lvl - 2.0, lvl - 2.2, lvl]  # norm gains: tiny vectors, decades below the matrices
    names.append("head.weight")
    shapes.append([10, 64])
    levels.append(0.0)
    g, w, u = _profile_net(levels, n=n)
    return param_run(names, shapes, g, w, u)


def test_transformer_with_layernorm_attention_and_embedding_is_silent():
    assert check("vanishing_gradients", _transformer(200, 6, vanish=0.0)) == []
    assert check("dead_layers", _transformer(200, 6, vanish=0.0)) == []


def test_transformer_whose_blocks_vanish_toward_the_input_fires():
    [f] = check("vanishing_gradients", _transformer(200, 6, vanish=5.0))
    assert f.evidence["decades"] >= 3


def test_recurrent_cell_weights_form_one_module():
    # weight_ih/weight_hh/bias of one LSTM layer combine into one module per layer of the stack.
    n, layers = 200, 5
    names, shapes, levels = [], [], []
    for k in range(layers):
        for p, sh in (("weight_ih_l0", [256, 64]), ("weight_hh_l0", [256, 64]), ("bias_ih_l0", [256])):
            names.append(f"rnn{k}.{p}")
            shapes.append(sh)
            levels.append(-1.5 * (layers - 1 - k) - (2 if "bias" in p else 0))
    g, w, u = _profile_net(levels, n=n)
    [f] = check("vanishing_gradients", param_run(names, shapes, g, w, u))
    assert f.evidence["modules"] == layers


# -- learning rate too high needs evidence of the step size --------------------

def _unstable(n, ratio, *, with_update=True, seed=0):
    g, w, u = healthy_net(seed, n=n, m=4, ratio=ratio)
    if not with_update:
        # weights that move by `ratio` of their norm each step, in alternating directions
        w = w * (1 + ratio * np.where(np.arange(n) % 2 == 0, 1, -1))[:, None]
        u = None
    return make_run(g, w, u, loss=falling_loss(seed, n))


def test_unstable_with_updates_above_the_weight_norm_fires():
    [f] = check("learning_rate_too_high", _unstable(300, 2.0), curve="unstable")
    assert f.evidence["median_update_ratio"] > 1 and f.evidence["update_source"] == "update_norm"


def test_unstable_with_ordinary_updates_is_silent():
    assert check("learning_rate_too_high", _unstable(300, 1e-3), curve="unstable") == []


def test_without_update_norm_the_weight_norm_change_is_the_evidence():
    [f] = check("learning_rate_too_high", _unstable(300, 0.3, with_update=False), curve="unstable")
    assert f.evidence["update_source"] == "weight_norm_change"
    assert check("learning_rate_too_high", _unstable(300, 1e-4, with_update=False), curve="unstable") == []


def test_never_raised_without_update_size_evidence():
    run = Run(path="x", meta={}, status="finished",
              scalars=pa.table({"step": np.arange(300), "loss": falling_loss(0, 300)}))
    with pytest.raises(Skip, match="step size"):
        check("learning_rate_too_high", run, curve="unstable")


@pytest.mark.parametrize("seed", range(5))
def test_a_start_transient_of_a_long_run_is_no_spike(seed):
    n = 5000
    # the first steps sit 30-300x above the level the run settles at: a start transient, not a spike
    level = np.r_[[2.0, 1.5, 1.5, 2.5], np.zeros(n - 4)]
    assert check("grad_norm_spike", with_grad_norm(noisy(level, n, seed), seed=seed)) == []
