"""Round 43's reading, from the twenty-ninth thread set's misses (a development set since its one
grading in round 42):

- a leader of dots (or an ellipsis) between a name and its value, or after a counter, is a separator
  (Chainer's ``batch 0/82783... training loss is...2.35e8``);
- blocks headed by a rising count (``epoch 100 done``) are a history whatever their values: every loss
  part NaN at every report, or a loss that never moves;
- the one number right after a line's counter with no name of its own, outside brackets, is the loss
  when no line names one (NeuroSAT's ``[3] 0.6932 (0.30, 0.20, 0.30, 0.20) [53s]``);
- a score named only a performance (``train perf: 74.38 %``) is an accuracy, never a loss.

Each has a silent twin.
"""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.importers._clean import unwrap
from runlens.io.importers.anyline import parse_line
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines


def _loss(run) -> list[float]:
    return run.scalars.column("loss").to_pylist()


# -- leaders of dots ---------------------------------------------------------------------------------

def test_a_leader_of_dots_is_a_separator():
    assert unwrap("(epoch 0) batch 3/82783... training loss is...63537960.0") == \
        "(epoch 0) batch 3/82783 training loss is 63537960.0"
    assert unwrap("Epoch: 289/500...Train Loss: 0.1521...Val Loss: 0.7511...") == \
        "Epoch: 289/500 Train Loss: 0.1521 Val Loss: 0.7511..."


def test_silent_twin_dots_that_lead_nowhere_stay():
    # At the line's end, after a space or a bracket's opening, or before a space and nothing: no separator.
    for line in ("Loading data...", "[..........] 60/60", "Epoch 3 ......", "loss: 0.5 ...", "3.14"):
        assert unwrap(line) == line, line


def test_a_loss_after_a_leader_is_read(tmp_path):
    values = [2.35e8, 3.29e8, 1.54e8, 6.35e7, 5.86e7, 5.52e7, 5.41e7]
    lines = ["epoch 0"] + [f"(epoch 0) batch {i}/82783... training loss is...{v!r}" for i, v in enumerate(values)]
    run = load_run(write_lines(tmp_path, lines))
    assert _loss(run) == pytest.approx(values)


def test_silent_twin_the_same_lines_without_a_value_are_no_log(tmp_path):
    lines = [f"(epoch 0) batch {i}/82783... training loss is..." for i in range(7)]
    with pytest.raises(RunlensError):
        load_run(write_lines(tmp_path, lines))


# -- blocks headed by a rising count -------------------------------------------------------------------

def _stanzas(values: list[str], title: str = "epoch {n} done") -> list[str]:
    out = ["loading content image completed"]
    for k, v in enumerate(values, start=1):
        out += [title.format(n=100 * k), "losses:", f"  content_4_2: {v}", f"  style_1_2  : {v}", f"  tv         : {v}"]
    return out


def test_blocks_under_a_rising_count_with_every_value_nan_are_a_diverged_run(tmp_path):
    run = load_run(write_lines(tmp_path, _stanzas(["nan"] * 4)))
    assert run.steps("scalars").tolist() == [100, 200, 300, 400]
    assert all(math.isnan(v) for v in _loss(run))
    d = analyze(run)
    assert d.curve.label == "diverged", d.curve
    assert any(f.code == "nonfinite_loss" for f in d.findings)


def test_blocks_under_a_rising_count_with_one_value_are_read(tmp_path):
    run = load_run(write_lines(tmp_path, _stanzas(["0.6931"] * 6)))
    assert _loss(run) == pytest.approx([3 * 0.6931] * 6)


@pytest.mark.parametrize("block", [
    # A settings box printed at every report is one record, not a history: nothing counts the blocks.
    ["Result for trial", "  lr: 0.001", "  momentum: 0.9", ""],
    # A count that does not rise counts nothing either.
    ["epoch 1 done", "losses:", "  content: 0.5", "  tv: 0.1"],
])
def test_silent_twin_blocks_of_one_value_without_a_rising_count_are_no_history(tmp_path, block):
    with pytest.raises(RunlensError):
        load_run(write_lines(tmp_path, block * 4))


# -- the number after the counter ----------------------------------------------------------------------

def _neurosat(values: list[float], more: str = "") -> list[str]:
    out = ["Training"]
    for k, v in enumerate(values):
        out += [f"Loading data/train/sr5/data_dir=grp{k + 1}_npb=60000_nb=8.pkl...",
                f"[{k}] {v:.4f}{more} (0.30, 0.20, 0.30, 0.20) [4{k}s]", "Start Trian"]
    return out


def test_the_one_number_after_the_counter_is_the_loss():
    assert parse_line("[3] 0.6932 (0.30, 0.20, 0.30, 0.20) [53s]") == (3, [("value after the counter", 0.6932)])
    assert parse_line("12 0.2345") == (12, [("value after the counter", 0.2345)])


def test_silent_twin_two_numbers_after_the_counter_are_neither():
    assert parse_line("[3] 0.6932 0.5000") == (3, [])
    assert parse_line("0,0.000,1.000,2.000,3.000") == (0, [])
    # A named value on the line is read by its name, not as the bare one.
    assert parse_line("[3] 0.6932 acc 0.5") == (3, [("acc", 0.5)])


def test_silent_twin_a_number_with_a_unit_or_words_after_it_is_no_loss():
    # A time, a share, a record's file name after the number: the line says what it is, and it is no loss.
    for line in ("Step 0: 61.349 sec", "5000: 3.00%", "6282 13.41 (116, 48) trainning_data/016781.bin.png"):
        assert parse_line(line)[1] == [], line


def test_a_loss_printed_alone_after_its_counter_at_ln2_is_chance(tmp_path):
    run = load_run(write_lines(tmp_path, _neurosat([0.6932] * 5)))
    assert _loss(run) == pytest.approx([0.6932] * 5)
    d = analyze(run)
    assert d.curve.label == "underfitting" and "ln(2)" in d.curve.reason, d.curve


def test_silent_twin_numbers_after_counters_in_no_order_are_no_loss(tmp_path):
    lines = [f"[{k}] {0.69 - 0.01 * i:.4f} (0.30, 0.20) [4{i}s]" for i, k in enumerate([3, 1, 4, 0, 2, 5])]
    with pytest.raises(RunlensError):
        load_run(write_lines(tmp_path, lines))


def test_silent_twin_a_log_that_names_its_loss_reads_it_by_name(tmp_path):
    lines = _neurosat([0.6932] * 5) + [f"epoch {k} loss {1.0 / (k + 1):.4f}" for k in range(5)]
    run = load_run(write_lines(tmp_path, lines))
    assert _loss(run)[-1] == pytest.approx(0.2)


# -- a performance is a score --------------------------------------------------------------------------

def _theano(named_loss: bool = False) -> list[str]:
    rows = [(54.66, 54.95), (65.70, 65.79), (66.45, 63.26), (72.57, 68.21), (74.38, 68.74)]
    return ["... training"] + [
        f"epoch: {k + 1}, training time: 336.80 secs, " + (f"train loss: {1.2 - 0.1 * k:.3f}, " if named_loss else "")
        + f"train perf: {t} %, val perf: {v} %" for k, (t, v) in enumerate(rows)]


def test_a_performance_is_a_score_read_through_its_complement(tmp_path):
    run = load_run(write_lines(tmp_path, _theano()))
    assert _loss(run)[0] == pytest.approx(1 - 0.5466)
    d = analyze(run)
    assert d.curve.label != "diverged", d.curve


def test_silent_twin_a_named_loss_beside_a_performance_is_the_loss(tmp_path):
    run = load_run(write_lines(tmp_path, _theano(named_loss=True)))
    assert _loss(run)[0] == pytest.approx(1.2)
