"""Round 31's readers, from the seventeenth thread set's misses (a development set since its one grading in
round 30): each shape on a synthetic log of its own, with a silent twin.

- a progress bar's description that prints the loss after a space (minGPT's ``epoch 8 iter 0: train loss
  0.07305. lr 6e-4: 100%|...``): a loss with a fraction, or a NaN, is a metric however it is joined;
- a batch counter of its total with no epoch before it (GluonNLP's ``Batch: 4512/7387``) is a step;
- a record printed over two lines (a label and its value under it; a row of names over a row of values);
- two lines that print a training loss as a field, and nothing else, are a log (two epochs' averages).
"""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.importers._splitrecords import join_split
from runlens.io.loader import load_run


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _losses(run, table="scalars", name="loss"):
    return [round(v, 12) if math.isfinite(v) else v for v in run.column(table, name).tolist()]


# -- a loss in a progress bar's description ------------------------------------------------------------

_BAR = "| 1/1 [00:04<00:00,  4.31s/it]"


def test_a_loss_after_a_space_in_a_bar_description_is_read(tmp_path):
    lines = [f"epoch {e} iter 0: train loss {v:.5f}. lr 6.0e-04: 100%|#####{_BAR}"
             for e, v in enumerate((0.0731, 0.0725, 0.0719), start=1)]
    run = load_run(_write(tmp_path, lines))
    assert _losses(run) == [0.0731, 0.0725, 0.0719]


def test_a_nan_loss_in_a_bar_description_is_a_divergence(tmp_path):
    lines = [f"epoch {e} iter 0: train loss nan. lr 6.0e-04: 100%|#####{_BAR}" for e in (1, 2)]
    assert analyze(str(_write(tmp_path, lines))).curve.label == "diverged"


def test_silent_twin_a_title_number_in_a_bar_description_is_no_metric(tmp_path):
    # "Epoch 3" and "DataLoader 0" number the bar's title: whole numbers after bare words, no loss.
    lines = [f"Validation DataLoader 0: 100%|#####{_BAR}", f"Epoch 3: 100%|#####{_BAR}"] * 3
    with pytest.raises(RunlensError):
        load_run(_write(tmp_path, lines))


# -- a batch counter of its total ------------------------------------------------------------------

def test_a_batch_counter_of_its_total_is_the_step(tmp_path):
    lines = [f"INFO:gluonnlp:11:22:28 Batch: {b}/7387, Loss={v}, lr=0.0000065"
             for b, v in ((4512, 4.1048), (4562, 4.0797), (4612, 4.0614))]
    run = load_run(_write(tmp_path, lines))
    assert run.steps("scalars").tolist() == [4512, 4562, 4612]


def test_silent_twin_a_batch_size_is_no_step(tmp_path):
    # "batch 32" with no total and no epoch before it is as likely the batch's size: every line the same.
    lines = [f"batch 32 loss={v}" for v in (2.1, 1.9, 1.8, 1.7)]
    run = load_run(_write(tmp_path, lines))
    assert run.steps("scalars").tolist() != [32, 32, 32, 32]


# -- records printed over two lines ---------------------------------------------------------------------

def test_a_label_over_its_value_and_names_over_values_are_joined():
    lines = ["EPOCH:  18", "current training loss is :", "1.76e-06", "DEV: loss, acc, f1", "0.0105 0.9992 0.7782",
             "-----"]
    assert join_split(lines) == ["EPOCH:  18", "current training loss: 1.76e-06",
                                 "DEV loss: 0.0105, DEV acc: 0.9992, DEV f1: 0.7782", "-----"]


@pytest.mark.parametrize("lines", [
    ["Wall time,Step,Value", "1619761818.9,0,1.35", "1619761828.4,100,1.10"],  # a CSV: header and rows
    ["loss, acc", "0.5 0.9 0.1", "done"],  # three values under two names
    ["loss:", "0.5", "0.4", "0.3"],  # a column of values under one label
    ["the run went fine", "0.5"],  # no colon: a sentence, not a label
    ["epoch 1, step 2", "0.5 0.3"],  # numbered words are no names
])
def test_silent_twin_a_table_or_a_sentence_is_not_joined(lines):
    assert join_split(lines) == lines


def test_a_log_of_two_line_records_is_read(tmp_path):
    lines = []
    for e, (loss, dev) in enumerate(((2.04e-06, 0.0104), (1.76e-06, 0.0105), (1.99e-06, 0.0105)), start=17):
        lines += [f"EPOCH:  {e}", "current training loss is :", f"{loss}", "." * 20, "DEV: loss, acc, f1",
                  f"{dev} 0.9992 0.77"]
    run = load_run(_write(tmp_path, lines))
    assert _losses(run) == pytest.approx([2.04e-06, 1.76e-06, 1.99e-06], rel=1e-9)
    assert _losses(run, "evals", "val_loss") == [0.0104, 0.0105, 0.0105]


# -- two lines of a loss printed as a field -------------------------------------------------------------

def test_two_lines_of_a_loss_field_are_a_log(tmp_path):
    lines = ["INFO ************ Epoch=1 start ************", "INFO Train loss: 0.459406", "INFO [Metrics] AUC: 0.805",
             "INFO ************ Epoch=2 start ************", "INFO Train loss: 0.453592", "INFO [Metrics] AUC: 0.808"]
    d = analyze(str(_write(tmp_path, lines)))
    assert d.curve.label == "insufficient_data"
    assert d.key_numbers["steps"] == 2


def test_silent_twin_two_lines_of_prose_that_name_a_loss_are_no_log(tmp_path):
    with pytest.raises(RunlensError):
        load_run(_write(tmp_path, ["loss was 2.3 on monday", "and the loss 1.9 on tuesday"]))


# -- a call shown as its value's name (Julia's @show, Python's f"{f(x)=}") --------------------------------

@pytest.mark.parametrize("line, fields", [
    ("loss(x, y) = param(0.0913291)", [("loss", 0.0913291)]),  # Flux: a tracked scalar
    ("loss(dataset[1]...) = 0.2001447729236289 (tracked)", [("loss", 0.2001447729236289)]),
    ("(i, loss(dataset[1]...)) = (1, 0.29602579662457984 (tracked))", [("i", 1.0), ("loss", 0.29602579662457984)]),
    ("accuracy(m, x, label, 0.0:9) = 0.10525", [("accuracy", 0.10525)]),
    ("loss_fn(out, y)=0.53", [("loss_fn", 0.53)]),
])
def test_a_call_shown_beside_its_value_is_named_by_its_function(line, fields):
    from runlens.io.importers._clean import clean
    from runlens.io.importers._textline import read_fields

    assert read_fields(clean(line)) == fields


@pytest.mark.parametrize("line", [
    "Namespace(lr=0.1, bs=3)",  # settings of a printed object, not a call's arguments
    "(a, b) = (1, x)",  # a value that is no number
    "(a, b, c) = (1, 2)",  # names and values that do not pair up
    "if (a) == b: pass",  # a comparison, not an assignment
])
def test_silent_twin_no_call_or_tuple_shown(line):
    from runlens.io.importers._clean import clean

    assert clean(line) == line


def test_a_julia_show_log_is_read(tmp_path):
    lines = ["INFO: Training"] + [f"loss(x, y) = param({v})" for v in (0.0913, 0.0768, 0.0303, 0.0237)]
    run = load_run(_write(tmp_path, lines))
    assert _losses(run) == [0.0913, 0.0768, 0.0303, 0.0237]


# -- an aligned table whose names hold spaces ------------------------------------------------------------

def test_an_aligned_table_with_names_of_two_words_is_read_by_them(tmp_path):
    rows = [(1, 0.5432, 0.6012, 0.81), (2, 0.4432, 0.5012, 0.83), (3, 0.3432, 0.4512, 0.85), (4, 0.3032, 0.4612, 0.85)]
    lines = ["Epoch    Train Loss    Valid Loss    Accuracy"] + [f"{e:<9d}{a:<14.4f}{b:<14.4f}{c:.2f}" for e, a, b, c in rows]
    run = load_run(_write(tmp_path, lines, "metrics.txt"))
    assert _losses(run) == [0.5432, 0.4432, 0.3432, 0.3032]
    assert _losses(run, "evals", "val_loss") == [0.6012, 0.5012, 0.4512, 0.4612]


def test_silent_twin_names_spaced_by_one_space_are_still_one_column_each(tmp_path):
    lines = ["epoch train_loss valid_loss accuracy"] + [f"{e} {a} {b} 0.8" for e, a, b in
                                                         ((1, 0.54, 0.60), (2, 0.44, 0.50), (3, 0.34, 0.45))]
    run = load_run(_write(tmp_path, lines, "metrics.txt"))
    assert _losses(run) == [0.54, 0.44, 0.34]


def test_finished_bars_printed_again_count_on(tmp_path):
    lines = [f"accuracy: {0.4 + 0.05 * e:.4f}, loss: {v:.4f} ||: 100%|##########| 10/10 [00:01<00:00, 8.12it/s]"
             for e, v in enumerate((1.0986, 0.93, 0.80, 0.71))]
    run = load_run(_write(tmp_path, lines))
    assert run.steps("scalars").tolist() == [10, 20, 30, 40]


def test_silent_twin_one_bar_in_progress_keeps_its_counts(tmp_path):
    lines = [f"loss: {v:.4f} ||:  {i * 10}%|###       | {i}/10 [00:01<00:01, 8.12it/s]"
             for i, v in ((3, 1.09), (6, 0.93), (9, 0.80))]
    run = load_run(_write(tmp_path, lines))
    assert run.steps("scalars").tolist() == [3, 6, 9]
