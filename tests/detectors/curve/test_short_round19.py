"""Round 19, from the sixth thread set's misses (a development set since its one grading):

- a training accuracy printed alike at its last 4 points or more (0.5003), below FIT, while the training
  loss moves by a tenth of its level: the model predicts one class whatever it is shown (stuck);
- a band of a percent is stuck from the start of training, at ln K, or across single steps (a
  minibatch's loss is noisier than that), but a band of epoch averages that begins mid-run is what a
  converged run looks like too: not judged. Values alike to a thousandth are stuck wherever they start.

Each with silent twins."""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.detectors.curve.memorized import FIT, FROZEN


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _accuracy_log(tmp_path, accs, losses):
    lines = [f"Epoch: {e}  Train acc: {a:.4f} loss: {v:.4f}" for e, (a, v) in enumerate(zip(accs, losses, strict=True), 1)]
    return analyze(_write(tmp_path, lines))


LOSSES = [0.6174, 0.7964, 0.6463, 0.7293, 0.7919, 0.6507, 0.6656, 1.0031, 0.6611, 0.6498, 0.8106, 0.6220]


def test_a_frozen_training_accuracy_while_the_loss_moves_is_stuck(tmp_path):
    accs = [0.5904, 0.5018, 0.6035, 0.5031, 0.5006, 0.5021, 0.5299] + [0.5003] * 5
    diag = _accuracy_log(tmp_path, accs, LOSSES)
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_frozen_accuracy"
    assert diag.curve.evidence["frozen_points"] == 5 and diag.curve.evidence["step"] == 8
    assert "predicts the same" in diag.headline


@pytest.mark.parametrize("why, accs, losses", [
    ("the training set fitted: a converged model's predictions hold", [0.9] * 7 + [1.0] * 5, LOSSES),
    ("printed coarsely: 0.50 repeats by rounding", [0.6] * 7 + [0.5] * 5, LOSSES),
    ("frozen at too few points", [0.59, 0.50, 0.60, 0.5031, 0.5006, 0.5021, 0.5299, 0.5101, 0.5121]
     + [0.5003] * (FROZEN - 1),
     LOSSES),
    ("the loss barely moves: a converged model", [0.8] * 7 + [0.9412] * 5,
     [0.2 + 0.001 * (i % 2) for i in range(12)]),
])
def test_silent_twins_of_a_frozen_accuracy(tmp_path, why, accs, losses):
    diag = _accuracy_log(tmp_path, accs, losses)
    assert diag.curve.evidence.get("kind") != "short_frozen_accuracy", why


def test_fit_is_the_memorized_reading_s():
    assert FIT == 0.99 and FROZEN == 4


def _band(tmp_path, first, index="Epoch", spread=0.006, n=8):
    rng = np.random.default_rng(1)
    values = 0.1507 * (1 + rng.uniform(-spread / 2, spread / 2, n))
    lines = [f"{index} {first + i}   training loss: {v:.6f}" for i, v in enumerate(values)]
    return analyze(_write(tmp_path, lines))


def test_a_band_of_epoch_averages_mid_run_is_not_judged(tmp_path):
    assert _band(tmp_path, 33).curve.label == "insufficient_data"


def test_the_same_band_from_the_start_of_training_is_stuck(tmp_path):
    diag = _band(tmp_path, 0)
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck"


def test_the_same_band_across_single_steps_is_stuck(tmp_path):
    diag = _band(tmp_path, 220, index="step:")
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck"


def test_values_alike_to_a_thousandth_mid_run_are_stuck(tmp_path):
    diag = _band(tmp_path, 33, spread=0.0005)
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck"
