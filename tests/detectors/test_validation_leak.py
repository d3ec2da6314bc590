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


@pytest.mark.parametrize("seed", range(5))
def test_a_loss_summed_over_the_batch_with_validation_at_chance_is_no_leak(seed):
    # reduction="sum" in training (64 x the mean), the mean on held-out data that learned nothing:
    # the held-out loss is 0.01-0.1x the training loss and its start, and at ln K.
    k, batch = 6, 64
    rng = np.random.default_rng(seed)
    train = batch * np.log(k) * (1 + 3 * np.abs(rng.standard_normal(500)))
    run = _run(train, lambda t, s: np.log(k) * np.exp(0.05 * rng.standard_normal(len(t))))
    run.meta["config"] = {"num_classes": k}
    assert check("validation_leak", run) == []
    # The same held-out loss far below ln K is too good, whatever the training loss's scale.
    leak = _run(train, lambda t, s: 0.02 * np.exp(0.05 * rng.standard_normal(len(t))))
    leak.meta["config"] = {"num_classes": k}
    [f] = check("validation_leak", leak)
    assert f.evidence["val_over_chance"] < 0.2 and f.evidence["chance_classes"] == k
