"""Round 39's readings, from the twenty-fifth thread set (a development set since its one grading in
round 38):

- The sides after a metric word (mlpack's ``0 - accuracy: train = 19.26%, valid = 19.63%``) are that
  metric's values, not the loss's (a healthy run's rising accuracy was read as a loss rising: diverged).
- A header row over rows whose one column is a phrase of numbers and words (tf_cnn_benchmarks'
  ``1   images/sec: 5741.7 +/- 0.0 (jitter = 0.0)   9.428``) is split at its wide gaps (refused before).
- A headerless table of a counter and up to five values (timm's ``summary.csv`` without its header) reads
  its first value as the loss (only up to three values were read).
- Bare update lines (``update param, loss = 2.1, gradnorm = 0``) with one summary line that carries a step
  are read in rows, not as a run of one step; ``gradnorm`` is the gradient norm.

Each has a silent twin.
"""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.errors import RunFormatError
from runlens.io.importers._textline import read_fields
from runlens.io.importers.anyline import parse_line
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines

ACC = [19.26, 29.84, 42.27, 46.69, 54.42, 64.66, 68.47, 73.32, 77.92, 76.82, 82.39, 79.23, 79.69, 85.82, 84.09,
       83.36, 84.48, 82.82, 86.27, 86.06, 86.93, 78.90, 86.46, 87.07, 87.20]


def _mlpack(word="accuracy: "):
    return ["> Reading data ...", "Model made and optimizer done."] + [
        f"{i} - {word}train = {a:.4f}%, valid = {a - 0.3:.4f}%" for i, a in enumerate(ACC)]


def test_the_sides_after_a_metric_word_are_that_metrics():
    _, fields = parse_line("3 - accuracy: train = 46.6875%, valid = 47.0595%")
    assert fields == [("train accuracy", pytest.approx(46.6875)), ("valid accuracy", pytest.approx(47.0595))]
    assert read_fields("accuracy: train = 0.46, valid = 0.47") == [("train accuracy", 0.46), ("valid accuracy", 0.47)]


def test_a_rising_accuracy_of_both_sides_is_no_diverged_loss(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _mlpack())))
    assert d.curve.label != "diverged"
    assert not any(f.code == "diverged" for f in d.findings)


def test_silent_twin_sides_with_no_metric_word_are_still_their_losses(tmp_path):
    _, fields = parse_line("3 - train = 0.6875, valid = 0.7595")
    assert [k for k, _ in fields] == ["train", "valid"]
    # A named field after the group ends it: ``loss`` there is the loss, not an accuracy.
    assert read_fields("acc: train = 0.9, loss = 0.3") == [("train acc", 0.9), ("loss", 0.3)]


def _tf_cnn(losses, gap="       "):
    out = ["Step    Img/sec total_loss"]
    for i, v in zip([1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], losses, strict=False):
        out.append(f"{i}{gap}images/sec: {5741.7 + i:.1f} +/- {0.5 * i:.1f} (jitter = {1.5 * i:.1f}){gap}{v}")
    return out


def test_a_column_that_is_a_phrase_is_split_at_the_wide_gaps(tmp_path):
    losses = ["9.428", "9.259"] + ["nan"] * 9
    run = load_run(write_lines(tmp_path, _tf_cnn(losses)))
    steps = run.steps("scalars").tolist()
    assert steps[:3] == [1, 10, 20]
    loss = run.scalars.column("loss").to_pylist()
    assert loss[:2] == pytest.approx([9.428, 9.259]) and all(math.isnan(v) for v in loss[2:])
    assert analyze(run).curve.label == "diverged"


def test_silent_twin_a_phrase_row_with_single_spaces_is_not_split(tmp_path):
    with pytest.raises(RunFormatError):
        load_run(write_lines(tmp_path, _tf_cnn(["9.428", "9.259"] + ["nan"] * 9, gap=" ")))


TIMM = [(200 + i, 4.40 - 0.005 * i, 4.135 + 0.003 * i, 7.7, 24.3) for i in range(9)]


def test_a_headerless_summary_of_five_values_reads_the_first_as_the_loss(tmp_path):
    rows = [f"{e},{a!r},{b!r},{c!r},{d!r}" for e, a, b, c, d in TIMM] + ["209,nan,4.16,7.72,24.02",
                                                                         "210,nan,nan,1.0,5.0", "211,nan,nan,1.0,5.0"]
    run = load_run(write_lines(tmp_path, rows, name="summary.txt"))
    assert run.steps("scalars").tolist()[0] == 200
    assert run.scalars.column("loss").to_pylist()[:2] == pytest.approx([4.40, 4.395])
    assert analyze(run).curve.label == "diverged"


def test_silent_twin_a_headerless_table_of_seven_values_is_no_log(tmp_path):
    rows = [",".join([str(i)] + [f"{0.1 * i + j:.3f}" for j in range(7)]) for i in range(12)]
    with pytest.raises(RunFormatError):
        load_run(write_lines(tmp_path, rows, name="data.txt"))


def _updates(grads, summary=1):
    losses = [0.647, 2.261, 2.104, 2.142, 2.161, 2.173, 2.060, 2.179, 2.074, 2.101, 2.133]
    out = ["start training"] + [f"update param, loss = {v:.8f}, gradnorm = {g:.4e}" for v, g in zip(losses, grads,
                                                                                                  strict=True)]
    return out + [f"iteration {8000 * (k + 1)}, loss = 2.07385349, gradnorm = 0.0000e+00" for k in range(summary)]


def test_bare_update_lines_with_one_stepped_summary_are_read_in_rows(tmp_path):
    grads = [6.74, 0.969, 1.57e-3] + [0.0] * 8
    run = load_run(write_lines(tmp_path, _updates(grads)))
    assert run.scalars.num_rows >= 11
    assert run.scalars.column("grad_norm").to_pylist()[:3] == pytest.approx(grads[:3])
    d = analyze(run)
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_no_gradient"


def test_silent_twin_three_stepped_lines_are_a_log_of_steps(tmp_path):
    run = load_run(write_lines(tmp_path, _updates([1.0] * 11, summary=3)))
    assert run.steps("scalars").tolist() == [8000, 16000, 24000]


def test_silent_twin_parts_printed_under_a_stepped_line_are_not_its_rows(tmp_path):
    # DB's logger prints the loss with its step, then each part on a line of its own.
    lines = ["[INFO] Training epoch 0", "[INFO] step:      0, epoch:   0, loss: 1.000000, lr: 0.007000",
             "[INFO] bce_loss: 0.000000", "[INFO] thresh_loss: 1.000000", "[INFO] l1_loss: 0.000000"]
    run = load_run(write_lines(tmp_path, lines))
    assert run.steps("scalars").tolist() == [0]
    assert run.scalars.column("loss").to_pylist() == [1.0]

