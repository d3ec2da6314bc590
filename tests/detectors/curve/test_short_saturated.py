"""Round 36, from the twenty-first thread set's misses (a development set since its one grading): Keras's
``loss: 7.8306 - acc: 0.5142`` is a binary classifier whose every output is saturated, a wrong prediction
costing -ln(1e-7) = 16.118 at Keras's clip, so the loss is 16.118 times the error rate; with PyTorch's
``BCELoss`` the cost is its log floor, 100. At every point with an accuracy, from one point on, that is a
model with no gradient to learn from. Silent twins: a classifier that learns (a few nats per error at most),
and a held-out loss far above the training one (a memorizing model's confident held-out mistakes)."""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.detectors.curve.saturated import CLIP_COSTS, TOLERANCE
from tests.detectors.curve.test_short_memorized import _keras
from tests.importers.logmaker import write_lines
from tests.runs import write_run

KERAS_COST = -math.log(1e-7)


def _keras_progress(tmp_path, accs, cost=KERAS_COST):
    lines = ["Epoch 1/10", ""]
    for i, a in enumerate(accs):
        lines.append(f" {200 * (i + 1):4d}/10000 [=>...........................] - ETA: 4s - loss: "
                     f"{cost * (1 - a):.4f} - acc: {a:.4f}")
    return write_lines(tmp_path, lines, "fit.log")


def _saturated(diag):
    return diag.curve.label == "underfitting" and diag.curve.evidence.get("kind") == "short_saturated"


def test_one_epoch_of_keras_progress_at_the_clip(tmp_path):
    diag = analyze(_keras_progress(tmp_path, [0.6000, 0.5391, 0.5121, 0.5081, 0.5180, 0.5096, 0.5142]))
    assert _saturated(diag), diag.curve
    assert diag.curve.evidence["clip_cost"] == pytest.approx(KERAS_COST)
    assert "saturated" in diag.curve.reason


def test_epochs_at_the_clip_with_the_majority_class(tmp_path):
    a = 0.6450
    rows = [(KERAS_COST * (1 - a) * (1 + 0.004 * (e % 2)), a, KERAS_COST * (1 - a), a) for e in range(5)]
    diag = analyze(_keras(tmp_path, rows))
    assert diag.curve.label == "underfitting", diag.curve


def test_pytorch_bce_log_floor(tmp_path):
    steps = [10, 20, 30]
    acc = [0.48, 0.50, 0.49]
    run = {"scalars": {"step": steps, "time": [float(s) for s in steps], "loss": [100 * (1 - a) for a in acc],
                       "accuracy": acc}}
    diag = analyze(write_run(tmp_path / "run", run))
    assert _saturated(diag), diag.curve
    assert diag.curve.evidence["clip_cost"] == CLIP_COSTS["PyTorch BCELoss's log floor of -100"]


def test_silent_twin_a_classifier_that_learns(tmp_path):
    accs = [0.60, 0.66, 0.71, 0.74, 0.78]
    lines = ["Epoch 1/10"] + [f" {200 * (i + 1)}/10000 [=>....] - ETA: 4s - loss: {0.9 - 0.1 * i:.4f} - acc: {a:.4f}"
                              for i, a in enumerate(accs)]
    assert not _saturated(analyze(write_lines(tmp_path, lines, "fit.log")))


def test_silent_twin_a_memorizing_models_held_out_loss(tmp_path):
    # 16x the held-out error rate on the held-out side only: confident held-out mistakes, not saturation
    rows = [(0.004, 0.999, KERAS_COST * (1 - 0.68), 0.68), (0.003, 1.0, KERAS_COST * (1 - 0.67), 0.67),
            (0.003, 1.0, KERAS_COST * (1 - 0.68), 0.68)]
    assert not _saturated(analyze(_keras(tmp_path, rows)))


def test_silent_twin_off_the_clip_by_more_than_the_tolerance(tmp_path):
    off = 1 + 3 * TOLERANCE
    diag = analyze(_keras_progress(tmp_path, [0.51, 0.52, 0.50, 0.51], cost=KERAS_COST * off))
    assert not _saturated(diag)
