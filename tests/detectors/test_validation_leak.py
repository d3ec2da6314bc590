"""validation_leak: a validation loss a small fraction of the training loss from the start."""

from __future__ import annotations

import numpy as np
import pytest
from bug_fixtures import FIX, assert_fixed_twin_silent, leading_finding
from gradients_synth import check
from loss_synth import healthy, make_run

from runlens.detectors import Skip
from runlens.io.loader import load_run


def test_real_run_names_the_bug_first():
    _, f = leading_finding("validation_leak-conv1d", "validation_leak")
    assert f.evidence["val_train_ratio"] < 0.2
    assert f.evidence["wilcoxon_p"] <= 0.01


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("validation_leak-conv1d-fixed", "validation_leak")


def _run(train, val_of, n=500, evals=20):
    vs = np.linspace(n / evals, n - 1, evals).astype(int)
    return make_run(train, val_loss=val_of(train[vs], vs), val_steps=vs)


@pytest.mark.parametrize("seed", range(5))
def test_val_near_zero_early_fires(seed):
    train = healthy(500, seed, scale=2.0, floor=0.3)
    rng = np.random.default_rng(seed)
    [f] = check("validation_leak", _run(train, lambda t, s: 0.002 * np.exp(0.2 * rng.standard_normal(len(t)))))
    assert f.evidence["first_leak_step"] <= 50


@pytest.mark.parametrize("seed", range(5))
def test_val_somewhat_below_train_is_silent(seed):
    """Dropout or augmentation: validation at 0.6-0.9x the training loss is normal."""
    train = healthy(500, seed, scale=2.0, floor=0.3)
    rng = np.random.default_rng(seed)
    assert check("validation_leak", _run(train, lambda t, s: t * rng.uniform(0.6, 0.9, len(t)))) == []


def test_overfitting_is_silent():
    train = healthy(500, 0, scale=2.0, floor=0.01)
    assert check("validation_leak", _run(train, lambda t, s: 0.5 + s / 500)) == []


def test_too_few_evaluations_skip():
    train = healthy(500, 0)
    with pytest.raises(Skip, match="evaluations"):
        check("validation_leak", _run(train, lambda t, s: t * 0.01, evals=3))


def test_real_leak_is_below_the_ratio_on_most_evaluations():
    """The leak is learned within a few evaluations and never heals: the test runs over every evaluation."""
    [f] = check("validation_leak", load_run(FIX / "validation_leak-conv1d"))
    assert f.evidence["evals_below"] >= f.evidence["evals"] // 2
