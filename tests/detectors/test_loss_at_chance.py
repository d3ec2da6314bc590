"""loss_at_chance: a loss that sits at the chance level ln K (K from the config, a label column or the
level alone), and the losses below or passing through it that are not."""

from __future__ import annotations

import math

import numpy as np
import pytest
from curve_cases import SEEDS
from loss_synth import (
    make_run,
    to_chance,
)

from runlens import analyze
from runlens.detectors.curve import classify


@pytest.mark.parametrize("k", [2, 3, 4, 10])
def test_a_loss_that_falls_to_ln_k_and_sits_is_at_chance_not_healthy(k):
    for seed in range(SEEDS):
        # K from the config: any K; the level must be within 2% of ln K
        run = make_run(to_chance(800, seed, k=k, start=3 * math.log(k)), meta={"config": {"num_classes": k}})
        d = analyze(run)
        assert d.curve.label == "underfitting", (seed, d.curve.reason)
        (f,) = [f for f in d.findings if f.code == "loss_at_chance"]
        assert f.evidence["chance_classes"] == k and f.evidence["chance_source"] == "config.num_classes"
        assert f.evidence["relative_drop"] > 0.5  # it fell a long way: a drop alone would say healthy


def test_chance_from_the_loss_level_alone_says_so():
    for seed in range(SEEDS):
        v = classify(make_run(to_chance(800, seed, k=2)))
        assert v.label == "underfitting" and v.evidence["chance_classes"] == 2
        assert v.evidence["chance_source"].startswith("the loss level")


def test_silent_twin_a_level_near_ln_k_that_moves_like_a_language_model_is_not_chance():
    # An SFT run settling at 1.615 (ln 5 = 1.609) whose logged loss moves by 1.4% from step to step:
    # with no class count stated, the level alone is a coincidence, not a model predicting the prior.
    for seed in range(SEEDS):
        v = classify(make_run(to_chance(800, seed, k=5, noise=0.014)))
        assert v.evidence.get("chance_classes") is None


def test_chance_from_a_label_column():
    n = 800
    labels_col = np.random.default_rng(0).integers(0, 3, n)
    v = classify(make_run(to_chance(n, 0, k=3), scalars={"label": labels_col}))
    assert v.evidence["chance_classes"] == 3 and "label" in v.evidence["chance_source"]


@pytest.mark.parametrize("k", [2, 4, 10])
def test_silent_twin_a_loss_that_falls_below_ln_k_or_passes_through_it(k):
    for seed in range(SEEDS):
        cfg = {"config": {"num_classes": k}}
        # learns: settles at a third of ln K
        below = to_chance(800, seed, k=k, start=3 * math.log(k)) / 3
        assert classify(make_run(below, meta=cfg)).label == "healthy"
        # still falling through ln K at the end of the run
        t = np.arange(800) / 800
        through = math.log(k) * (1.6 - 0.6 * t) * np.exp(0.01 * np.random.default_rng(seed).standard_normal(800))
        assert "chance_classes" not in classify(make_run(through, meta=cfg)).evidence


def _with_classes(loss: np.ndarray, k: int):
    return make_run(loss, meta={"name": "synthetic", "config": {"num_classes": k}})


@pytest.mark.parametrize("seed", range(4))
def test_a_flat_loss_a_little_above_ln_k_is_no_better_than_chance(seed):
    # 2.5% above ln 4: outside the symmetric 2% band, closer to ln 4 than to ln 5.
    loss = to_chance(800, seed, k=4) * 1.025
    d = analyze(_with_classes(loss, 4))
    assert d.curve.label == "underfitting" and "loss_at_chance" in [f.code for f in d.findings], d.curve


@pytest.mark.parametrize("factor", [0.9, 1.12])
def test_a_flat_loss_well_below_ln_k_or_nearer_ln_k_plus_1_is_not_chance(factor):
    # 10% below ln 4 beats the prior; 12% above is past half the gap to ln 5.
    loss = to_chance(800, 0, k=4) * factor
    d = analyze(_with_classes(loss, 4))
    assert "loss_at_chance" not in [f.code for f in d.findings], d.findings


def _memorizing(seed: int, k: int, *, val_end: float, val_low: float | None = None, n: int = 600):
    """A training loss falling 15% from ln K with validation losses at 20 evaluations: from ln K to
    ``val_end`` x ln K, through ``val_low`` x ln K at the fourth evaluation when given."""
    rng = np.random.default_rng(seed)
    chance = math.log(k)
    train = chance * (1 - 0.15 * np.linspace(0, 1, n) ** 0.5) * np.exp(0.03 * rng.standard_normal(n))
    val_steps = np.linspace(n // 20, n - 1, 20).astype(int)
    val = chance * np.linspace(1.0, val_end, 20) * np.exp(0.005 * rng.standard_normal(20))
    if val_low is not None:
        val[3] = val_low * chance
    return make_run(train, val_loss=val, val_steps=val_steps, meta={"config": {"num_classes": k}})


def _chance_findings(run):
    return [f for f in analyze(run).findings if f.code == "loss_at_chance"]


@pytest.mark.parametrize("k", [4, 6, 10])
@pytest.mark.parametrize("seed", range(3))
def test_validation_at_chance_while_the_training_loss_falls_fires(k, seed):
    # Labels shuffled apart from their inputs: the training batches are memorized, nothing carries.
    run = _memorizing(seed, k, val_end=1.02)
    (f,) = _chance_findings(run)
    assert f.evidence["reading"] == "validation" and f.evidence["chance_classes"] == k
    assert f.evidence["train_late_level"] < 0.95 * f.evidence["val_late_level"]
    # The curve says the same (it said "healthy" while this finding fired): no signal is underfitting.
    v = classify(run)
    assert v.label == "underfitting" and v.evidence["kind"] == "validation_at_chance"
    assert v.evidence["chance_classes"] == k and v.evidence["val_late_level"] == f.evidence["val_late_level"]
    assert analyze(run).headline.startswith("Underfitting: the validation loss stays at ln(")


@pytest.mark.parametrize("seed", range(3))
def test_silent_twin_validation_falling_with_the_training_loss(seed):
    # A short healthy run: both losses leave ln K together.
    run = _memorizing(seed, 6, val_end=0.8)
    assert _chance_findings(run) == []
    assert classify(run).evidence.get("kind") != "validation_at_chance"


@pytest.mark.parametrize("seed", range(3))
def test_silent_twin_validation_that_learned_and_rose_back_is_overfitting(seed):
    run = _memorizing(seed, 6, val_end=1.02, val_low=0.5)
    assert _chance_findings(run) == []
    assert classify(run).evidence.get("kind") != "validation_at_chance"


@pytest.mark.parametrize("seed", range(3))
def test_silent_twin_validation_far_above_chance_is_confidently_wrong(seed):
    run = _memorizing(seed, 3, val_end=2.0)
    assert _chance_findings(run) == []
    assert classify(run).evidence.get("kind") != "validation_at_chance"


@pytest.mark.parametrize("seed", range(3))
def test_held_out_at_chance_needs_a_stated_class_count(seed):
    # Guessed from the level, ln K would be a coincidence often enough (a held-out loss near 1.79).
    run = _memorizing(seed, 6, val_end=1.02)
    run.meta["config"] = {}
    assert classify(run).evidence.get("kind") != "validation_at_chance"
