"""Round 41's reading, from the twenty-seventh thread set's misses (a development set since its one
grading in round 40):

- a Markdown or console table whose paster cut rows with a ``....`` line goes on after it;
- a Trainer dict that an issue's text hard-wrapped at a fixed width (cutting numbers) is joined again;
- a headerless two-column log whose first column never changes (MLflow's old ``0 29.31`` metric
  lines) is read by its rows;
- an accuracy frozen beside a signed loss (below 0) that moved is the frozen-accuracy reading.

Each has a silent twin.
"""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.errors import ImportFailedError, RunlensError
from runlens.io.importers import hf
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines


def _turi(rows):
    head = ["+--------------+--------------+--------------+", "| Iteration    | Loss         | Elapsed Time |",
            "+--------------+--------------+--------------+"]
    return head + [r if isinstance(r, str) else f"| {r[0]:<12} | {r[1]:<12.3f} | {r[2]:<12.1f} |" for r in rows]


ROWS = [(1 + 6 * i, 9.0 * math.exp(-i / 4) + 1.4, 12.0 + i) for i in range(6)]
LATER = [(47000 + 7 * i, 1.43 + 0.02 * (i % 2), 82000.0 + i) for i in range(4)]


def test_rows_after_an_elision_line_are_read(tmp_path):
    run = load_run(write_lines(tmp_path, _turi(ROWS + ["...."] + LATER)))
    steps = list(run.scalars.column("step").to_pylist())
    assert steps[-1] == LATER[-1][0] and len(steps) == len(ROWS) + len(LATER)


def test_silent_twin_an_elision_line_before_prose_ends_the_table(tmp_path):
    run = load_run(write_lines(tmp_path, _turi(ROWS + ["....", "The rest of the run was the same."])))
    assert list(run.scalars.column("step").to_pylist())[-1] == ROWS[-1][0]


def _wrapped(width: int) -> list[str]:
    lines = []
    for i, (loss, chosen) in enumerate([(0.4173, 1.194046974182129), (0.4038, 1.2586393356323242),
                                        (0.4329, 1.1291874647140503), (0.347, 1.2405)]):
        text = (f"{{'loss': {loss}, 'grad_norm': 1.4672807732482507, 'learning_rate': 4.76e-06, "
                f"'rewards/chosen': {chosen}, 'kl': 0.1, 'epoch': {0.01 * (i + 1):.2f}}}")
        lines += [text[j:j + width] for j in range(0, len(text), width)]
    return lines


def test_a_dict_hard_wrapped_at_a_fixed_width_is_joined_as_it_was_cut(tmp_path):
    imp = hf.read(write_lines(tmp_path, _wrapped(50)))
    assert list(imp.train["loss"].values) == [0.4173, 0.4038, 0.4329, 0.347]
    assert imp.train["rewards_chosen"].values[0] == pytest.approx(1.194046974182129)


def test_silent_twin_a_dict_pretty_printed_over_lines_is_joined_with_spaces(tmp_path):
    lines = ["{'loss': 0.5,", "  'learning_rate': 1e-05,", "  'epoch': 0.1}", "{'loss': 0.4, 'epoch': 0.2}"]
    imp = hf.read(write_lines(tmp_path, lines))
    assert list(imp.train["loss"].values) == [0.5, 0.4]
    assert imp.train["lr"].values[0] == 1e-05


def test_silent_twin_a_dict_never_closed_is_no_line(tmp_path):
    with pytest.raises(ImportFailedError):
        hf.read(write_lines(tmp_path, ["{'loss': 0.5, 'learning_rate':", "and then the job was killed"]))


def test_a_first_column_that_never_changes_counts_nothing(tmp_path):
    run = load_run(write_lines(tmp_path, [f"0 {29.3 * math.exp(-i / 5) + 2.3!r}" for i in range(16)]))
    loss = run.scalars.column("loss").to_pylist()
    assert len(loss) == 16 and loss[0] == pytest.approx(31.6)
    assert analyze(run).curve.label == "healthy"


def test_silent_twin_a_first_column_of_unordered_numbers_is_no_counter(tmp_path):
    with pytest.raises(RunlensError):
        load_run(write_lines(tmp_path, [f"{(i * 7) % 5} {29.3 * math.exp(-i / 5) + 2.3!r}" for i in range(16)]))


def _keras(loss, acc, val_acc):
    out = ["Train on 1221 samples, validate on 216 samples"]
    for i, (v, a, va) in enumerate(zip(loss, acc, val_acc, strict=True)):
        out += [f"Epoch {i + 1}/1000", f" - 0s - loss: {v:.4e} - acc: {a:.4f} - val_loss: {v - 5:.4e} - val_acc: {va:.4f}"]
    return out


SIGNED = [-3.9086, -52.466, -54.312, -54.261, -54.320, -54.308, -54.321, -54.551]


def test_an_accuracy_frozen_beside_a_signed_loss_that_moved_is_underfitting(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _keras(SIGNED, [0.1147] + [0.1122] * 7, [0.0787] * 8))))
    assert d.curve.label == "underfitting", d.curve
    assert "frozen_accuracy" in d.curve.evidence["kind"]


def test_silent_twin_accuracies_that_move_beside_the_signed_loss(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _keras(SIGNED, [0.11 + 0.1 * i for i in range(8)],
                                                      [0.08 + 0.1 * i for i in range(8)]))))
    assert "frozen_accuracy" not in str(d.curve.evidence.get("kind"))
