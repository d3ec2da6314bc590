"""Console fields found by the thread pastes of round 14: a quoted name and value, a number in
seconds whose name holds a loss word, a batch counter after the epoch, a loss part that turns NaN
while no total is printed, and a validation line that only its names call one. Each firing case
has a silent twin that keeps the old reading."""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.io.importers import read
from runlens.io.importers._textline import read_fields

PADDLE = ("2022-03-09 15:20:{s:02d},459-INFO: iter: {i}, lr: 0.000083, 'loss': '{loss}', eta: 0:02:34, "
          "batch_cost: {cost} sec, ips: 5168.58164 images/sec\n")


def _write(tmp_path, text: str, name: str = "train.log"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_quoted_loss_is_the_loss_and_a_cost_in_seconds_is_a_duration(tmp_path):
    lines = "".join(PADDLE.format(s=i, i=20 * i, loss=v, cost=c)
                    for i, (v, c) in enumerate([("24.061707", "0.00039"), ("nan", "1.24839"), ("nan", "1.09")]))
    imp = read("text", _write(tmp_path, lines))
    loss = imp.train["loss"].values
    assert loss[0] == pytest.approx(24.061707) and math.isnan(loss[1])
    assert "batch_cost_sec" in imp.train
    d = analyze(str(tmp_path / "train.log"))
    assert d.curve.label == "diverged" and "nonfinite_loss" in {f.code for f in d.findings}


def test_silent_twin_unquoted_fields_and_a_cost_without_a_unit_read_as_before():
    assert read_fields("iter: 0, loss: 2.5, batch_cost: 0.3") == [("iter", 0.0), ("loss", 2.5), ("batch_cost", 0.3)]
    # An unmatched quote is not a quoted value: the field is read without it, as before.
    assert ("loss", 2.5) in read_fields("step 3 'loss: 2.5 acc: 0.5")


@pytest.mark.parametrize("line, expected", [
    ("step 5 loss 2.5 time 3.2s data 0.1 s lr 1e-3", [("step", 5.0), ("loss", 2.5), ("time (s)", 3.2),
                                                       ("data (s)", 0.1), ("lr", 0.001)]),
    ("step 5, loss: 2.5, elapsed: 12 ms, grad_norm: 3", [("step", 5.0), ("loss", 2.5), ("elapsed (ms)", 12.0),
                                                          ("grad_norm", 3.0)]),
])
def test_a_unit_of_time_joins_the_name_and_starts_no_other(line, expected):
    assert read_fields(line) == expected


def test_silent_twin_a_unit_that_is_not_time_is_left_alone():
    assert read_fields("step 5 loss 2.5 mem 3.2G acc 91%") == [("step", 5.0), ("loss", 2.5), ("mem", 3.2),
                                                              ("acc", 91.0)]


GLUON = ("INFO:root:[Epoch {e}][Batch {b}], Speed: 24.210 samples/sec, CrossEntropy={ce}, SmoothL1={l1}\n")


def test_a_batch_counter_after_the_epoch_indexes_and_a_nan_loss_part_is_a_nonfinite_loss(tmp_path):
    rows = [(0, 0, "19.147", "3.899"), (0, 1, "12.2", "nan"), (0, 2, "11.0", "nan"), (1, 0, "10.5", "nan")]
    path = _write(tmp_path, "".join(GLUON.format(e=e, b=b, ce=ce, l1=l1) for e, b, ce, l1 in rows))
    imp = read("text", path)
    assert list(imp.train["loss"].steps) == [0, 1, 2, 3]  # a running count, not four lines at one epoch
    d = analyze(str(path))
    [f] = [f for f in d.findings if f.code == "nonfinite_loss"]
    assert f.step == 1 and "SmoothL1" in f.title


def test_silent_twin_finite_loss_parts_and_a_batch_size_before_the_epoch(tmp_path):
    rows = [(0, b, f"{19 - b:.3f}", f"{3.9 - 0.1 * b:.3f}") for b in range(8)]
    d = analyze(str(_write(tmp_path, "".join(GLUON.format(e=e, b=b, ce=ce, l1=l1) for e, b, ce, l1 in rows))))
    assert "nonfinite_loss" not in {f.code for f in d.findings}
    # "batch 32" before any epoch is a size: the lines stay at their own step counter.
    text = "".join(f"step {s} batch 32 epoch 1 loss {2 - 0.1 * s:.2f}\n" for s in range(6))
    imp = read("text", _write(tmp_path, text, "size.log"))
    assert list(imp.train["loss"].steps) == list(range(6))


YOLO3 = "epoch:{e} step: {s:4d}/19, lr:0.000052, giou_loss: 2.64, conf_loss: 11.12, prob_loss: 0.08, total_loss: {t}\n"


def test_a_stepless_line_whose_every_name_is_a_validation_one_is_an_evaluation(tmp_path):
    text = (YOLO3.format(e=49, s=0, t="13.83") + YOLO3.format(e=49, s=1, t="12.99")
            + "\ngiou_val_loss:    nan, conf_val_loss:  12.31, prob_val_loss:   0.06, total_val_loss:    nan\n\n"
            + "".join(YOLO3.format(e=50, s=s, t=f"{13 - 0.1 * s:.2f}") for s in range(2, 5)))
    d = analyze(str(_write(tmp_path, text)))
    assert "nonfinite_validation" in {f.code for f in d.findings}


def test_silent_twin_a_stepless_line_mixing_names_is_not_an_evaluation(tmp_path):
    text = (YOLO3.format(e=49, s=0, t="13.83") + YOLO3.format(e=49, s=1, t="12.99")
            + "\nconf_val_loss:  12.31, total_loss:    nan\n\n"
            + "".join(YOLO3.format(e=50, s=s, t=f"{13 - 0.1 * s:.2f}") for s in range(2, 5)))
    imp = read("text", _write(tmp_path, text))
    assert "val_loss" not in imp.evals


def test_a_log_whose_lines_name_no_step_is_read_in_line_order(tmp_path):
    path = _write(tmp_path, "Training...\n" + "".join(f"loss: {v}\n" for v in (2.30, 2.10, 1.95, 1.90, 1.85))
                  + "val loss: 1.99\n")
    imp = read("text", path)
    assert list(imp.train["loss"].steps) == [0, 1, 2, 3, 4] and imp.config["index_kind"] == "row"
    assert list(imp.evals["val_loss"].steps) == [4]
    assert analyze(str(path)).curve.label is not None  # sniffed as a text log, not refused


def test_silent_twin_a_log_with_steps_keeps_them_and_one_without_a_loss_is_refused(tmp_path):
    imp = read("text", _write(tmp_path, "".join(f"step {10 * i} loss: {2 - 0.1 * i:.2f}\n" for i in range(5))))
    assert list(imp.train["loss"].steps) == [0, 10, 20, 30, 40] and imp.config.get("index_kind") != "row"
    from runlens.errors import ImportFailedError
    # Round 28: an accuracy alone on step-less lines is read through its complement
    # (test_round28_readers.py); a speed alone is still no training log.
    with pytest.raises(ImportFailedError, match="no line carries a training step"):
        read("text", _write(tmp_path, "".join(f"speed: {0.1 * i:.2f}\n" for i in range(5)), "speed.log"))


def test_step_less_lines_of_loss_parts_are_numbered_and_summed(tmp_path):
    a, b = [0.1975, 0.151, 0.1056, 0.0857, 0.0752], [0.1511, 0.1005, 0.0769, 0.0699, 0.0617]
    path = _write(tmp_path, "".join(f"saved model weights loss_A: {x:.5f}, loss_B: {y:.5f}\n" for x, y in zip(a, b, strict=True)))
    d = analyze(str(path))
    assert d.curve.label is not None and d.key_numbers["steps"] == 5
    assert d.key_numbers["final_loss"] == pytest.approx(a[-1] + b[-1])


def test_silent_twin_step_less_lines_of_validation_parts_alone_are_no_training_loss(tmp_path):
    # Round 22: the last reading (anyline) takes them as what they say, a validation loss, and says so;
    # they never become the training loss.
    path = _write(tmp_path, "".join(f"val_loss_A: {0.2 - 0.01 * i:.3f}\n" for i in range(5)))
    imp = read("text", path)
    assert "loss" not in imp.train and list(imp.evals) == ["val_loss"]
    assert any("the validation loss is 'val_loss_A'" in w for w in imp.warnings)
