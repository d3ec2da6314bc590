"""vanishing_gradients: firing cases and their healthy twins on synthetic nets."""

from __future__ import annotations

import numpy as np
import pytest
from grad_norm_runs import grads
from gradients_synth import (
    check,
    falling_loss,
    flat_loss,
    healthy_net,
    make_run,
    required_run,
    sgd_weights,
)

from runlens.detectors import Skip
from runlens.testing import build_run


def vanishing_net(seed: int, n: int = 100, m: int = 8, per_layer: float = 0.5, noise: float = 0.15):
    rng = np.random.default_rng(seed)
    level = -per_layer * (m - 1 - np.arange(m)) + rng.normal(0, 0.1, m)
    logg = level + noise * rng.standard_normal((n, m))
    w = np.full((n, m), 8.0) * 10 ** rng.normal(0, 0.1, m)
    return 10 ** logg, w, w * 1e-3


@pytest.mark.parametrize("seed", range(20))
def test_fires_on_a_profile_falling_toward_the_input(seed):
    g, w, u = vanishing_net(seed)
    [f] = check("vanishing_gradients", make_run(g, w, u))
    assert f.severity == "warning"
    assert f.evidence["decades"] >= 2.0
    assert f.evidence["kendall_p"] < 0.01
    assert "l0.weight" in f.layers and "l7.weight" not in f.layers
    assert "decades from the loss to the input (>= 2" in f.title


def test_silent_on_healthy_nets_for_every_seed():
    fired = [s for s in range(100)
             if check("vanishing_gradients", make_run(*healthy_net(s, n=60), biases=False))]
    assert fired == []


@pytest.mark.parametrize("seed", range(10))
def test_uniformly_small_gradient_is_not_vanishing(seed):
    g, w, u = healthy_net(seed, n=60)
    assert check("vanishing_gradients", make_run(g * 1e-9, w, u * 1e-6)) == []


def test_one_odd_input_layer_is_not_a_trend():
    g, w, u = healthy_net(3, n=60)
    g[:, 0] *= 1e-4  # an embedding with a tiny, sparse gradient
    assert check("vanishing_gradients", make_run(g, w, u)) == []


def test_needs_a_monotone_profile_with_few_modules():
    g, w, u = vanishing_net(0, m=3, per_layer=1.5)
    assert len(check("vanishing_gradients", make_run(g, w, u))) == 1
    g[:, [1, 2]] = g[:, [2, 1]]  # not monotone any more
    assert check("vanishing_gradients", make_run(g, w, u)) == []


def test_two_modules_are_skipped():
    g, w, u = vanishing_net(0, m=2, per_layer=3)
    with pytest.raises(Skip):
        check("vanishing_gradients", make_run(g, w, u))


def test_a_gap_seen_only_briefly_is_not_enough():
    g, w, u = vanishing_net(1)
    hg, _, _ = healthy_net(1, n=100)
    g[10:] = hg[10:]  # vanishing for the first 10% of steps only
    assert check("vanishing_gradients", make_run(g, w, u)) == []


def test_fires_when_an_adaptive_optimizer_repairs_a_deep_profile_late():
    g, w, u = vanishing_net(7, n=200, per_layer=0.8)
    hg, _, _ = healthy_net(7, n=200)
    g[80:] = hg[80:]  # 5.6 decades for the first 40% of the run, then fixed
    [f] = check("vanishing_gradients", make_run(g, w, u))
    assert f.evidence["step_range"][1] < 80
    assert "(>= 4;" in f.title


def test_a_shallow_profile_in_part_of_the_run_is_not_enough():
    g, w, u = vanishing_net(8, n=200, per_layer=0.4)
    hg, _, _ = healthy_net(8, n=200)
    g[80:] = hg[80:]  # 2.8 decades, but only for the first 40%: Adam made it harmless
    assert check("vanishing_gradients", make_run(g, w, u)) == []


def test_widths_alone_do_not_fire():
    # Gradients rise toward the loss exactly as the weight norms do: ||g||/||w|| is flat.
    g, w, u = vanishing_net(2)
    w = g * 100
    assert check("vanishing_gradients", make_run(g, w, w * 1e-3)) == []


def test_ignores_steps_after_a_nonfinite_loss():
    hg, w, u = healthy_net(4, n=100)
    vg, _, _ = vanishing_net(4)
    g = np.vstack([hg[:30], vg[30:]])
    assert check("vanishing_gradients", make_run(g, w, u), first_nonfinite=30) == []
    assert len(check("vanishing_gradients", make_run(g, w, u))) == 1


def test_thousands_of_layers():
    g, w, u = vanishing_net(0, n=4, m=3000, per_layer=0.002, noise=0.05)
    [f] = check("vanishing_gradients", make_run(g, w, u, biases=False))
    assert f.evidence["modules"] == 3000


def test_without_metadata_parameters_are_grouped_by_their_names():
    g, w, u = vanishing_net(9)
    full = make_run(g, w, u)  # biases sit 1.5 decades under their weights
    bare = build_run(tables={"scalars": full.scalars, "layers": full.layers}, meta={}, name="x")
    [f] = check("vanishing_gradients", bare)
    assert f.evidence["modules"] == 8


def _rising_head_net(seed: int, n: int = 100):
    """Five modules: a body whose gradients are level within 0.2 decades, then two more each about two
    decades above the one before (the shape a trained body beside an untrained, randomly scaled head and
    neck can leave). Across all five the profile is monotone: the rise alone is a depth trend."""
    rng = np.random.default_rng(seed)
    level = np.array([-3.0, -2.9, -2.8, -1.0, 1.0])
    logg = level + 0.02 * rng.standard_normal((n, 5))
    w = np.full((n, 5), 8.0)
    return 10 ** logg, w, w * 1e-3


@pytest.mark.parametrize("key", ["params_outside_optimizer", "params_without_grad"])
@pytest.mark.parametrize("seed", range(5))
def test_modules_the_optimizer_does_not_train_make_no_depth_trend(seed, key):
    g, w, u = _rising_head_net(seed)
    run = make_run(g, w, u)
    assert len(check("vanishing_gradients", run)) == 1  # the rise alone is a trend: the twin below is the test
    run = make_run(g, w, u)
    run.meta[key] = [f"l{j}.{kind}" for j in (3, 4) for kind in ("weight", "bias")]
    assert check("vanishing_gradients", run) == []


def test_frozen_modules_are_left_out_of_the_profile():
    g, w, u = _rising_head_net(1)
    run = make_run(g, w, u)
    for e in run.meta["layers"]:
        e["trainable"] = e["module"] not in ("l3", "l4")
    assert check("vanishing_gradients", run) == []


@pytest.mark.parametrize("seed", range(5))
def test_a_vanishing_profile_still_fires_beside_a_module_left_out(seed):
    g, w, u = vanishing_net(seed)
    run = make_run(g, w, u)
    run.meta["params_outside_optimizer"] = ["l0.weight", "l0.bias"]  # a frozen-by-accident embedding
    [f] = check("vanishing_gradients", run)
    assert f.evidence["modules"] == 7
    assert "l0.weight" not in f.layers and "l1.weight" in f.layers


def test_too_few_trained_modules_are_skipped():
    g, w, u = vanishing_net(0, m=3, per_layer=1.5)
    run = make_run(g, w, u)
    run.meta["params_outside_optimizer"] = ["l2.weight", "l2.bias"]
    with pytest.raises(Skip, match="the optimizer trains"):
        check("vanishing_gradients", run)


def param_run(names, shapes, grad, weight, update=None, loss=None):
    """A run with arbitrary parameter names/shapes (steps x params matrices)."""
    n, m = grad.shape
    meta = [{"name": nm, "index": j, "module": nm.rsplit(".", 1)[0], "shape": sh,
             "numel": int(np.prod(sh))} for j, (nm, sh) in enumerate(zip(names, shapes, strict=True))]
    cols = {"step": np.repeat(np.arange(n), m), "layer": list(names) * n, "grad_norm": grad.ravel(),
            "weight_norm": weight.ravel()}
    if update is not None:
        cols["update_norm"] = update.ravel()
    loss = falling_loss(0, n) if loss is None else loss
    sc = {"step": np.arange(n), "time": np.arange(n, dtype=float), "loss": loss}
    return build_run(tables={"scalars": sc, "layers": cols}, meta={"layers": meta}, name="x")


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


@pytest.mark.parametrize("seed", range(5))
def test_vanishing_fires_with_required_columns_only(seed):
    g = grads(seed, m=8) * 10 ** (-0.6 * (7 - np.arange(8)))
    w = sgd_weights(seed, g, 0.1)
    [f] = check("vanishing_gradients", required_run(g, w, loss=flat_loss(seed, 120)))
    assert f.evidence["decades"] >= 2.0
    assert "update_ratio_input_side" not in f.evidence  # not measured, so not claimed


@pytest.mark.parametrize("seed", range(5))
def test_vanishing_silent_on_the_healthy_twin(seed):
    g = grads(seed, m=8)
    assert check("vanishing_gradients", required_run(g, sgd_weights(seed, g, 0.1), loss=falling_loss(seed, 120))) == []
