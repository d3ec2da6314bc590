"""Round 19, from the sixth thread set's misses (read after its one grading, a development set since):
console lines whose fields take their names from where they stand, and words a trainer prints alone.

- ``Epoch [19/20], Loss: 2.30``: the bracket is the epoch's own, not a batch counter (every line of an
  epoch had fallen on one step, and all but the last were dropped as repeats);
- ``[Losses: x 0.1, ..., total 2.1, recall: 0.5]``: a loss word labelling a group makes its fields the
  loss's parts, ``total`` the loss;
- ``Train acc: 0.59 loss: 0.61  Val acc: 0.58 loss: 0.63``: a repeated name belongs to the set the
  field before it names;
- TensorFlow's ``tf.Print`` writes ``CrossE[472.02966]``: the name's value;
- ``NaN detected`` alone on a line: a loop's own check, a non-finite loss;
- the one measured series of a console log that names no loss (``Train_rf 4.856e-01``) is its loss.

Each with a silent twin."""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.importers._clean import unwrap
from runlens.io.importers._textline import read_fields
from runlens.io.loader import load_run


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_epoch_bracket_is_the_epoch_not_a_batch_counter(tmp_path):
    rng = np.random.default_rng(0)
    values = np.round(2.3026 + rng.normal(0, 0.003, 30), 4)
    lines = [f"Epoch [{19 + i // 15}/20], Loss: {v:.4f}" for i, v in enumerate(values)]
    run = load_run(_write(tmp_path, lines))
    assert list(run.column("scalars", "loss")) == pytest.approx(values.tolist())  # every line a point
    diag = analyze(_write(tmp_path, lines))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["chance_classes"] == 10


def test_silent_twin_a_counter_after_the_epoch_bracket_still_counts_steps(tmp_path):
    lines = [f"Epoch [{e}/5] [{i}/600] loss: {2.0 / (e * 6 + i / 100):.4f}" for e in (1, 2) for i in (100, 200, 300)]
    run = load_run(_write(tmp_path, lines))
    steps = list(run.column("scalars", "step"))
    assert len(steps) == 6 and len(set(steps)) == 6


def test_a_loss_group_makes_its_fields_the_loss_parts():
    fields = dict(read_fields("[Epoch 0/30, Batch 3/13] [Losses: x 0.1, y 0.2, conf 0.7, cls 0.5, total 1.5, "
                              "recall: 0.5, precision: 0.3]"))
    assert fields["loss total"] == 1.5 and fields["loss x"] == 0.1
    assert fields["recall"] == 0.5 and fields["precision"] == 0.3  # another quantity keeps its name


def test_yolov3_nan_losses_are_a_divergence(tmp_path):
    lines = [f"[Epoch 0/30, Batch {b}/1313] [Losses: x nan, y nan, w nan, h nan, conf 0.75{b % 10}, cls nan, "
             "total nan]" for b in range(323, 327)]
    diag = analyze(_write(tmp_path, lines))
    assert diag.curve.label == "diverged"


@pytest.mark.parametrize("line", ["Loss: nan lr 0.1", "step 3 Loss: 2.3 acc 0.5"])
def test_silent_twin_a_loss_word_with_its_own_value_labels_no_group(line):
    names = [k for k, _ in read_fields(line)]
    assert not any(k.startswith("loss ") for k in names), names


def test_a_repeated_name_takes_the_set_of_the_field_before_it():
    fields = read_fields("Epoch: 1  Train acc: 0.5904 loss: 0.6174  Val acc: 0.5828 loss: 0.6347  "
                         "Test acc: 0.5469 loss: 0.7232")
    assert [k for k, _ in fields] == ["Epoch", "Train acc", "Train loss", "Val acc", "Val loss", "Test acc",
                                      "Test loss"]


def test_silent_twin_no_repeated_name_stays_as_printed():
    assert [k for k, _ in read_fields("Train acc: 0.59 loss: 0.61 lr: 0.1")] == ["Train acc", "loss", "lr"]


@pytest.mark.parametrize("raw, out", [
    ("I tensorflow/core/kernels/logging_ops.cc:64] CrossE[472.02966]", "I tensorflow/core/kernels/logging_ops.cc:64] CrossE: 472.02966"),
    ("loss[nan]", "loss: nan"),
    ("layer[3] 0.5", "layer[3] 0.5"),            # an index, not a value
    ("a[0.5][1]", "a[0.5][1]"),                  # a nested index
])
def test_tf_print_glues_the_value_to_its_message(raw, out):
    assert unwrap(raw) == out


def test_tf_print_of_a_loss_is_read(tmp_path):
    lines = [f"I tensorflow/core/kernels/logging_ops.cc:64] step {i} loss[{2.3 - 0.1 * i:.5f}]" for i in range(6)]
    assert list(load_run(_write(tmp_path, lines)).column("scalars", "loss"))[0] == pytest.approx(2.3)


def test_nan_detected_alone_is_a_nonfinite_loss(tmp_path):
    lines = ["Epoch  2 Update  520 Cost  118.96719", "Epoch  2 Update  530 Cost  226.9092",
             "Epoch  2 Update  540 Cost  11.716671", "Epoch  2 Update  550 Cost  25.91058", "NaN detected"]
    diag = analyze(_write(tmp_path, lines))
    assert "nonfinite_loss" in [f.code for f in diag.findings]


@pytest.mark.parametrize("said", ["No NaN detected", "checked for NaN: none detected"])
def test_silent_twin_a_line_that_says_no_nan(tmp_path, said):
    lines = [f"Epoch 2 Update {u} Cost {2.0 - u / 1000:.4f}" for u in range(510, 560, 10)] + [said]
    assert "nonfinite_loss" not in [f.code for f in analyze(_write(tmp_path, lines)).findings]


def test_the_one_measured_series_of_a_console_log_is_its_loss(tmp_path):
    lines = [f"[13/12/22 11:13:56][teach.callback.progress][INFO] -   Epoch {e}: Train_rf 4.856e-01   Memory 10.0%"
             for e in range(57, 70)]
    diag = analyze(_write(tmp_path, lines))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck"
    assert any("one measured series" in w for w in diag.warnings)


@pytest.mark.parametrize("why, field", [
    ("two measured series: which is watched is not said", "Train_rf {v:.4f} other {w:.4f}"),
    ("a metric", "acc {v:.4f}"),
    ("a count", "samples {n}"),
])
def test_silent_twins_of_the_lone_series(tmp_path, why, field):
    lines = [f"Epoch {e}: " + field.format(v=0.5 + 0.01 * e, w=1.5 - 0.01 * e, n=100 * e) for e in range(1, 9)]
    path = _write(tmp_path, lines)
    try:
        run = load_run(path)
    except RunlensError:
        return
    assert not any("one measured series" in w for w in run.warnings), why
