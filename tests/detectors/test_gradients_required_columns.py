"""The gradient and weight detectors on logs with only the REQUIRED columns.

Another writer of format v1 may log layers as (step, layer, grad_norm,
weight_norm) only, scalars as (step, time, loss), no events, and run.json
layers with empty ``module``/``kind``. Each detector gets a firing case built
that way and its healthy twin; the last tests strip the relevant shipped
sample runs down to the required columns and check they are still diagnosed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from gradients_synth import (
    adam_weights,
    check,
    falling_loss,
    flat_loss,
    required_run,
    sgd_weights,
)

import runlens
from runlens.detectors import Skip

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
REQUIRED = {"scalars": ("step", "time", "loss"), "layers": ("step", "layer", "grad_norm", "weight_norm")}


def grads(seed: int, n: int = 120, m: int = 5, level: float = -0.5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 10 ** (level + rng.normal(0, 0.2, m) + 0.1 * rng.standard_normal((n, m)))


# -- vanishing_gradients ------------------------------------------------------------------------


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


# -- exploding_gradients ------------------------------------------------------------------------


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


# -- dead_layers --------------------------------------------------------------------------------


def test_dead_layer_left_out_of_the_optimizer_without_update_norm():
    g = grads(1, n=100)
    w = adam_weights(1, 100, 5, 1e-3)
    w[:, 2] = w[0, 2]  # bit-for-bit the same norm at every record: never updated
    [f] = check("dead_layers", required_run(g, w))
    assert f.layers == ("l2.weight",)
    assert f.evidence["layers"]["l2.weight"]["kind"] == "no update"
    assert "update_norm not logged" in f.evidence["no_update_source"]


def test_dead_layer_with_zero_gradient_without_grad_zero_frac():
    g = grads(2, n=100)
    g[30:, 0] = 0.0
    [f] = check("dead_layers", required_run(g, adam_weights(2, 100, 5, 1e-3)))
    assert f.layers == ("l0.weight",)
    assert f.evidence["layers"]["l0.weight"]["kind"] == "zero gradient"
    assert f.evidence["zero_gradient_source"] == "grad_norm == 0"


def test_dead_layers_silent_on_the_healthy_twin():
    fired = [s for s in range(30) if check("dead_layers", required_run(grads(s, n=60), adam_weights(s, 60, 5, 1e-3)))]
    assert fired == []


# -- learning_rate_too_low ----------------------------------------------------------------------


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


# -- weight_norm_growth -------------------------------------------------------------------------


def test_weight_norm_growth_fires_with_required_columns_only():
    t = np.linspace(0, 1, 200)
    w = (5 * np.exp(4 * t)[:, None] * np.ones(4)).astype(np.float32)
    assert len(check("weight_norm_growth", required_run(grads(7, n=200, m=4), w))) == 1


def test_weight_norm_growth_silent_on_the_healthy_twin():
    t = np.linspace(0, 1, 200)
    w = (5 * np.sqrt(1 + 3 * t)[:, None] * np.ones(4)).astype(np.float32)
    assert check("weight_norm_growth", required_run(grads(7, n=200, m=4), w)) == []


# -- stripped copies of the shipped sample runs -------------------------------------------------


def strip_to_required(src: Path, dst: Path) -> Path:
    """Copy a run keeping only required columns, no events, empty module/kind (config kept)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("expected.json"))
    for table, keep in REQUIRED.items():
        for part in sorted((dst / table).glob("*.parquet")):
            t = pq.read_table(part)
            pq.write_table(t.select([c for c in t.column_names if c in keep]), part)
    shutil.rmtree(dst / "events", ignore_errors=True)
    meta = json.loads((dst / "run.json").read_text())
    for e in meta.get("layers") or ():
        e["module"], e["kind"] = "", ""
    (dst / "run.json").write_text(json.dumps(meta))
    return dst


@pytest.mark.parametrize("name,code", [
    ("vanishing_gradients", "vanishing_gradients"), ("exploding_gradients", "exploding_gradients"),
    ("dead_layer", "dead_layers"), ("lr_too_low", "learning_rate_too_low"),
    ("nan_divergence", "exploding_gradients"),
])
def test_stripped_sample_runs_keep_their_finding(tmp_path, name, code):
    d = runlens.analyze(strip_to_required(SAMPLES / name, tmp_path / name))
    assert code in {f.code for f in d.findings}, [(o.code, o.reason) for o in d.outcomes if o.state != "ran"]


@pytest.mark.parametrize("name", ["healthy", "no_validation", "resumed", "underfitting", "plateau"])
def test_stripped_healthy_like_sample_runs_stay_quiet(tmp_path, name):
    exp = json.loads((SAMPLES / name / "expected.json").read_text())
    d = runlens.analyze(strip_to_required(SAMPLES / name, tmp_path / name))
    codes = {f.code for f in d.findings}
    assert not codes & set(exp["must_not_include"]), codes
    if name in ("healthy", "no_validation", "resumed"):
        assert not [f for f in d.findings if f.severity in ("warning", "error")]
