"""Round 23: readings found missing on pastes of the ninth thread set (a development set since its one
grading). Each shape is made up here in the spelling of a kind of loop, not copied from a paste, and
each has a silent twin.

- loss parts printed on lines of their own (a GAN's discriminator and generator steps alternate)
  share no row: their sum would be empty, so the part on the most lines is the loss;
- the lone loss before its parts when both are on as many lines (``loss:``, ``pde_losses: [...]``);
- a loss named at a grain (``Train Loss: epoch NaN - batch NaN``);
- ``It: 10, Loss: ...`` (the physics-informed networks' print) counts steps;
- an ``[Epoch N]`` line after an evaluation line is the next epoch, not a summary of the last step;
- a block of held-out results under ``Test Metrics:`` names its loss without a side.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens.errors import RunlensError
from runlens.io.loader import load_run


def _run(tmp_path, text):
    path = tmp_path / "log.txt"
    path.write_text(text)
    return load_run(path)


def _col(run, table, name):
    return np.asarray(run.column(table, name), dtype=float).tolist()


def _gan(d_losses, g_together=False):
    lines = []
    for i, d in enumerate(d_losses):
        lines.append(f"[INFO] 0 epoch, {150 + i} batch, Discriminator Loss: {d}")
        if g_together:
            lines[-1] += f", Generator Loss: {d / 2}"
        elif i % 3 == 2:
            lines.append(f"[INFO] 0 epoch, {150 + i} batch, Generator Loss: {d / 2}")
    return "\n".join(lines) + "\n"


def test_loss_parts_on_lines_of_their_own_read_the_part_on_the_most_lines(tmp_path):
    run = _run(tmp_path, _gan([11.18, 9.4, 8.7, math.nan, math.nan, math.nan]))
    loss = _col(run, "scalars", "loss")
    assert loss[:3] == pytest.approx([11.18, 9.4, 8.7]) and all(math.isnan(v) for v in loss[3:])
    assert any("on lines of their own" in w for w in run.warnings)


def test_silent_twin_parts_on_the_same_lines_are_summed(tmp_path):
    run = _run(tmp_path, _gan([11.0, 9.0, 8.0, 7.0], g_together=True))
    assert _col(run, "scalars", "loss") == pytest.approx([16.5, 13.5, 12.0, 10.5])


def _callback(losses):
    out = []
    for v in losses:
        out += [f"loss: {v}", f"pde_losses: [{v / 4}, {v / 5}]", f"bcs_losses: [{v / 8}, {v / 9}]", ""]
    return "\n".join(out)


def test_the_lone_loss_outranks_its_parts_on_as_many_lines(tmp_path):
    run = _run(tmp_path, _callback([20.37, math.nan, math.nan]))
    loss = _col(run, "scalars", "loss")
    assert loss[0] == pytest.approx(20.37) and math.isnan(loss[1]) and math.isnan(loss[2])


def test_silent_twin_without_the_lone_loss_its_first_part_is_read_and_named(tmp_path):
    text = "\n".join(f"pde_losses: [{v}]\nbcs_losses: [{v / 2}]" for v in (3.0, 2.0, 1.0)) + "\n"
    run = _run(tmp_path, text)
    assert _col(run, "scalars", "loss") == pytest.approx([3.0, 2.0, 1.0])
    assert any("the first of those" in w and "--loss names another" in w for w in run.warnings)


def test_a_loss_named_at_its_grain_is_read(tmp_path):
    text = ("[Metrics]\n  - Train Loss: epoch NaN - batch NaN\n  - Valid Loss: epoch NaN - batch NaN\n"
            "[Progress]\n  - Iteration 1422 Epoch 2/6\n")
    run = _run(tmp_path, text)
    assert all(math.isnan(v) for v in _col(run, "scalars", "loss"))


def test_silent_twin_a_grain_word_without_a_loss_before_it_names_nothing(tmp_path):
    with pytest.raises(RunlensError):
        _run(tmp_path, "  - Train Accuracy: epoch 0.5 - batch 0.4\n  - Train Accuracy: epoch 0.6 - batch 0.5\n"
                       "  - Train Accuracy: epoch 0.7 - batch 0.6\n")


def test_it_opening_a_line_counts_steps(tmp_path):
    text = "".join(f"It: {10 * i}, Loss: {400 / (i + 1):.3e}, Time: 0.11\n" for i in range(8))
    run = _run(tmp_path, text)
    assert _col(run, "scalars", "step") == [10.0 * i for i in range(8)]
    assert _col(run, "scalars", "loss")[0] == pytest.approx(400.0)


def test_silent_twin_it_in_prose_is_no_step(tmp_path):
    text = "".join(f"It is {10 * i}, loss: {400 / (i + 1):.3e}\n" for i in range(8))
    run = _run(tmp_path, text)
    assert _col(run, "scalars", "step") == [float(i) for i in range(8)]  # the lines, numbered
    assert _col(run, "scalars", "loss")[0] == pytest.approx(400.0)


def _epochs(with_test):
    lines = []
    for e in range(1, 7):
        lines += ["---", f"[Epoch {e}] Train Loss={0.95 - 0.001 * e} T=210.5s"]
        if with_test:
            lines += [f"Test loss={0.90 + 0.01 * e}", "Accuracy=0.65"]
    return "\n".join(lines) + "\n"


def test_an_epoch_line_after_an_evaluation_is_the_next_epoch(tmp_path):
    run = _run(tmp_path, _epochs(with_test=True))
    assert len(_col(run, "scalars", "loss")) == 6
    assert _col(run, "evals", "val_loss") == pytest.approx([0.90 + 0.01 * e for e in range(1, 7)])


def test_silent_twin_epoch_lines_alone_are_the_epochs(tmp_path):
    run = _run(tmp_path, _epochs(with_test=False))
    assert _col(run, "scalars", "loss") == pytest.approx([0.95 - 0.001 * e for e in range(1, 7)])


def _block(header):
    out = []
    for e, (tr, te) in enumerate([(5.10, 4.85), (3.2, 5.1), (0.82, 6.21)], start=1):
        out += [f"Epoch [{e}/3] - Train Loss: {tr}", f"Epoch [{e}/3] - {header}", f"loss: {te}",
                "hit_rate@10: 0.0650", "", ""]
    return "\n".join(out)


def test_a_block_under_a_held_out_header_is_the_validation(tmp_path):
    run = _run(tmp_path, _block("Test Metrics:"))
    assert _col(run, "evals", "val_loss") == pytest.approx([4.85, 5.1, 6.21])
    assert _col(run, "scalars", "loss") == pytest.approx([5.10, 3.2, 0.82])


def test_silent_twin_a_block_under_another_header_is_no_validation(tmp_path):
    run = _run(tmp_path, _block("Timing:"))
    assert "val_loss" not in run.evals.column_names if run.evals is not None else True
