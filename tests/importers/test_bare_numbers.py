"""Numbers pasted with no name beside each (round 16, from the second thread set's refusals): a list of
losses one per line, a NumPy or PyTorch array as printed (wrapped, possibly cut off), a JSON list, a
counter and a value per line (``print(i, loss)``); and three names the console and table readers
missed (Keras 1's ``val. loss``, a boosting library's ``rmspe``). Each firing case has a silent twin
that keeps its old reading or refusal."""

from __future__ import annotations

import numpy as np
import pytest
from shapes import read_paste

from runlens.cli import main
from runlens.io.importers import detect_kind, read
from runlens.io.importers._textline import read_fields

LOSSES = [9.28, 8.96, 9.01, 8.55, 8.94, 8.42]


def _loss(imp) -> np.ndarray:
    return np.asarray(imp.train["loss"].values, dtype=float)


@pytest.mark.parametrize("text", [
    "\n".join(str(v) for v in LOSSES) + "\n",
    "=============== Loss Array ===============\n[9.28 8.96 9.01\n 8.55 8.94 8.42]\n",
    "array([ 9.28,  8.96,  9.01,\n        8.55,  8.94,  8.42,\n",  # the paste cut before the close
    "[9.28, 8.96, 9.01, 8.55, 8.94, 8.42]\n",
    "tensor([9.2800, 8.9600, 9.0100, 8.5500, 8.9400, 8.4200], dtype=torch.float64)\n",
    "losses = [9.28, 8.96, 9.01, 8.55, 8.94, 8.42]\n",
])
def test_a_bare_list_of_numbers_is_read_as_the_training_loss(tmp_path, text):
    imp = read_paste(tmp_path, text)
    assert _loss(imp) == pytest.approx(LOSSES)
    why = imp.config["import_roles"]["loss"]["why"]
    assert "no name" in why or "loss" in imp.config["import_roles"]["loss"]["columns"][0].lower()


def test_a_titled_list_takes_its_title_as_its_name(tmp_path):
    imp = read_paste(tmp_path, "val_loss:\n0.9\n0.8\n0.85\n0.95\n1.1\n")
    assert "val_loss" in imp.evals and "loss" not in imp.train


@pytest.mark.parametrize("text", [
    "[[0.9, 0.8], [0.7, 0.6], [0.5, 0.4]]\n",             # a matrix, not a series
    "0.9 0.8\n0.7 0.6\n0.5 0.4\n0.3 0.2\n",                # two numbers a line, no bracket: a table's rows
    "0.9\n0.8\n0.7\n",                                     # three numbers: no curve
    "Epoch 1\n0.9\nsome text\n0.8\n0.7\n0.6\n",            # words between the numbers
])
def test_silent_twin_matrices_rows_too_few_or_prose_are_not_a_sequence(tmp_path, text):
    path = tmp_path / "paste.txt"
    path.write_text(text, encoding="utf-8")
    kind = detect_kind(path)
    if kind == "table":
        imp = read(kind, path)
        assert "values" not in imp.config["import_roles"].get("loss", {}).get("columns", [])


def test_a_named_series_that_is_no_loss_is_refused_with_the_flag_that_names_it(tmp_path, capsys):
    path = tmp_path / "acc.txt"
    path.write_text("x = [0.5, 0.6, 0.7, 0.8, 0.85]\n", encoding="utf-8")
    assert main(["analyze", str(path)], standalone_mode=False) == 2
    err = capsys.readouterr().err
    assert "--loss x names it" in err and "Traceback" not in err
    assert main(["analyze", str(path), "--loss", "x"], standalone_mode=False) in (0, 1)


@pytest.mark.parametrize("text", [
    "".join(f"{123873 + i}: {v}\n" for i, v in enumerate([-5.48, -5.35, -5.30, -5.46, -5.55])),
    "".join(f"{i} {v}\n" for i, v in enumerate([2.3026, 2.2011, 2.1034, 1.9522, 1.8123])),
    "".join(f"{10 * i}, {v}\n" for i, v in enumerate([2.3026, 2.2011, 2.1034, 1.9522, 1.8123])),
    # print(i, loss, acc): the first value after the counter; a label before the counter is no column.
    "".join(f"{i} {v} {v / 3}\n" for i, v in enumerate([2.3026, 2.2011, 2.1034, 1.9522, 1.8123])),
    "".join(f"batch: {i} {v} 0.7\n" for i, v in enumerate([2.3026, 2.2011, 2.1034, 1.9522, 1.8123])),
])
def test_a_counter_and_a_value_per_line_are_the_step_and_the_loss(tmp_path, text):
    imp = read_paste(tmp_path, text)
    roles = imp.config["import_roles"]
    assert roles["index"]["how"] == "step" and "counts up" in roles["index"]["why"]
    assert _loss(imp).size == 5
    if "2.3026" in text:  # the loss is the first value after the counter, whatever follows it
        assert _loss(imp) == pytest.approx([2.3026, 2.2011, 2.1034, 1.9522, 1.8123])


@pytest.mark.parametrize("text", [
    "".join(f"{c} {v}\n" for c, v in [(3, 2.3), (1, 2.2), (2, 2.1), (5, 1.9), (4, 1.8)]),  # no counter
    "".join(f"{i} {i * 2}\n" for i in range(5)),                                          # both integral
    # seven columns: wider than a loop's print or a trainer's summary file (six at most), a data file's features
    "".join(f"{i} {v} {v / 2} {v} {v} {v / 3} {v / 4}\n" for i, v in enumerate([2.3, 2.2, 2.1, 1.9, 1.8])),
    "".join(f"{i} x {v}\n" for i, v in enumerate([2.3, 2.2, 2.1, 1.9, 1.8])),         # a word between
])
def test_silent_twin_no_counter_integral_values_or_many_columns_name_no_loss(tmp_path, text):
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    kind = detect_kind(path)
    assert kind is None or "loss" not in read(kind, path).train


def test_an_abbreviation_dot_keeps_the_name_going():
    fields = dict(read_fields("5823/5823 [======] - 322s - loss: 678.7651 - val. loss: 91479.6172"))
    assert fields["val. loss"] == pytest.approx(91479.6172) and fields["loss"] == pytest.approx(678.7651)
    assert dict(read_fields("Avg. Loss: 0.5"))["Avg. Loss"] == 0.5


def test_silent_twin_a_sentence_ending_before_a_name_does_not_join_it():
    fields = dict(read_fields("Step 10: 220.5 records/second. Loss: 3.25"))
    assert fields.get("Loss") == pytest.approx(3.25)


def test_a_boosting_error_measure_names_each_sets_loss(tmp_path):
    lines = "".join(f"[{i}] train-rmspe:{0.36 - 0.002 * i:.6f} eval-rmspe:{0.84 + 0.003 * i:.6f}\n"
                    for i in range(10, 22))
    path = tmp_path / "xgb.log"
    path.write_text(lines, encoding="utf-8")
    imp = read(detect_kind(path), path)
    assert "loss" in imp.train and "val_loss" in imp.evals


def test_silent_twin_a_score_that_rises_is_no_loss(tmp_path):
    lines = "".join(f"[{i}] train-auc:{0.7 + 0.01 * i:.4f} eval-auc:{0.69 + 0.01 * i:.4f}\n" for i in range(12))
    path = tmp_path / "xgb.log"
    path.write_text(lines, encoding="utf-8")
    kind = detect_kind(path)
    assert kind is None or "loss" not in read(kind, path).train


FASTAI_V1 = """Total time: 06:39
epoch train_loss valid_loss error_rate
1 1.513021 1.041628 0.507326 (00:13)
2 1.290093 0.994758 0.443223 (00:09)
3 1.185764 0.936145 0.410256 (00:09)
4 1.117229 0.838402 0.322344 (00:09)
5 1.022635 0.734872 0.252747 (00:09)
"""


def test_a_header_one_name_short_of_rows_ending_in_no_number_names_the_leading_cells(tmp_path):
    imp = read_paste(tmp_path, FASTAI_V1)
    assert _loss(imp) == pytest.approx([1.513021, 1.290093, 1.185764, 1.117229, 1.022635])
    assert list(imp.evals["val_loss"].values) == pytest.approx([1.041628, 0.994758, 0.936145, 0.838402, 0.734872])


def test_silent_twin_pandas_unnamed_index_column_still_shifts_the_names(tmp_path):
    text = "   loss  val_loss\n0  1.50  1.04\n1  1.29  0.99\n2  1.18  0.93\n3  1.11  0.83\n"
    imp = read_paste(tmp_path, text)
    assert _loss(imp) == pytest.approx([1.50, 1.29, 1.18, 1.11])


@pytest.mark.parametrize("name", ["dice_loss", "kl_loss", "giou_loss", "ssim_loss"])
def test_a_name_ending_in_the_loss_word_is_a_loss_whatever_metric_it_is_built_on(name):
    from runlens.io.reader.names import is_lossish, tokens
    assert is_lossish(tokens(name))


@pytest.mark.parametrize("name", ["dice", "loss_acc", "iou_score", "loss_time", "time_loss", "loss_scale"])
def test_silent_twin_metrics_costs_and_scales_stay_no_loss(name):
    from runlens.io.reader.names import is_lossish, tokens
    assert not is_lossish(tokens(name))


def test_a_segmentation_progress_bar_with_a_dice_loss_is_read(tmp_path):
    bar = "{}: 100%|##########| 46/46 [00:29<00:00,  1.55it/s, dice_loss - {}, iou_score - {}]\n"
    text = "".join(f"\nEpoch: {e}\n" + bar.format("train", t, 0.5) + bar.format("valid", v, 0.6)
                   for e, (t, v) in enumerate([(0.4465, 0.3293), (0.2871, 0.2415), (0.2203, 0.2057)]))
    path = tmp_path / "smp.log"
    path.write_text(text, encoding="utf-8")
    imp = read(detect_kind(path), path)
    assert _loss(imp) == pytest.approx([0.4465, 0.2871, 0.2203]) and "val_loss" in imp.evals
