"""The curve verdict of a short log (5 to 19 points): the claims so few points can carry.

Per-epoch logs of a dozen epochs (Keras, a paste in an issue) are as clear as long ones
when they fall nearly monotonically, rise after a validation minimum, or give back all
their progress; a dozen minibatch losses from the start of training are not, and stay
``insufficient_data``.
"""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import make_run

from runlens import analyze


def _epochs(n: int, seed: int, *, start: float = 0.8, floor: float = 0.2, noise: float = 0.005) -> np.ndarray:
    """Per-epoch averages: an exponential fall to ``floor`` with little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return floor + (start - floor) * np.exp(-t / 2.0) + noise * rng.standard_normal(n)


@pytest.mark.parametrize("seed", range(5))
def test_a_dozen_epochs_that_fall_and_slow_down_are_healthy(seed):
    d = analyze(make_run(_epochs(12, seed)))
    assert d.curve.label == "healthy" and d.curve.evidence["kind"] == "short_settled", d.curve


@pytest.mark.parametrize("seed", range(20))
def test_a_dozen_minibatch_losses_from_the_start_stay_insufficient(seed):
    # The first steps of a run: a slow fall buried in minibatch noise.
    rng = np.random.default_rng(seed)
    x = 2.3 - 0.01 * np.arange(12) + 0.15 * rng.standard_normal(12)
    assert analyze(make_run(x)).curve.label == "insufficient_data"


@pytest.mark.parametrize("seed", range(5))
def test_a_fall_that_has_not_slowed_is_not_yet_settled(seed):
    x = 2.0 - 0.1 * np.arange(12) + 0.003 * np.random.default_rng(seed).standard_normal(12)
    assert analyze(make_run(x)).curve.label == "insufficient_data"


def _keras_overfit(rising: bool):
    steps = np.arange(1, 8) * 1000
    train = np.array([0.681, 0.669, 0.668, 0.648, 0.618, 0.586, 0.552])
    val = np.array([0.677, 0.676, 0.679, 0.691, 0.710, 0.727, 0.759])
    if not rising:
        val = np.array([0.677, 0.672, 0.668, 0.661, 0.655, 0.650, 0.648])
    return make_run(train, steps=steps, val_loss=val, val_steps=steps)


def test_seven_epochs_whose_validation_loss_rises_after_its_minimum_overfit():
    d = analyze(_keras_overfit(True))
    assert d.curve.label == "overfitting" and d.curve.evidence["kind"] == "short_overfitting", d.curve
    assert "overfitting" in [f.code for f in d.findings]


def test_seven_epochs_whose_validation_loss_keeps_falling_do_not():
    assert analyze(_keras_overfit(False)).curve.label != "overfitting"


def test_a_short_log_that_gave_back_all_its_progress_and_stayed_there_diverged():
    # An LLM fine-tune pasted into an issue: 1.59, 1.41, then up to 6.4 and never back.
    x = np.array([1.593, 1.406, 3.316, 6.437, 5.478, 4.857, 4.874, 4.604])
    d = analyze(make_run(x, steps=np.arange(1, 9) * 25))
    assert d.curve.label == "diverged" and d.curve.evidence["kind"] == "short_given_back", d.curve


def test_one_high_last_point_is_not_a_short_divergence():
    x = np.array([1.593, 1.406, 1.35, 1.33, 1.31, 1.30, 1.29, 4.6])
    assert analyze(make_run(x, steps=np.arange(1, 9) * 25)).curve.label != "diverged"


def test_a_log_whose_training_loss_is_all_null_gets_no_shape_and_no_crash():
    import pyarrow as pa

    from runlens.io.run import Run

    steps = np.arange(10, dtype=np.int64)
    run = make_run(np.ones(10), val_loss=np.linspace(1, 0.5, 10), val_steps=steps)
    sc = run.scalars.set_column(run.scalars.schema.get_field_index("loss"), "loss",
                                pa.nulls(10, pa.float64()))
    d = analyze(Run(path="synthetic", meta=run.meta, status="finished", scalars=sc, evals=run.evals))
    assert d.curve.label == "insufficient_data", d.curve
    assert not [w for w in d.warnings if "crashed" in w], d.warnings
