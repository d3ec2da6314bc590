"""Round 19, from the fifth thread set's misses (a development set since its one grading): the last
epochs of a run that memorized its data (training accuracy 1.0000, validation accuracy 0.68, the
validation loss 500x the training loss) show no rise of the validation loss, only the gap. In a short
log that gap is overfitting when the accuracies and the losses both say it at every evaluation and the
validation loss is not improving. Silent twins: a small accuracy gap (a model that generalizes, whatever
its loss ratio), a validation loss still falling, a loss gap without accuracies (two normalisations),
accuracies on different scales, and a held-out error rate under ``ERROR_RATIO`` times the training one.
Round 35: the training accuracy need not reach ``FIT`` (0.99); a held-out error rate ten times the
training one says the same in the accuracies' own terms (a transformer OCR fine-tune's 98.8% against 70%,
the twentieth thread set's, a development set)."""

from __future__ import annotations

import pytest

from runlens import analyze, load_run
from runlens.detectors.curve.memorized import ACC_GAP, ERROR_RATIO, FIT, LOSS_RATIO, accuracies
from tests.runs import write_run

KERAS = """Epoch 148/150
32/32 [==============================] - 32s 914ms/step - loss: 0.0019 - accuracy: 1.0000 - val_loss: 1.1507 - val_accuracy: 0.6797
Epoch 149/150
32/32 [==============================] - 31s 991ms/step - loss: 8.3529e-04 - accuracy: 1.0000 - val_loss: 0.9458 - val_accuracy: 0.6562
Epoch 150/150
32/32 [==============================] - 32s 1s/step - loss: 0.0020 - accuracy: 1.0000 - val_loss: 1.0846 - val_accuracy: 0.6797
"""


def _keras(tmp_path, rows, name="fit.log"):
    """``rows``: (loss, accuracy, val_loss, val_accuracy) per epoch, printed as Keras prints them."""
    lines = []
    for e, (loss, acc, vl, va) in enumerate(rows, 41):
        lines += [f"Epoch {e}/60", f"32/32 [==============================] - 3s 91ms/step - loss: {loss:.4f} - "
                  f"accuracy: {acc:.4f} - val_loss: {vl:.4f} - val_accuracy: {va:.4f}"]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _memorized(diag):
    return diag.curve.label == "overfitting" and diag.curve.evidence.get("kind") == "short_memorized"


def test_the_keras_paste_is_memorization(tmp_path):
    path = tmp_path / "keras.log"
    path.write_text(KERAS)
    diag = analyze(path)
    assert _memorized(diag), diag.curve
    ev = diag.curve.evidence
    assert ev["evaluations"] == 3 and ev["step"] == 148 and min(ev["gap_ratios"]) >= LOSS_RATIO
    assert ev["train_accuracy"] == [1.0, 1.0, 1.0] and ev["short_log"] is True
    assert [f.code for f in diag.findings if f.severity != "info"] == ["overfitting"]


@pytest.mark.parametrize("points", [2, 5, 9])
def test_memorization_at_any_short_length(tmp_path, points):
    rows = [(0.004 + 0.001 * (i % 2), 0.9990 + 0.0005 * (i % 2), 1.30 + 0.03 * (i % 3), 0.71 - 0.01 * (i % 2))
            for i in range(points)]
    assert _memorized(analyze(_keras(tmp_path, rows))), rows


@pytest.mark.parametrize("why, rows", [
    ("a model that generalizes: accuracies close whatever the loss ratio",
     [(0.0020, 1.0000, 0.0800, 0.9800), (0.0018, 1.0000, 0.0790, 0.9790), (0.0017, 1.0000, 0.0810, 0.9810)]),
    ("the validation loss still falling by more than min_drop",
     [(0.0050, 1.0000, 1.6000, 0.6500), (0.0040, 1.0000, 1.3000, 0.6700), (0.0030, 1.0000, 1.1000, 0.6900)]),
    ("the held-out error rate under ERROR_RATIO times the training one",
     [(0.0500, 0.9000, 1.2000, 0.6700), (0.0480, 0.9050, 1.2100, 0.6700), (0.0470, 0.9100, 1.1900, 0.6800)]),
    ("the validation loss under LOSS_RATIO times the training loss",
     [(0.2000, 0.9950, 1.2000, 0.6700), (0.1900, 0.9950, 1.2100, 0.6700), (0.1800, 0.9960, 1.1900, 0.6800)]),
    ("one evaluation out of three inside the gap",
     [(0.0020, 1.0000, 1.2000, 0.6700), (0.0020, 1.0000, 0.0300, 0.9500), (0.0020, 1.0000, 1.1900, 0.6800)]),
])
def test_silent_twins(tmp_path, why, rows):
    diag = analyze(_keras(tmp_path, rows))
    assert diag.curve.evidence.get("kind") != "short_memorized", why


@pytest.mark.parametrize("train_acc, val_acc", [(0.988, 0.70), (0.97, 0.67), (0.999, 0.88)])
def test_a_training_accuracy_under_fit_memorized_by_the_error_ratio(tmp_path, train_acc, val_acc):
    assert (1 - val_acc) >= ERROR_RATIO * (1 - train_acc) and train_acc - val_acc >= ACC_GAP
    rows = [(0.045 - 0.002 * i, train_acc + 0.0005 * (i % 2), 2.74 + 0.02 * (i % 2), val_acc) for i in range(4)]
    diag = analyze(_keras(tmp_path, rows))
    assert _memorized(diag), diag.curve
    assert diag.curve.evidence["min_error_ratio"] == ERROR_RATIO


def test_silent_twin_a_loss_gap_without_accuracies(tmp_path):
    # A training loss per token against a validation loss per sentence: tenfold apart in a run
    # that generalizes. Without accuracies the gap alone is not read as memorization.
    path = tmp_path / "nmt.log"
    path.write_text("".join(f"epoch {e} train_loss {0.05 - 0.001 * e:.4f} val_loss {2.1 + 0.01 * (e % 2):.4f}\n"
                            for e in range(1, 4)))
    assert analyze(path).curve.evidence.get("kind") != "short_memorized"


def _recorded(tmp_path, train_acc, val_acc):
    steps = [100, 200, 300, 400]
    time = [float(s) for s in steps]
    run = {"scalars": {"step": steps, "time": time, "loss": [0.003, 0.002, 0.0025, 0.002], "accuracy": train_acc},
           "evals": {"step": steps, "time": time, "val_loss": [1.20, 1.25, 1.18, 1.22], "val_accuracy": val_acc}}
    return write_run(tmp_path / "run", run)


def test_a_recorded_run_with_accuracies_memorized(tmp_path):
    diag = analyze(_recorded(tmp_path, [1.0, 1.0, 0.999, 1.0], [0.70, 0.69, 0.71, 0.70]))
    assert _memorized(diag), diag.curve
    assert diag.curve.evidence["step"] == 100


def test_silent_twin_recorded_accuracies_in_percent_and_close(tmp_path):
    diag = analyze(_recorded(tmp_path, [100.0, 100.0, 99.9, 100.0], [95.0, 95.5, 95.2, 95.1]))
    assert diag.curve.evidence.get("kind") != "short_memorized"
    (_, ta), (_, va) = accuracies(load_run(tmp_path / "run"))
    assert ta.max() <= 1 and va.max() <= 1  # percentages read as fractions, both


def test_silent_twin_one_accuracy_a_fraction_the_other_a_percentage(tmp_path):
    diag = analyze(_recorded(tmp_path, [1.0, 1.0, 1.0, 1.0], [70.0, 69.0, 71.0, 70.0]))
    assert diag.curve.evidence.get("kind") != "short_memorized"
    assert accuracies(load_run(tmp_path / "run")) == (None, None)


def test_the_thresholds_are_the_documented_ones():
    assert (FIT, ACC_GAP, LOSS_RATIO, ERROR_RATIO) == (0.99, 0.10, 10.0, 10.0)
