"""underfitting: the curve label (runlens/detectors/curve/underfitting.py) and its finding
(runlens/detectors/underfitting.py): a loss that barely moved or sits at chance; each with its silent twin."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from curve_cases import label
from loss_synth import healthy, layers_table, ln, make_run, noise
from verdict_fixtures import TRUTH, analysed, codes

from runlens import analyze
from runlens.detectors.curve import classify


@pytest.mark.parametrize("k,config", [(2, {}), (4, {}), (10, {}), (100, {"classes": 100})])
def test_loss_pinned_at_ln_k_is_underfitting_at_chance(k, config):
    for seed in range(10):
        rng = np.random.default_rng(seed)
        x = math.log(k) * (1 + 0.003 * rng.standard_normal(500)) + 0.02 * np.exp(-np.arange(500) / 20)
        v = classify(make_run(x, meta={"config": config}))
        assert v.label == "underfitting"
        assert v.evidence["chance_classes"] == k
        assert f"ln({k})" in v.reason


def test_slow_barely_moving_loss_is_underfitting_and_not_chance():
    rng = np.random.default_rng(0)
    x = 1.0 - 0.05 * np.arange(1000) / 1000 + 0.01 * rng.standard_normal(1000)
    v = classify(make_run(x))
    assert v.label == "underfitting"
    assert "chance_classes" not in v.evidence


def test_plateau_after_progress_is_healthy_not_underfitting():
    for seed in range(20):
        x = healthy(2000, seed, rate=30)  # falls fast, then flat for most of the run
        assert label(x) == "healthy"


def test_chance_uses_the_number_of_classes_in_the_config():
    rng = np.random.default_rng(0)
    x = math.log(500) + 0.002 * rng.standard_normal(400)
    v = classify(make_run(x, meta={"config": {"num_classes": 500}}))
    assert v.label == "underfitting" and v.evidence["chance_classes"] == 500


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("sd", [0.05, 0.12])
def test_a_flat_loss_with_minibatch_jitter_is_underfitting_not_unstable(seed, sd):
    # Batch size 4 at a learning rate too low: the loss jitters by 5-12% of its level and never moves.
    v = classify(make_run(noise(3000, seed, level=1.6, sd=sd)))
    assert v.label == "underfitting", (v.label, v.reason)


@pytest.mark.parametrize("seed", range(5))
def test_a_slight_fall_within_large_jitter_with_small_steps_is_underfitting(seed):
    x = noise(2000, seed, level=1.6, sd=0.2) * np.linspace(1.0, 0.97, 2000)
    table, layers = layers_table(2000, 1e-5)
    v = classify(make_run(x, layers=table, meta={"name": "s", "layers": layers}))
    assert v.label == "underfitting", (v.label, v.reason)


def test_recorded_run_at_a_learning_rate_too_low_is_underfitting_and_its_twin_healthy():
    assert TRUTH["lr_too_low"]["label"] == "no_progress" and TRUTH["lr_ok"]["label"] == "progress"
    low, ok = analysed("lr_too_low"), analysed("lr_ok")
    assert low.curve.label == "underfitting" and "unstable" not in codes(low)
    assert ok.curve.label == "healthy" and not codes(ok)


def loud(d):
    return {f.code for f in d.findings if f.severity in ("warning", "error")}


@pytest.mark.parametrize("n", [4, 10, 19])
def test_a_loss_printed_as_the_same_value_is_stuck_at_chance(n):
    d = analyze(make_run(np.full(n, 2.3026)))
    assert d.curve.label == "underfitting" and d.curve.evidence["n_points"] == n
    assert {"underfitting", "loss_at_chance"} <= loud(d)
    assert d.curve.evidence["chance_classes"] == 10


def test_a_loss_stuck_within_a_small_band_without_trend_is_stuck_at_its_stated_k():
    x = 1.0986 + 0.0004 * np.array([1, -1, 0, 2, -2, 1, 0, -1, 1, 0])
    d = analyze(make_run(x, meta={"name": "s", "config": {"num_classes": 3}}))
    assert d.curve.label == "underfitting" and d.curve.evidence["chance_source"] == "config.num_classes"


def test_silent_twin_a_short_log_that_falls_is_not_stuck():
    d = analyze(make_run(np.array([2.30, 2.10, 1.90, 1.70, 1.60, 1.52, 1.47, 1.44, 1.42, 1.41])))
    assert d.curve.label != "underfitting" and "loss_at_chance" not in loud(d)


def test_silent_twin_a_flat_but_trending_band_is_not_stuck():
    # 0.8% of the level, but every step goes down: progress, slowly.
    x = 1.0 - 0.0009 * np.arange(10)
    assert analyze(make_run(x)).curve.evidence.get("kind") != "short_stuck"


def _decaying_weights_run(shrink: float):
    n = 400
    table, meta = layers_table(n, 1e-3)
    steps = table.column("step").to_numpy()
    w = 10.0 * shrink ** (steps / steps.max())
    table = table.set_column(table.schema.get_field_index("weight_norm"), "weight_norm", pa.array(w, pa.float32()))
    loss = ln(3) * np.exp(0.002 * np.random.default_rng(0).standard_normal(n))
    return make_run(loss, layers=table, meta={"name": "synthetic", "layers": meta,
                                              "config": {"weight_decay": 50.0, "num_classes": 3}})


def test_the_underfitting_verdict_measures_a_weight_collapse_and_says_so():
    d = analyze(_decaying_weights_run(1e-4))
    (f,) = [f for f in d.findings if f.code == "underfitting"]
    assert f.evidence["weight_norm_ratio"] == pytest.approx(1e-4, rel=0.05)
    assert "pinned near zero (weight_decay 50 in the config)" in f.title
    intact = next(f for f in analyze(_decaying_weights_run(0.9)).findings if f.code == "underfitting")
    assert intact.evidence["weight_norm_ratio"] == pytest.approx(0.9, rel=0.05)
    assert "pinned" not in intact.title


def _memorising_prior(n: int, seed: int, *, fall: float) -> np.ndarray:
    """The training loss falls by ``fall`` of its start (the class prior, memorised batches) in the
    first fifth, then jitters at that level."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    return 1.8 * (1 - fall * (1 - np.exp(-t / 0.05))) * np.exp(0.04 * rng.standard_normal(n))


@pytest.mark.parametrize("seed", range(6))
def test_a_validation_loss_that_never_moves_makes_no_progress(seed):
    # Shuffled labels on an imbalanced task: training batches fall 15% (the prior), validation 2%.
    rng = np.random.default_rng(100 + seed)
    val = 1.73 - 0.04 * (1 - np.exp(-np.arange(20) / 3)) + 0.003 * rng.standard_normal(20)
    x = _memorising_prior(600, seed, fall=0.15)
    assert classify(make_run(x)).label == "healthy"  # the training curve alone passes
    run = make_run(x, val_loss=val, val_steps=np.arange(20) * 30 + 29)
    v = classify(run)
    assert v.label == "underfitting", (v.label, v.reason)
    assert v.evidence["kind"] == "no_validation_progress" and v.evidence["val_evals"] == 20
    assert "validation loss never improved" in v.reason
    assert "validation loss never improved" in analyze(run).headline


# Silent twins of the stalled case. Learned before its first evaluation: validation is first read after
# the first epoch, far below where the training loss started, then moves little as a converged run's
# does. A floor of its own: a contrastive loss scored against more candidates than in training sits near
# ln(N) and falls 8% of its level while the model learns (the training loss falls 30%).
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("start", "fall", "evals", "train"), [
    (0.62, 0.03, 20, {"scale": 1.8, "floor": 0.3, "rate": 12}),
    (3.12, 0.26, 17, {"scale": 1.4, "floor": 0.66, "rate": 10}),
], ids=["learned-before-first-eval", "floor-of-its-own"])
def test_validation_that_moved_little_but_did_progress_is_healthy(seed, start, fall, evals, train):
    rng = np.random.default_rng(200 + seed)
    val = start - fall * (1 - np.exp(-np.arange(evals) / 3)) + 0.002 * rng.standard_normal(evals)
    x = healthy(evals * 35, seed, **train)
    v = classify(make_run(x, val_loss=val, val_steps=np.arange(evals) * 35 + 34))
    assert v.label == "healthy", (v.label, v.reason)


def test_a_training_loss_that_halved_while_validation_stood_still_is_not_this_reading():
    # Memorisation (the training loss fell 60%) is for the overfitting reading, not "no progress".
    rng = np.random.default_rng(7)
    val = 1.73 + 0.003 * rng.standard_normal(20)
    v = classify(make_run(_memorising_prior(600, 7, fall=0.6), val_loss=val, val_steps=np.arange(20) * 30 + 29))
    assert v.evidence.get("kind") != "no_validation_progress", v.reason


def test_the_validation_reading_needs_enough_evaluations():
    rng = np.random.default_rng(8)
    val = 1.73 + 0.003 * rng.standard_normal(4)
    v = classify(make_run(_memorising_prior(600, 8, fall=0.12), val_loss=val, val_steps=np.arange(4) * 150 + 149))
    assert v.evidence.get("kind") != "no_validation_progress", v.reason
