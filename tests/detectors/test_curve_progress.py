"""Progress before noise: a loss that never moved is underfitting, never unstable (issue 20)."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, layers_table, make_run, noise
from verdict_fixtures import TRUTH, analysed, codes

from runlens.detectors.curve import classify


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


@pytest.mark.parametrize("seed", range(5))
def test_twin_the_same_jitter_with_steps_large_against_the_weights_is_unstable(seed):
    x = noise(2000, seed, level=1.6, sd=0.2) * np.linspace(1.0, 0.97, 2000)
    table, layers = layers_table(2000, 0.05)
    v = classify(make_run(x, layers=table, meta={"name": "s", "layers": layers}))
    assert v.label == "unstable", (v.label, v.reason)


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_loss_that_fell_and_settled_stays_healthy(seed):
    assert classify(make_run(healthy(3000, seed, noise=0.12))).label == "healthy"


def test_overfitting_is_read_from_the_validation_trend_whatever_the_training_noise():
    # Few samples, small batches: the training loss is noisy but falls; validation rises after epoch 3.
    rng = np.random.default_rng(0)
    x = healthy(2000, 0, noise=0.35)
    vs = np.arange(100, 2001, 100)
    v = np.concatenate([np.linspace(1.0, 0.6, 4), 0.6 + 0.04 * np.arange(1, 17)]) * np.exp(
        0.01 * rng.standard_normal(20))
    assert classify(make_run(x, val_loss=v, val_steps=vs)).label == "overfitting"


def test_recorded_run_at_a_learning_rate_too_low_is_underfitting_and_its_twin_healthy():
    assert TRUTH["lr_too_low"]["label"] == "no_progress" and TRUTH["lr_ok"]["label"] == "progress"
    low, ok = analysed("lr_too_low"), analysed("lr_ok")
    assert low.curve.label == "underfitting" and "unstable" not in codes(low)
    assert ok.curve.label == "healthy" and not codes(ok)


def test_recorded_run_with_few_training_samples_overfits_and_its_twin_does_not():
    assert TRUTH["overfit_few"]["label"] == "overfitting" and TRUTH["overfit_none"]["label"] == "no_overfitting"
    few, none = analysed("overfit_few"), analysed("overfit_none")
    assert few.curve.label == "overfitting" and "overfitting" in codes(few)
    assert none.curve.label == "healthy" and "overfitting" not in codes(none)


def test_a_loss_blown_up_to_thousands_and_flat_there_is_classified_without_overflow():
    # lr=10: the loss jumps from 0.7 to about 4,000 on the first step and sits there;
    # the chance-level guess must not take exp(4000) (OverflowError) and leave the run unlabeled.
    rng = np.random.default_rng(0)
    loss = np.concatenate([[0.7], 4000 * (1 + 0.01 * rng.standard_normal(199))])
    label = classify(make_run(loss)).label
    assert label != "insufficient_data"
    assert label == "diverged"
