"""Round 45's reading, from the thirty-first thread set's misses (a development set since its one grading
at the end of round 44):

- an epoch header with words before it (DRTP's ``Summary of epoch 1:``) heads the lines under it as
  ``Epoch 1`` does, and a side tagged in brackets opening a line (``[Training set] Loss: 1.64``,
  ``[ Testing set] Loss: 1.64``) names the side as one in parentheses does; ``testing`` is a held-out
  word as ``test`` is. Only the first of six epochs was read before;
- progress bars with no description and no epoch, of two lengths in turn (D2-Net's ``11500/11500
  [..., loss=1.0000]`` then ``1875/1875 [..., loss=1.0000]``): each that ran to its end is a pass, the
  shorter an evaluation at the last training step. Before, the passes restarted the count (five runs of
  two points each);
- a loop's NaN guard that ended the run, in a sentence (faceswap's ``A NaN was detected and you have NaN
  protection enabled. Training has been terminated.``), is the loss going non-finite; with it, one line
  with a loss is a log to read (three are asked otherwise); and a capital letter closing a name is its
  tag (``Loss A``, ``Loss B``), not the article;
- a running average in parentheses gone NaN (the ImageNet example's ``Angular nan (nan)  Loss 0.0152
  (0.0128)``, Gaze360's) began the next field's name (``nan) Loss``): the loss was lost from that line on;
- a one-stage detector's loss terms named by their target alone, with no total (YOLOv5 v6's ``box obj
  cls``, the oriented variant's ``box obj cls theta`` from the twenty-sixth set, a development set):
  summed as the loss, as ``box_loss cls_loss dfl_loss`` are; refused before.

Each has a silent twin.
"""

from __future__ import annotations

import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.importers._textline import read_fields
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines

_TRAIN = [1.635768, 1.617745, 1.601169, 1.658640, 1.613513]
_TEST = [1.636767, 1.615939, 1.602587, 1.655648, 1.611184]


def _summaries(header: str) -> list[str]:
    out = []
    for e, (tr, te) in enumerate(zip(_TRAIN, _TEST, strict=True), start=1):
        out += [header.format(e=e), f"\t[Training set] Loss: {tr:.6f}, Accuracy:  80.70%",
                f"\t[ Testing set] Loss: {te:.6f}, Accuracy:  80.57%"]
    return out


def test_an_epoch_summary_header_heads_both_sides(tmp_path):
    run = load_run(write_lines(tmp_path, _summaries("Summary of epoch {e}:")))
    assert run.scalars.column("loss").to_pylist() == _TRAIN
    assert run.evals.column("val_loss").to_pylist() == _TEST
    assert run.scalars.column("epoch").to_pylist() == [1, 2, 3, 4, 5]


def test_silent_twin_a_line_that_names_an_epoch_among_other_words_is_no_header(tmp_path):
    # "Best model so far at epoch 1" reports; it heads nothing, and does not start a second run.
    lines = [f"Epoch {e}: loss {v:.6f}" for e, v in enumerate(_TRAIN, start=1)]
    lines.insert(3, "Best model so far at epoch 1")
    run = load_run(write_lines(tmp_path, lines))
    assert run.scalars.column("loss").to_pylist() == _TRAIN


def _bars(train_n: int, valid_n: int, losses: list[tuple[float, float]]) -> list[str]:
    out = []
    for tr, va in losses:
        out += [f"100%|#####| {train_n}/{train_n} [1:27:24<00:00,  2.19it/s, loss={tr:.4f}]",
                f"100%|#####| {valid_n}/{valid_n} [11:24<00:00,  2.74it/s, loss={va:.4f}]", "Building a new dataset..."]
    return out


def test_undescribed_bars_of_two_lengths_are_passes_and_evaluations(tmp_path):
    losses = [(1.2, 1.3), (1.1, 1.2), (1.05, 1.1), (1.0, 1.05)]
    run = load_run(write_lines(tmp_path, _bars(11500, 1875, losses)))
    steps = [11500, 23000, 34500, 46000]
    assert run.scalars.column("loss").to_pylist() == [1.2, 1.1, 1.05, 1.0]
    assert run.scalars.column("step").to_pylist() == steps
    assert run.evals.column("val_loss").to_pylist() == [1.3, 1.2, 1.1, 1.05]
    assert run.evals.column("step").to_pylist() == steps


def test_a_shorter_bar_before_training_is_read_as_it_came(tmp_path):
    # D2-Net's paste: the model evaluated once before training (1875 batches), then four passes of
    # 11500 training batches, each followed by its evaluation, every one at loss=1.0000.
    lines = ["100%|#####| 1875/1875 [11:24<00:00,  2.74it/s, loss=1.0914]"] + _bars(11500, 1875, [(1.0, 1.0)] * 4)
    run = load_run(write_lines(tmp_path, lines))
    assert run.scalars.column("loss").to_pylist() == [1.0914, 1.0, 1.0, 1.0, 1.0]
    assert run.scalars.column("step").to_pylist() == [1875, 13375, 24875, 36375, 47875]
    assert run.evals.column("val_loss").to_pylist() == [1.0] * 4
    d = analyze(write_lines(tmp_path, lines))
    assert d.curve.label == "underfitting", d.curve.reason


def test_keras_bars_of_two_lengths_with_no_epoch_replayed_alike(tmp_path):
    # Keras' bar with no epoch header is read by the line plan's replay after its first line: both ways
    # a shorter bar after a finished longer one is the evaluation.
    lines = []
    for tr, va in [(2.0, 2.1), (1.5, 1.7), (1.2, 1.4), (1.0, 1.3)]:
        lines += [f"100/100 [==============================] - 2s 20ms/step - loss: {tr:.4f}",
                  f"20/20 [==============================] - 0s 5ms/step - loss: {va:.4f}"]
    run = load_run(write_lines(tmp_path, lines))
    assert run.scalars.column("loss").to_pylist() == [2.0, 1.5, 1.2, 1.0]
    assert run.evals.column("val_loss").to_pylist() == [2.1, 1.7, 1.4, 1.3]


def test_silent_twin_bars_of_one_length_stay_passes_of_training(tmp_path):
    lines = [f"100%|#####| 32/32 [00:01<00:00, 20.1it/s, loss={v:.3f}]" for v in (2.0, 1.5, 1.2, 1.0)]
    run = load_run(write_lines(tmp_path, lines))
    assert run.scalars.column("step").to_pylist() == [32, 64, 96, 128]
    assert run.evals is None or "val_loss" not in run.evals.column_names


_GUARD = "09/20/2025 00:27:25 ERROR    A NaN was detected and you have NaN protection enabled. Training has been terminated."


def test_a_nan_guard_that_ended_the_run_is_a_nonfinite_loss_on_one_line(tmp_path):
    lines = ["[00:27:25] [#00015] Loss A: 0.20026, Loss B: 0.22471", "09/20/2025 00:27:25 CRITICAL Error caught! Exiting...",
             _GUARD]
    d = analyze(write_lines(tmp_path, lines))
    found = {f.code: f for f in d.findings}
    assert found["nonfinite_loss"].severity == "error"
    assert "NaN protection" in found["nonfinite_loss"].title + str(found["nonfinite_loss"].evidence)


@pytest.mark.parametrize("said", ["No NaN detected, training stopped at its last epoch.",
                                  "Training has been terminated by the user."])
def test_silent_twin_one_loss_line_without_a_nan_guard_is_refused(tmp_path, said):
    with pytest.raises(RunlensError):
        analyze(write_lines(tmp_path, ["[00:27:25] [#00015] Loss A: 0.20026, Loss B: 0.22471", said]))


def test_a_capital_letter_closing_a_name_is_its_tag():
    assert read_fields("Loss A: 0.20026, Loss B: 0.22471") == [("Loss A", 0.20026), ("Loss B", 0.22471)]


@pytest.mark.parametrize("prose", ["I loss 0.3", "loss of a 0.3", "but training continued for 3"])
def test_silent_twin_an_article_or_a_pronoun_is_prose(prose):
    assert read_fields(prose) == []


_METER = ("Epoch: [325][{i}/1587]  Time 0.721 (0.724)  Data 0.010 (0.013)  Angular {a} ({m})  "
          "Loss {v:.4f} (0.0128)  Prediction Error 2.5 (2.58)")


def test_a_nan_running_average_leaves_the_next_name_alone(tmp_path):
    losses = [0.0120, 0.0104, 0.0133, 0.0152, 0.0134, 0.0138]
    angular = [("2.07", "2.42"), ("2.12", "2.42"), ("2.40", "2.42"), ("nan", "nan"), ("2.48", "nan"), ("2.70", "nan")]
    lines = [_METER.format(i=651 + k, a=a, m=m, v=v) for k, (v, (a, m)) in enumerate(zip(losses, angular, strict=True))]
    run = load_run(write_lines(tmp_path, lines))
    assert run.scalars.column("loss").to_pylist() == losses
    assert read_fields("Loss nan (nan) Acc 0.5 (0.4)")[1] == ("Acc", 0.5)


def test_silent_twin_a_name_with_nan_in_parentheses_keeps_it():
    # "(nan)" right after a name, not after a value, is part of the name as printed.
    assert read_fields("Loss (nan) 0.3") == [("Loss (nan)", 0.3)]


_YOLO_HEAD = "      Epoch   gpu_mem       {a}       {b}       {c}    labels  img_size"
_YOLO_ROW = ("      {e}/299     3.44G   {x:.5f}   {y:.5f}   {z:.5f}        44       640: 100%|##########| 8/8 "
             "[00:05<00:00,  1.55it/s]")


def _yolo(a: str, b: str, c: str) -> list[str]:
    rows = [(0.097, 0.066, 0.038), (0.087, 0.056, 0.028), (0.077, 0.050, 0.023)]
    out = []
    for e, (x, y, z) in enumerate(rows):
        out += [_YOLO_HEAD.format(a=a, b=b, c=c), _YOLO_ROW.format(e=e, x=x, y=y, z=z), ""]
    return out


def test_a_one_stage_detectors_terms_without_a_total_are_summed(tmp_path):
    # YOLOv5 from v6.0 to v6.2 prints its loss terms by their target alone, with no total.
    run = load_run(write_lines(tmp_path, _yolo("box", "obj", "cls")))
    assert run.scalars.column("loss").to_pylist() == pytest.approx([0.201, 0.171, 0.150])
    assert "one-stage detector" in run.config["import_roles"]["loss"]["why"]


@pytest.mark.parametrize("names", [("boxes", "obj", "cls"), ("obj", "cls", "iou")])
def test_silent_twin_no_box_term_is_no_detector(tmp_path, names):
    # Without a ``box`` term named alone, the columns are counts or scores: no loss is read from them.
    with pytest.raises(RunlensError):
        load_run(write_lines(tmp_path, _yolo(*names)))
