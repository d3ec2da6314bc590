"""Lines that name the value before the step and give it after (round 16, from the third thread set's
refusals, graded once and read since): "focal loss at iteration 30995: 7.34", DL4J's "Score at iteration
60 is NaN"; Darknet's "931: 86426484736.0, 8648297472.0 avg, 0.000751 rate, ..." progress lines; and a
data set's error measure joined by an underscore (LIBMF's ``tr_rmse``/``va_rmse``). Each firing case has
a silent twin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens import analyze
from runlens.io.importers import detect_kind, read
from runlens.io.reader.names import role_of, set_metric_role


def _read(tmp_path, text: str, name: str = "train.log"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    kind = detect_kind(path)
    assert kind is not None
    return read(kind, path), path


CORNER = "".join(f"focal loss at iteration {i}:    {f}\ntraining loss at iteration {i}: {t}\n"
                 for i, f, t in [(100, 7.34, 7.48), (200, 6.91, 7.02), (300, 6.50, 6.61), (400, 6.21, 6.30)])


def test_a_name_at_a_counter_then_its_value_is_read_at_that_step(tmp_path):
    imp, _ = _read(tmp_path, CORNER + "validation loss at iteration 400: 8.355\n")
    assert list(imp.train["loss"].steps) == [100, 200, 300, 400]
    assert list(imp.train["loss"].values) == pytest.approx([7.48, 7.02, 6.61, 6.30])
    assert list(imp.evals["val_loss"].values) == pytest.approx([8.355])


def test_a_value_given_with_is_and_nan_is_non_finite(tmp_path):
    text = "".join(f"09:54:{i:02d}.023 [main] INFO  o.d.o.l.ScoreIterationListener - loss at iteration {20 * i} "
                   f"is {v}\n" for i, v in enumerate(["2.30", "2.10", "NaN", "NaN"]))
    imp, path = _read(tmp_path, text)
    assert math.isnan(imp.train["loss"].values[2])
    assert analyze(str(path)).curve.label == "diverged"


def test_silent_twin_prose_with_at_iteration_and_more_words_after_is_no_field(tmp_path):
    text = ("we saw the loss at iteration 300 jump, then recover\n"
            + "".join(f"step {i} loss {v}\n" for i, v in [(100, 2.3), (200, 2.1), (300, 1.9), (400, 1.8)]))
    imp, _ = _read(tmp_path, text)
    assert list(imp.train["loss"].values) == pytest.approx([2.3, 2.1, 1.9, 1.8])


DARKNET = ("Region Avg IOU: 0.000000, Class: 0.000000, Obj: 0.000000, No Obj: 0.004019, Avg Recall: 0.000000,  count: 1\n"
           "929: 12.5, 14.1 avg, 0.000751 rate, 0.089617 seconds, 929 images\n"
           "930: 9.2, 13.6 avg, 0.000752 rate, 0.089617 seconds, 930 images\n"
           "931: 86426484736.000000, 8648297472.000000 avg, 0.000751 rate, 0.089617 seconds, 931 images\n"
           "Loaded: 0.000031 seconds\n"
           "932: inf, inf avg, 0.000758 rate, 0.270606 seconds, 932 images\n")


def test_darknet_progress_lines_are_the_batch_loss_its_average_and_the_rate(tmp_path):
    imp, path = _read(tmp_path, DARKNET)
    assert list(imp.train["loss"].steps) == [929, 930, 931, 932]
    assert imp.train["loss"].values[2] == pytest.approx(86426484736.0)
    assert np.isinf(imp.train["loss"].values[3])
    assert imp.train["lr"].values[0] == pytest.approx(0.000751)
    assert analyze(str(path)).curve.label == "diverged"


def test_silent_twin_a_counter_and_two_numbers_without_avg_and_rate_are_not_darknets(tmp_path):
    text = "".join(f"{i}: {v}, {v * 2}\n" for i, v in enumerate([2.3, 2.1, 1.9, 1.8, 1.7]))
    path = tmp_path / "t.log"
    path.write_text(text, encoding="utf-8")
    kind = detect_kind(path)
    assert kind is None or "lr" not in read(kind, path).train


LIBMF = """iter      tr_rmse      va_rmse          obj
   0       3.2384       1.6034   8.5073e+01
   1       2.9674       1.2867   7.2171e+01
   2       2.2669       0.9555   4.3856e+01
   3       1.7516       0.7339   2.8008e+01
   4       1.3270       0.6599   1.8119e+01
   5       1.0168       0.7015   1.2712e+01
"""


def test_a_sets_error_measure_joined_by_an_underscore_is_that_sets_loss(tmp_path):
    imp, _ = _read(tmp_path, LIBMF, "libmf.txt")
    assert imp.train["loss"].values[0] == pytest.approx(3.2384)
    assert imp.evals["val_loss"].values[-1] == pytest.approx(0.7015)
    assert set_metric_role("va_rmse") == (True, "val_loss")


@pytest.mark.parametrize("name, role", [("train_box_loss", (False, None)), ("eval_wiki_loss", (True, "val_loss@wiki")),
                                        ("val_acc", (True, None)), ("train_time", (False, None))])
def test_silent_twin_parts_named_sets_and_metrics_keep_their_roles(name, role):
    assert role_of(name) == role
