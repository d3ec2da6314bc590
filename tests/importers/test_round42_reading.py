"""Round 42's reading, from the twenty-eighth thread set's misses (a development set since its one
grading in round 41):

- words a tool prints after a row's numbers (Stan's ``MAY BE DIVERGING... INSPECT ELBO``) are a note
  beside the row, not cells of it;
- a matrix a warning printed above a table (``1 1`` under ``y is not positive definite:``) is not the
  table's first row;
- a headerless column of whole numbers after the counter is a value when some are negative;
- a numeric vector as R prints it (``[1] ... [8] ...``, ``#>`` before each line in a reprex) is one series;
- a line of values closed by its pass's name in brackets (``(validation)``) is that pass's.

Each has a silent twin.
"""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.loader import load_run
from runlens.io.reader import layout, sequence
from tests.importers.logmaker import write_lines

NOTE = "MAY BE DIVERGING... INSPECT ELBO"


def _stan(rows: int, note: str = NOTE, start: float = -886053.2) -> list[str]:
    return [f"  {13600 + 100 * i}  {start * (1 + 0.5 * (i % 3)):.1f}           {106.7 - i:.3f}            "
            f"0.{244 + i}   {note}" for i in range(rows)]


def test_the_words_after_a_rows_numbers_are_a_note():
    assert layout.untail("  13600  -886053.2   106.776   0.244   MAY BE DIVERGING... INSPECT ELBO").split() == [
        "13600", "-886053.2", "106.776", "0.244"]


def test_silent_twin_words_between_the_numbers_stay():
    line = "epoch 3 loss 0.41 acc 0.88 best"
    assert layout.untail(line) == line
    assert layout.untail("3 0.41 best") == "3 0.41 best"  # two numbers: too few to be a row of cells
    assert layout.untail("0  1.23  0.98  0.70  00:13") == "0  1.23  0.98  0.70  00:13"  # fastai's time column


def test_a_table_of_noted_rows_under_a_warning_and_its_matrix_is_read(tmp_path):
    warning = ["Informational Message: The current gradient evaluation of the ELBO is ignored because of the "
               "following issue:", "stan::math::lkj_corr_log: y is not positive definite:", "1 1", "1 1",
               "If this warning occurs often then your model may be either severely ill-conditioned or misspecified."]
    run = load_run(write_lines(tmp_path, warning + _stan(12)))
    assert run.scalars.column("step").to_pylist()[:2] == [13600, 13700]
    assert run.scalars.column("loss").to_pylist()[0] == pytest.approx(-886053.2)


def test_silent_twin_a_matrix_alone_under_prose_is_no_table(tmp_path):
    with pytest.raises(RunlensError):
        load_run(write_lines(tmp_path, ["y is not positive definite:", "1 1", "1 1", "1 1"]))


def test_a_column_of_negative_whole_numbers_after_the_counter_is_the_value(tmp_path):
    rows = [f"run.csv:   {3800 + 100 * i}    -{1 + i % 7}e+00{5 + i % 3}    4951920.{i:03d}   1.000   {NOTE}"
            for i in range(12)]
    run = load_run(write_lines(tmp_path, rows))
    assert run.scalars.column("loss").to_pylist()[0] == -1e5


def test_silent_twin_a_column_of_positive_whole_numbers_is_another_count(tmp_path):
    with pytest.raises(RunlensError):
        load_run(write_lines(tmp_path, [f"{i} {(i * 37) % 11} {i % 4}" for i in range(12)]))


def _r_vector(values: list[float], per_line: int = 7, prefix: str = "#> ") -> list[str]:
    return [f"{prefix} [{i + 1}] " + " ".join(f"{v:.1f}" for v in values[i:i + per_line])
            for i in range(0, len(values), per_line)]


FALLING = [-289968.9 - 4000 * (1 - math.exp(-i / 10)) for i in range(56)]


def test_a_vector_r_printed_is_one_series_named_by_its_expression():
    lines = ["library(PLNmodels)", "#>  Initialization...", "#>  DONE!", "fit$optim_par$objective",
             *_r_vector(FALLING)]
    table = sequence.read(lines)
    assert table is not None and table.names == ["fit$optim_par$objective"]
    assert table.values["fit$optim_par$objective"].tolist() == pytest.approx([round(v, 1) for v in FALLING])


def test_silent_twin_a_vector_with_a_line_missing_or_two_vectors_is_not_one_series():
    lines = _r_vector(FALLING)
    cut = sequence.read(lines[:3] + lines[4:])  # positions 22-28 missing: what follows is not this series
    assert cut is not None and cut.n == 21
    assert sequence.read(["x", *lines, "y", *lines]) is None


def test_silent_twin_a_position_too_long_to_be_one_is_no_vector(tmp_path):
    with pytest.raises(RunlensError):  # refused in one line, not an internal error
        load_run(write_lines(tmp_path, ["[" + "9" * 5000 + "] 1 2 3 4 5"]))


def test_a_long_vector_is_read_whole():
    values = [0.5 + 1 / (i + 2) for i in range(20_000)]
    table = sequence.read(_r_vector(values, per_line=1, prefix=""))
    assert table is not None and table.n == 20_000


def _gtad(val):
    out = []
    for e, (t, v) in enumerate(zip([6.12, 4.65, 4.01, 3.58, 3.49], val, strict=True)):
        out += ["174it [04:30,  1.55s/it]", f"[Epoch {e:03d}]\tLoss {t:.2f} = {t - 1.2:.2f} + 1.20 (train)",
                "204it [00:47,  4.27it/s]", f"[Epoch {e:03d}]\tLoss {v:.2f} = {v - 1.2:.2f} + 1.20 (validation)"]
    return out


def test_a_line_closed_by_its_pass_name_is_that_pass(tmp_path):
    run = load_run(write_lines(tmp_path, _gtad([5.48, 5.53, 5.02, 7.76, 6.62])))
    assert run.scalars.column("loss").to_pylist()[-1] == pytest.approx(3.49)
    assert run.column("evals", "val_loss")[-1] == pytest.approx(6.62)
    assert analyze(run).curve.label == "overfitting"


def test_silent_twin_lines_closed_by_the_training_pass_are_no_validation(tmp_path):
    lines = [ln.replace("(validation)", "(train)") for ln in _gtad([5.48, 5.53, 5.02, 7.76, 6.62])]
    run = load_run(write_lines(tmp_path, lines))
    assert run.evals is None or "val_loss" not in run.evals.column_names
