"""Round 22: the last reading of a loop's own print (:mod:`runlens.io.importers.anyline`), when no
shape the text reader knows finds a training signal, and the key/value blocks that hold their own
counter in every key. Each shape is made up here, not copied from a paste: a loss or error named
beside its number in a spelling no step pattern knows, read by one rule. Each has a silent twin.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.importers.anyline import parse_line
from runlens.io.loader import load_run

FALLING = [1.21, 0.64, 0.41, 0.30, 0.24, 0.21, 0.19, 0.18, 0.175, 0.171]


def _run(tmp_path, text, name="log.txt"):
    path = tmp_path / name
    path.write_text(text)
    return load_run(path)


def _col(run, table, name):
    return np.asarray(run.column(table, name), dtype=float).tolist()


def _refused(tmp_path, text) -> bool:
    try:
        _run(tmp_path, text)
    except RunlensError:
        return True
    return False


def test_a_value_is_named_by_the_words_touching_it_and_a_counter_by_its_place():
    assert parse_line("I:40 Train-Err:0.215 Train-Acc:0.956") == (40, [("Train-Err", 0.215), ("Train-Acc", 0.956)])
    assert parse_line("Epoch 3 [60.2s]: train==[65.2=64.5 + 0.7]") == (3, [("train", 65.2)])
    counter, fields = parse_line("170 / 178 : loss = nan;1076660156255;")
    assert counter == 170 and [n for n, _ in fields] == ["loss"] and math.isnan(fields[0][1])
    # Digits inside a word or before a unit are no values: d1 is a name, 60.2s a time.
    assert parse_line(">1, d1=0.859, g=0.872") == (1, [("d1", 0.859), ("g", 0.872)])


def test_a_loss_named_in_a_phrase_no_step_pattern_knows_is_read(tmp_path):
    run = _run(tmp_path, "".join(f"Loss error: {v}\n" for v in FALLING))
    assert _col(run, "scalars", "loss") == FALLING
    assert any("read by the names beside the numbers" in w and "'Loss error'" in w
               for w in run.meta["config"]["import_warnings"])
    assert analyze(run).curve.label == "healthy"


def test_a_train_and_test_error_after_a_short_counter_read_as_loss_and_validation(tmp_path):
    test_err = [0.60, 0.42, 0.414, 0.417, 0.426, 0.437, 0.448, 0.458, 0.466, 0.474, 0.482, 0.489]
    train_err = [0.72, 0.31, 0.26, 0.23, 0.21, 0.20, 0.19, 0.186, 0.179, 0.172, 0.166, 0.161]
    text = "".join(f"I:{10 * i} Train-Err:{a} Train-Acc:0.9 Test-Err:{b} Test-Acc:0.8\n"
                   for i, (a, b) in enumerate(zip(train_err, test_err, strict=True)))
    run = _run(tmp_path, text)
    assert _col(run, "scalars", "loss") == train_err and _col(run, "scalars", "step") == list(range(0, 120, 10))
    assert _col(run, "evals", "val_loss") == test_err
    assert analyze(run).curve.label == "overfitting"


def test_a_side_named_alone_is_that_sides_loss_when_no_line_names_a_loss(tmp_path):
    text = "n_users=29858, n_items=40981\n" + "".join(
        f"Epoch {i} [60.{i}s]: train==[{v}={v - 0.1} + 0.1]\n" for i, v in enumerate(FALLING))
    run = _run(tmp_path, text)
    assert _col(run, "scalars", "loss") == FALLING


def test_a_single_nan_loss_in_an_unknown_shape_is_a_finding(tmp_path):
    text = ("Epoch 279 Domain A: HR: 0.348, NDCG: 0.193\n===== Epoch 280 =====\n"
            "170 / 178 : loss = nan;1076660156255;\nEpoch 280 Domain A: HR: 1.0, NDCG: 0.333\n")
    result = analyze(_run(tmp_path, text))
    assert {"nonfinite_loss"} <= {f.code for f in result.findings}


def test_the_total_after_a_loss_colon_is_the_loss(tmp_path):
    text = "".join(f"{16 * i}: nGT 39, recall 0, loss: x {v / 2:.4f}, y {v / 2:.4f}, total {v}\n"
                   for i, v in enumerate(FALLING))
    assert _col(_run(tmp_path, text), "scalars", "loss") == FALLING


def test_accuracies_alone_are_read_through_their_complement(tmp_path):
    # Round 28: an accuracy is no loss, but 1 - accuracy is the error rate the run is judged by; the
    # roles say so (round 21 refused these lines, tests/importers/test_round28_readers.py has the rest).
    text = "".join(f"epoch {i}, train acc: {0.1 + i / 20}, test acc: {0.09 + i / 21}\n" for i in range(8))
    roles = _run(tmp_path, text).config["import_roles"]
    assert roles["loss"]["how"] == roles["val_loss"]["how"] == "complement"
    assert _col(_run(tmp_path, text), "scalars", "loss") == pytest.approx([0.9 - i / 20 for i in range(8)])


def test_silent_twin_two_accuracies_on_one_side_leave_the_choice_to_the_user(tmp_path):
    text = "".join(f"epoch {i}, train acc: {0.1 + i / 20}, train top1: {0.09 + i / 21}\n" for i in range(8))
    assert _refused(tmp_path, text)


def test_silent_twin_names_that_say_no_loss_are_not_guessed(tmp_path):
    # A GAN's d1, d2 and g: no word says which is a loss.
    text = "".join(f">{i}, d1={0.8 - i / 50:.3f}, d2={0.6 + i / 60:.3f} g={0.9 + i / 40:.3f}, a1=37\n"
                   for i in range(1, 12))
    assert _refused(tmp_path, text)


def test_silent_twin_two_errors_on_every_line_leave_the_choice_to_the_user(tmp_path):
    text = "".join(f"iteration: {i}; mse: {v}; rmse: {math.sqrt(v):.4f}\n" for i, v in enumerate(FALLING))
    assert _refused(tmp_path, text)


def test_silent_twin_one_progress_line_and_a_model_summary_are_no_run(tmp_path):
    text = ("Input Shape: (1, 8, 8)\n| Conv2D | 160 | (16, 8, 8) |\nTotal Parameters: 538570\n\n"
            "Training: 100% [----------] Time: 0:01:55\nAccuracy: 0.987465181058\n")
    assert _refused(tmp_path, text)


def test_silent_twin_a_log_the_text_reader_knows_is_not_read_again(tmp_path):
    run = _run(tmp_path, "".join(f"step {i} loss {v}\n" for i, v in enumerate(FALLING)))
    assert not any("read by the names beside the numbers" in w for w in run.meta["config"]["import_warnings"])


def test_keys_that_hold_their_own_counter_are_log_lines_not_key_value_blocks(tmp_path):
    # Two runs of a knowledge-graph embedding, each printing three averages at a step: read as key/value
    # blocks, "loss at step 0" was one column meeting itself only where both runs start.
    def block(step, a, b):
        return (f"Training average positive_sample_loss at step {step}: {a}\n"
                f"Training average negative_sample_loss at step {step}: {b}\n"
                f"Training average loss at step {step}: {(a + b) / 2}\n\n")
    text = "Rotate:\n" + block(0, 3.18, 0.05) + block(99900, 0.051, 0.046) + block(100000, 0.052, 0.047)
    text += "DistMult:\n" + block(0, 0.693, 0.693) + block(99800, 0.026, 0.046)
    run = _run(tmp_path, text)
    assert _col(run, "scalars", "step") == [0, 99800]


@pytest.mark.parametrize("shape", ["| {k} | {v} |", "{k}: {v}"])
def test_silent_twin_key_value_blocks_with_the_same_keys_stay_a_table(tmp_path, shape):
    text = "".join("\n".join(shape.format(k=k, v=v) for k, v in (("epoch", i), ("loss", FALLING[i]),
                                                                  ("val_loss", FALLING[i] + 0.1))) + "\n\n"
                   for i in range(6))
    assert _col(_run(tmp_path, text), "scalars", "loss") == FALLING[:6]


def test_a_line_tagged_as_a_validation_reports_validation_losses(tmp_path):
    text = "".join(f"[2019-06-05 20:11:56] [valid] Ep. 1 : Up. {5000 * (i + 1)} : ce-mean-words : {v} : new best\n"
                   for i, v in enumerate(FALLING[:5]))
    run = _run(tmp_path, text)
    assert _col(run, "evals", "val_loss") == FALLING[:5]
    assert all(math.isnan(v) for v in _col(run, "scalars", "loss"))


def test_silent_twin_a_loggers_file_and_line_are_no_metric(tmp_path):
    text = "".join(f"[2024-09-11 17:52:{10 + i},320] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
                   f"Rank 0 Skipping step. Attempted loss scale: {2 ** (32 - i)}, reducing to {2 ** (31 - i)}\n"
                   for i in range(6))
    assert _refused(tmp_path, text)


def test_an_evaluation_line_without_a_counter_takes_the_last_loss_lines(tmp_path):
    lines = []
    for i, v in enumerate(FALLING[:6]):
        lines.append(f"I:{10 * i} Train-Err:{v}")
        if i % 2:
            lines.append(f"Test-Err:{v + 0.1:.3f}")
    run = _run(tmp_path, "\n".join(lines) + "\n")
    assert _col(run, "evals", "step") == [10, 30, 50]
    assert _col(run, "evals", "val_loss") == pytest.approx([FALLING[i] + 0.1 for i in (1, 3, 5)])


def test_a_line_holding_only_a_counter_counts_the_lines_below_it(tmp_path):
    text = "".join(f"INFO - epoch={e}\nINFO - train_loss={t}, val_loss={v}, test_loss={v + 0.01}\n"
                   for e, t, v in ((1, 0.0481, 0.0378), (29, 0.0010, 0.0916)))
    run = _run(tmp_path, text)
    # Two epochs of both losses are read (a short log's readings take that few); the validation set, not
    # the test set, is the validation loss.
    assert _col(run, "scalars", "step") == [1, 29] and _col(run, "scalars", "loss") == [0.0481, 0.0010]
    assert _col(run, "evals", "val_loss") == [0.0378, 0.0916]


def test_two_training_losses_are_read_and_too_few_for_a_shape(tmp_path):
    # Two epochs' losses are a log too short for a shape, not nothing: read, and the curve says so.
    run = _run(tmp_path, "epoch=1\ntrain_loss=0.0481\nepoch=29\ntrain_loss=0.0010\n")
    assert _col(run, "scalars", "loss") == [0.0481, 0.0010]
    assert analyze(run).curve.label == "insufficient_data"


def test_silent_twin_one_training_loss_alone_is_no_series(tmp_path):
    assert _refused(tmp_path, "epoch=29\ntrain_loss=0.0010\n")
