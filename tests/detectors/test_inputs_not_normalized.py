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
    loss = np.full(70, 3e3)
    # Layer rows from step 10 on: after updates, so the one-row reading at initialization does not apply.
    run = make_run(g, w, u, loss=loss, steps=np.arange(10, 70))
    assert check("inputs_not_normalized", run) == []  # K unknown: the loss level means nothing
    [f] = check("inputs_not_normalized", dataclasses.replace(run, meta={**run.meta, "config": {"num_classes": 4}}))
    assert f.evidence["first_loss_over_chance"] > 10


def test_embedding_first_is_silent():
    g, w, u = healthy_net(0, n=60, m=5)
    g[:, 0] *= 1e3
    run = make_run(g, w, u, loss=falling_loss(0, 60))
    layers = [{**e, "kind": "Embedding"} if e["module"] == "l0" else e for e in run.meta["layers"]]
    assert check("inputs_not_normalized", dataclasses.replace(run, meta={"layers": layers})) == []


@pytest.mark.parametrize("seed", range(5))
def test_every_layer_a_thousand_times_its_weights_at_the_first_step_fires_on_one_row(seed):
    # A regression on raw features and targets diverges on its second step: one layer row, taken
    # before any update, already shows every gradient 10^3 times its weights.
    g, w, u = healthy_net(seed, n=1, m=5)
    g *= 10 ** 3.5
    [f] = check("inputs_not_normalized", make_run(g, w, u, loss=np.array([1.2e7, 8e28])))
    assert f.evidence["reading"] == "at initialization" and f.evidence["init_relative_grad_decades"] > 2


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_one_ordinary_row_before_the_divergence(seed):
    g, w, u = healthy_net(seed, n=1, m=5)
    run = make_run(g, w, u, loss=np.array([2.3, 8e28]))
    with pytest.raises(Exception, match="at least 3 early rows"):
        check("inputs_not_normalized", run)


def test_silent_twin_huge_gradients_first_seen_after_updates():
    # The same gradients on a row taken after the run's first step are the learning rate's doing
    # as much as the data's: the one-row reading is for the state before any update only.
    g, w, u = healthy_net(0, n=1, m=5)
    g *= 10 ** 3.5
    run = make_run(g, w, u, steps=np.array([40]), loss=np.linspace(2.3, 1.0, 50))
    with pytest.raises(Exception, match="at least 3 early rows"):
        check("inputs_not_normalized", run)


@pytest.mark.parametrize("seed", range(5))
def test_first_layer_gradient_swinging_by_decades_while_the_output_holds_fires(seed):
    # Raw inputs saturate a gate behind the first layer: a batch passes either almost nothing back
    # or a large gradient, so the first layer's norm jumps by decades from one row to the next.
    rng = np.random.default_rng(seed)
    g, w, u = healthy_net(seed, n=120, m=5)
    g[:, :-1] *= 10 ** rng.uniform(-6, 1.5, (120, 1))
    [f] = check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 120)))
    assert f.evidence["reading"].startswith("saturated") and f.evidence["wilcoxon_p"] < 0.01


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_the_same_swings_under_steps_a_tenth_of_the_weights(seed):
    # A loss summed over the batch makes every step huge: the gate saturates from the steps, not the inputs.
    rng = np.random.default_rng(seed)
    g, w, u = healthy_net(seed, n=120, m=5, ratio=0.3)
    g[:, :-1] *= 10 ** rng.uniform(-6, 1.5, (120, 1))
    assert check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 120))) == []


@pytest.mark.parametrize("seed", range(5))
def test_first_layer_gradient_exactly_zero_on_some_batches_fires(seed):
    # A gate saturated in float32 passes exactly nothing back on some batches: those rows are the
    # largest swings there are, not unreadable ones (a recorded gated mixture on raw inputs had a zero
    # first-layer norm on 2 of its first 12 rows and was missed when they were dropped).
    rng = np.random.default_rng(seed)
    g, w, u = healthy_net(seed, n=100, m=5)
    g[:, :-1] *= 10 ** rng.uniform(-1, 1, (100, 1))
    g[rng.permutation(np.arange(0, 10, 2))[:4], :-1] = 0.0  # four of the first ten rows, none adjacent
    [f] = check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 100)))
    assert f.evidence["reading"].startswith("saturated") and f.evidence["pairs"] == 9


def _gate_saturated(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # A gate right behind the first layer, saturated by raw inputs: on each batch it passes back exactly
    # nothing (float32 underflow) or a gradient decades below its weights; two zeros in a row are no
    # swing, and with ten early rows those ties leave the signed-rank test short of its level.
    rng = np.random.default_rng(seed)
    g, w, u = healthy_net(seed, n=n, m=5)
    zero = np.zeros(n, bool)
    zero[[0, 1, 3, 4, 5, 8, 10]] = True  # three zero-to-zero pairs in the first ten, as a recorded gated mixture on raw inputs had
    zero[10:] = rng.random(n - 10) < 0.4
    g[:, 1] = np.where(zero, 0.0, 10 ** rng.uniform(-28, -6, n))
    return g, w, u


@pytest.mark.parametrize("seed", range(5))
def test_a_gate_that_passes_nothing_or_almost_nothing_back_fires_over_twenty_pairs(seed):
    g, w, u = _gate_saturated(seed, 100)
    [f] = check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 100)))
    assert f.evidence["swinging_module"] == "l1" and f.evidence["pairs"] == 20 and f.evidence["wilcoxon_p"] < 0.01


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_the_same_gate_passing_a_steady_gradient(seed):
    g, w, u = _gate_saturated(seed, 100)
    g[:, 1] = g[:, 2]
    assert check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 100))) == []


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_first_layer_that_never_gets_a_gradient(seed):
    # A detached or frozen first layer has a zero gradient on every row: zero to zero is no swing.
    g, w, u = healthy_net(seed, n=100, m=5)
    g[:, 0] = 0.0
    diag = analyze(make_run(g, w, u, loss=falling_loss(seed, 100)))
    assert "inputs_not_normalized" not in {f.code for f in diag.findings}


@pytest.mark.parametrize("seed", range(10))
def test_silent_twin_noisy_gradients_that_swing_everywhere_alike(seed):
    # Small batches make every layer's gradient noisy, the output's too: no layer swings alone.
    rng = np.random.default_rng(seed)
    g, w, u = healthy_net(seed, n=120, m=5, noise=0.6)
    g *= 10 ** rng.uniform(-0.5, 0.5, (120, 1))
    assert check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 120))) == []


def test_a_run_whose_only_layer_row_has_a_nan_loss_is_skipped_not_crashed():
    # Found by the property test: the signals keep no layer row at or after the first NaN loss.
    import pyarrow as pa

    from runlens import analyze
    from runlens.testing import build_run

    names = ["emb.weight", "h0.weight", "h1.weight", "head.weight"]
    run = build_run(loss=pa.array([float("nan")]), steps=np.array([0]), scalars={"lr": pa.array([1e-3])},
                    layers={"grad_norm": np.array([[1.9, 1.1, 0.6, 1.4]]), "weight_norm": np.array([[6.3, 5.9, 4.3, 3.7]])},
                    layer_steps=np.array([0]), layer_names=names,
                    meta={"layers": [{"name": n, "index": i, "module": n.split(".")[0], "kind": "Linear",
                                      "shape": [4, 4], "numel": 16} for i, n in enumerate(names)]})
    outcome = {o.code: o for o in analyze(run).outcomes}["inputs_not_normalized"]
    assert outcome.state == "skipped" and "non-finite" in outcome.reason


THIRD = Path(__file__).resolve().parents[1] / "fixtures" / "third" / "raw_inputs-gated_mixture"


def test_recorded_gated_mixture_on_raw_inputs_names_the_bug_first():
    # Its first layer's gradient norm is exactly 0 on 2 of the first 12 layer rows: read as the
    # swings they are, not dropped (it was missed when they were dropped).
    diag = analyze(THIRD / "fault")
    f = diag.findings[0]
    assert f.code == "inputs_not_normalized", [g.code for g in diag.findings]
    assert f.evidence["reading"].startswith("saturated") and f.evidence["wilcoxon_p"] < 0.01


def test_recorded_gated_mixture_fixed_twin_is_silent():
    diag = analyze(THIRD / "twin")
    assert diag.curve.label == "healthy" and diag.findings == ()


GATE = Path(__file__).resolve().parents[1] / "fixtures" / "third" / "raw_inputs-gate_swings"


def test_recorded_gate_behind_the_first_layer_swinging_names_the_bug():
    # Round 19, from third-fresh18 (a development set since its one grading, where this run was
    # missed): the stem's own gradient swings by half a decade (under min_swing_decades), the gate's
    # right behind it by 7.6 decades; an expert the saturated gate never routes to is dead.
    diag = analyze(GATE / "fault")
    f = next(f for f in diag.findings if f.code == "inputs_not_normalized")
    assert f.evidence["swinging_module"] == "gate" and f.evidence["median_swing_decades"] > 5
    assert f.evidence["reading"] == "saturated: the gradient of the module behind the first layer swings"


def test_recorded_gate_fixed_twin_is_silent():
    diag = analyze(GATE / "twin")
    assert diag.curve.label == "healthy" and diag.findings == ()


@pytest.mark.parametrize("seed", range(5))
def test_the_module_behind_the_first_swinging_while_the_first_holds_fires(seed):
    rng = np.random.default_rng(seed)
    g, w, u = healthy_net(seed, n=120, m=5)
    g[:, 1] *= 10 ** rng.uniform(-8, 1, 120)
    [f] = check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 120)))
    assert f.evidence["swinging_module"] == "l1" and f.evidence["wilcoxon_p"] < 0.01


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_deeper_module_swinging_is_not_the_inputs(seed):
    # Two modules behind the first: whatever saturates there, the inputs' scale has been
    # normalized away by the layers before it.
    rng = np.random.default_rng(seed)
    g, w, u = healthy_net(seed, n=120, m=5)
    g[:, 2] *= 10 ** rng.uniform(-8, 1, 120)
    assert check("inputs_not_normalized", make_run(g, w, u, loss=falling_loss(seed, 120))) == []
