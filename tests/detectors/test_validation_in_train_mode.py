"""validation_in_train_mode: the recorder's model_training flag, and a conservative log-only reading."""

from __future__ import annotations

import numpy as np
import pytest
from bug_fixtures import assert_fixed_twin_silent, leading_finding
from gradients_synth import check
from loss_synth import healthy, make_run


def test_real_run_names_the_bug_first():
    _, f = leading_finding("validation_in_train_mode-lstm", "validation_in_train_mode")
    assert f.evidence["train_mode_share"] == 1.0
    assert f.evidence["source"] == "evals.model_training"


def test_real_fixed_twin_is_silent():
    assert_fixed_twin_silent("validation_in_train_mode-lstm-fixed", "validation_in_train_mode")


def _run(flag=None, *, ratio=None, config=None, n=400, evals=12, seed=0):
    train = healthy(n, seed, scale=2.0, floor=0.3)
    vs = np.linspace(n / evals, n - 1, evals).astype(int)
    val = train[vs] * (0.8 if ratio is None else ratio(vs))
    sets = {"model_training": np.full(evals, flag, float)} if flag is not None else None
    return make_run(train, val_loss=val, val_steps=vs, eval_sets=sets, meta={"config": config or {}})


def test_flag_set_fires_and_flag_clear_is_silent():
    [f] = check("validation_in_train_mode", _run(1, config={"dropout": 0.3}))
    assert f.evidence["train_mode_share"] == 1.0
    assert check("validation_in_train_mode", _run(0, config={"dropout": 0.3})) == []


def test_flag_set_without_dropout_or_batch_norm_is_silent():
    """Training mode changes nothing in a model without dropout or batch norm: many loops skip eval()."""
    assert check("validation_in_train_mode", _run(1)) == []


def test_log_only_steady_excess_with_dropout_fires():
    [f] = check("validation_in_train_mode", _run(ratio=lambda s: np.full(len(s), 1.5), config={"dropout": 0.5}))
    assert f.evidence["source"].startswith("log")


@pytest.mark.parametrize("config", [{}, {"dropout": 0.0}])
def test_log_only_without_dropout_is_silent(config):
    assert check("validation_in_train_mode", _run(ratio=lambda s: np.full(len(s), 1.5), config=config)) == []


def test_log_only_overfitting_is_silent():
    """A ratio that grows from ~1 is overfitting, not training mode."""
    assert check("validation_in_train_mode",
                 _run(ratio=lambda s: 1.25 + 2 * s / 400, config={"dropout": 0.5})) == []
