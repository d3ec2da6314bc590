"""Round 20: a loop that prints ``loss`` (or ``loss.item()``) and nothing else leaves its values alone
on their lines, between whatever else it prints (``Epoch 1``, ``saving...``): ``tensor(0.6931,
grad_fn=<NllLossBackward0>)`` is PyTorch's own print of a loss. In a log where no line names a loss
or a step, four such values or more are read as the training loss, numbered in order, and the import
says so. Each with silent twins."""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.errors import ImportFailedError
from runlens.io.importers import detect_kind, read

LOSSES = [0.6931, 0.6929, 0.6932, 0.6930, 0.6931, 0.6933]


def _write(tmp_path, text):
    path = tmp_path / "paste.txt"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("text", [
    "".join(f"tensor({v}, grad_fn=<NllLossBackward0>)\n" for v in LOSSES),
    "".join(f"Epoch {i}\n{v}\nsaving checkpoint...\n" for i, v in enumerate(LOSSES)),
    "".join(f"iteration {100 * i}\n{v}\n" for i, v in enumerate(LOSSES)),
    "".join(f"tensor({v}, device='cuda:0', grad_fn=<AddBackward0>)\n-----\n" for v in LOSSES),
])
def test_values_alone_on_their_lines_are_the_training_loss(tmp_path, text):
    path = _write(tmp_path, text)
    assert detect_kind(path) == "text"
    imp = read("text", path)
    assert list(imp.train["loss"].values) == pytest.approx(LOSSES)
    assert imp.config["index_kind"] == "row"
    assert any("alone on their lines are read as the training loss" in w for w in imp.warnings)
    diag = analyze(path)
    assert diag.curve.label == "underfitting" and "loss_at_chance" in [f.code for f in diag.findings]


def test_a_nan_printed_alone_is_the_loss_going_non_finite(tmp_path):
    path = _write(tmp_path, "".join(f"tensor({v}, grad_fn=<MseLossBackward0>)\n" for v in
                                    [2.31, 2.05, 1.98, 7.4e3, "nan", "nan"]))
    diag = analyze(path)
    assert diag.curve.label == "diverged" and "nonfinite_loss" in [f.code for f in diag.findings]


@pytest.mark.parametrize("why, text", [
    ("three values: no curve", "".join(f"{v}\nsaving\n" for v in LOSSES[:3])),
    ("whole numbers alone are counters, counts or years", "".join(f"{100 * i}\nsaving\n" for i in range(8))),
])
def test_silent_twins_too_few_or_counters_are_no_log(tmp_path, why, text):
    path = _write(tmp_path, text)
    assert detect_kind(path) is None, why


def test_silent_twin_fractions_that_end_a_tenth_higher_are_an_accuracy_and_refused(tmp_path):
    path = _write(tmp_path, "".join(f"{v}\nsaving\n" for v in [0.31, 0.45, 0.52, 0.61, 0.66, 0.71]))
    with pytest.raises(ImportFailedError, match="not a training log"):
        read("text", path)


def test_silent_twin_a_named_loss_wins_over_values_alone(tmp_path):
    text = "".join(f"loss: {v}\n{v / 3:.4f}\n" for v in [2.3, 2.1, 1.9, 1.7, 1.6])
    imp = read("text", _write(tmp_path, text))
    assert np.asarray(imp.train["loss"].values) == pytest.approx([2.3, 2.1, 1.9, 1.7, 1.6])
    assert not any("alone on their lines" in w for w in imp.warnings)
