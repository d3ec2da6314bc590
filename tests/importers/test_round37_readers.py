"""Round 37's readings, from the twenty-third thread set (a development set since its one grading in
round 36):

- A Markdown table of two levels (``| train | | | validate |`` over a first row of names ``| epoch |
  Loss | | epoch | Loss |``): GitHub has one header row, so people write the names as the first row.
  The table was refused (no loss column); the group now prefixes each name under it.
- A validation loss printed as exactly 0 at every evaluation while the training loss is not: an
  evaluation that never ran (a demo's zeroed accumulator), read as a leak. It is left out, and said.
- A name's later word may be an abbreviation (``mem avg. loss``): the name started at ``avg.`` and two
  quantities were read as one loss.
- The ``it: N`` counter may follow an arrow or a bullet (``==>>> it: 401, avg. loss: ...``).
- A loop that evaluates nothing prints one training accuracy named its own way (``ctype_acc``): read
  as the training accuracy when it is the only accuracy-named column and carries no number.

Each has a silent twin.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens import analyze
from runlens.detectors.curve.memorized import accuracies
from runlens.errors import ImportFailedError, RunFormatError
from runlens.io.importers.markdown import tables
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines


def _two_level(train, val):
    out = ["| train |        |      | validate |        |", "| ----- | ------ | ---- | -------- | ------ |",
           "| epoch | Loss   |      | epoch    | Loss   |"]
    return out + [f"| {e} | {t} |  | {e} | {v} |" for e, (t, v) in enumerate(zip(train, val, strict=True))]


TRAIN = [6.07, 4.44, 3.60, 3.12, 2.90, 2.75, 2.63, 2.56, 2.50, 2.46, 2.43, 2.41]
VAL = [12.17, 4.17, 3.37, 3.25, 3.36, 5.14, 8.49, 8.30, 15.9, 83.5, 184.0, 210.9]


def test_a_markdown_table_of_two_header_levels_is_read_by_its_groups(tmp_path):
    t = tables(_two_level(TRAIN, VAL))[0]
    assert t.header == ["train epoch", "train Loss", "train", "validate epoch", "validate Loss"]
    assert len(t.rows) == len(TRAIN)
    run = load_run(write_lines(tmp_path, _two_level(TRAIN, VAL), "table.md"))
    assert run.scalars.column("loss").to_pylist() == pytest.approx(TRAIN)
    assert run.evals.column("val_loss").to_pylist() == pytest.approx(VAL)
    assert analyze(run).curve.label == "overfitting"


def test_silent_twin_a_table_whose_first_row_holds_numbers_keeps_its_header():
    lines = ["| epoch | Loss | Note |", "| --- | --- | --- |", "| 0 | 2.5 | warmup |", "| 1 | 2.1 | ok |"]
    t = tables(lines)[0]
    assert t.header == ["epoch", "Loss", "Note"] and len(t.rows) == 2


def _zero_valid(valid):
    return [f"epoch: {e}, step: 0, train: {8 + 13.3 * 0.8 ** e:.3f},valid: {v}, train_acc: {0.08 + 0.014 * e:.3f},"
            f"valid_acc: 0" for e, v in enumerate(valid, 1)]


def test_a_validation_loss_of_exactly_zero_at_every_evaluation_never_ran(tmp_path):
    run = load_run(write_lines(tmp_path, _zero_valid([0] * 10)))
    assert (run.evals is None or "val_loss" not in run.evals.column_names
            or all(v is None or math.isnan(v) for v in run.evals.column("val_loss").to_pylist()))
    assert any("0 at each of its 10 evaluations" in w and "never ran" in w for w in run.warnings)
    d = analyze(run)
    assert "validation_leak" not in {f.code for f in d.findings} and d.curve.label == "healthy"


def test_silent_twin_a_validation_loss_that_is_zero_only_sometimes_is_kept(tmp_path):
    valid = [0.0, 0.31, 0.0, 0.29, 0.27, 0.0, 0.25, 0.24, 0.22, 0.21]
    run = load_run(write_lines(tmp_path, _zero_valid(valid)))
    assert run.evals.column("val_loss").to_pylist() == pytest.approx(valid)
    assert not any("never ran" in w for w in run.warnings)


def _continual(first_it=401):
    out = []
    for i, (a, m) in enumerate(zip([0.9256, 0.8705, 0.8277, 0.8152, 0.7954, 0.7777, 0.7711],
                                   [1.3889, 1.3924, 1.4146, 1.4209, 1.4113, 1.4228, 1.4301], strict=True)):
        it = first_it + 100 * i
        out += [f"==>>> it: {it}, avg. loss: {a:.6f}, running train acc: {0.674 + 0.01 * i:.3f}",
                f"==>>> it: {it}, mem avg. loss: {m:.6f}, running mem acc: {0.565 + 0.001 * i:.3f}"]
    return out


def test_an_abbreviation_inside_a_name_and_an_arrowed_counter(tmp_path):
    run = load_run(write_lines(tmp_path, _continual()))
    assert run.scalars.column("step").to_pylist() == [401 + 100 * i for i in range(7)]
    assert run.scalars.column("loss").to_pylist() == pytest.approx(
        [0.9256, 0.8705, 0.8277, 0.8152, 0.7954, 0.7777, 0.7711])
    assert run.config["import_roles"]["loss"]["columns"] == ["avg. loss"]


def test_silent_twin_it_inside_a_sentence_is_no_counter(tmp_path):
    from runlens.io.importers._textline import _KEYED

    it = dict(_KEYED)["it"]
    assert it.search("==>>> it: 401, avg. loss: 0.9") and it.search("It: 10, Loss: 2.9e+02")
    assert not it.search("we ran it: 401 times") and not it.search("loss 0.3 it: 5")


def _bert(acc_name, accs, losses=None):
    losses = losses or [0.7172, 0.6982, 0.8780, 0.9688, 0.8317, 0.6845, 0.6762, 0.6993, 0.7034, 0.6994, 0.6838,
                        0.7040, 0.6950, 0.6886, 0.6899, 0.6890]
    return [f"step\tloss\t{acc_name}\tlr"] + [f"{i}\t{v}\t{a}\t0.0001" for i, (v, a) in
                                               enumerate(zip(losses, accs, strict=True))]


ACCS = [0.44, 0.5, 0.55, 0.44, 0.54, 0.62, 0.59, 0.49, 0.44, 0.49, 0.58, 0.44, 0.47, 0.57, 0.56, 0.51]


def test_a_lone_training_accuracy_named_its_own_way_is_read(tmp_path):
    run = load_run(write_lines(tmp_path, _bert("ctype_acc", ACCS), "train.tsv"))
    train, val = accuracies(run)
    assert val is None and train is not None and np.allclose(train[1], ACCS)
    assert analyze(run).curve.label == "underfitting"  # loss at ln 2 while the accuracy sits at 1/2


def test_silent_twin_a_top_k_accuracy_is_no_chance_reading(tmp_path):
    run = load_run(write_lines(tmp_path, _bert("top5_acc", ACCS), "train.tsv"))
    assert accuracies(run) == (None, None)


def test_silent_twin_two_accuracy_columns_leave_the_choice(tmp_path):
    lines = ["step\tloss\tctype_acc\tread_acc"] + [f"{i}\t{0.69 + 0.001 * (i % 3)}\t0.5\t0.6" for i in range(12)]
    try:
        run = load_run(write_lines(tmp_path, lines, "train.tsv"))
    except ImportFailedError:
        return
    assert accuracies(run) == (None, None)


def _per_epoch_counter(first_of_pass=0):
    rows, rng = [], np.random.default_rng(1)
    for e in range(5):
        for i in (0, 1, 3, 5, 7, 9):
            k = len(rows)
            rows.append(f"{i if (i or not e) else first_of_pass}\t{7.4 * 0.8 ** k - 3.5 + 0.05 * rng.standard_normal():.6f}"
                        f"\t{-0.67 + 0.25 * k:.6f}")
    return rows


def test_an_unnamed_counter_that_starts_again_each_pass_leaves_the_rows_as_steps(tmp_path):
    run = load_run(write_lines(tmp_path, _per_epoch_counter(), "losslog.txt"))
    assert run.config["import_roles"]["loss"]["columns"] == ["column_2"]
    assert run.scalars.column("step").to_pylist() == list(range(30))


def test_silent_twin_a_first_column_that_falls_elsewhere_is_no_counter(tmp_path):
    with pytest.raises(RunFormatError, match="no loss"):
        load_run(write_lines(tmp_path, _per_epoch_counter(first_of_pass=2), "losslog.txt"))


def _ruled(rows):
    rule = "+" + "+".join(["-" * 12] * 3) + "+"
    out = [rule, "| Iteration  | Training Loss | Elapsed Time |", rule]
    for i, v in enumerate(rows, 1):
        out += [f"| {i:<10} | {v:<13} | {9945.8 + 4492 * i:<12} |", rule]
    return out


def test_a_bordered_table_with_a_rule_under_every_row_is_one_table(tmp_path):
    losses = [2.984, 2.977, 2.981, 2.976, 2.979]
    t = tables(_ruled(losses))
    assert len(t) == 1 and len(t[0].rows) == len(losses)
    run = load_run(write_lines(tmp_path, _ruled(losses), "turi.txt"))
    assert run.scalars.column("loss").to_pylist() == pytest.approx(losses)


def test_silent_twin_a_rule_before_prose_still_ends_the_table():
    lines = [*_ruled([2.98, 2.97, 2.96]), "| note | this is prose |"]
    assert len(tables(lines)[0].rows) == 3
