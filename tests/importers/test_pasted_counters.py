"""Console lines of trainers that count rounds or steps some other way than ``step N`` first: gradient
boosting's bare round counters (``[10]\\t...``, ``10:\\t...``) and its ``<set>-<metric>`` names, a step
written after the loss (``loss = 2.31, step = 100``), an evaluation's results dict, a stated NaN loss,
ESPnet's glued ``3epoch`` and its ``[train]`` / ``[valid]`` sections. Each rule has a silent twin: a
near-identical line that keeps its old reading."""

from __future__ import annotations

import pytest

from runlens.errors import ImportFailedError
from runlens.io.importers import text
from runlens.io.reader.names import role_of


def _read(tmp_path, body: str, name: str = "train.log"):
    path = tmp_path / name
    path.write_text(body)
    return text.read(path)


def _series(imp, table: str, column: str) -> tuple[list[int], list[float]]:
    s = getattr(imp, table)[column]
    return [int(x) for x in s.steps], [float(x) for x in s.values]


def _rounds(fmt: str, n: int = 5) -> str:
    return "".join(fmt.format(i=i, t=0.66 - 0.04 * i, v=0.67 - 0.03 * i) + "\n" for i in range(n))


def test_a_bare_round_counter_with_set_metric_names_is_a_boosting_log(tmp_path):
    imp = _read(tmp_path, _rounds("[{i}]\ttrain-logloss:{t:.2f}\tvalidation-logloss:{v:.2f}"))
    assert _series(imp, "train", "loss") == ([0, 1, 2, 3, 4], [0.66, 0.62, 0.58, 0.54, 0.50])
    assert _series(imp, "evals", "val_loss")[0] == [0, 1, 2, 3, 4]


def test_a_bare_counter_before_bare_numbers_is_still_no_training_log(tmp_path):
    # R prints a vector as "[1] 0.66 0.67": a counter, but no named field after it.
    with pytest.raises(ImportFailedError, match="not a training log"):
        _read(tmp_path, _rounds("[{i}] {t:.2f} {v:.2f}"))


def test_lightgbm_possessive_set_names_and_the_best_round_repeated(tmp_path):
    body = ("Training until validation scores don't improve for 50 rounds\n"
            + _rounds("[{i}]\ttraining's binary_logloss: {t:.2f}\tvalid_1's binary_logloss: {v:.2f}", 6)
            + "Early stopping, best iteration is:\n[0]\ttraining's binary_logloss: 0.66\tvalid_1's binary_logloss: 0.67\n")
    imp = _read(tmp_path, body)
    steps, values = _series(imp, "train", "loss")
    assert steps == [0, 1, 2, 3, 4, 5] and values[-1] == pytest.approx(0.46)
    assert _series(imp, "evals", "val_loss")[0] == steps
    assert imp.config["text_lines"]["runs"] == 1  # the repeat of round 0 is no restart


def test_a_round_going_back_without_the_best_line_is_still_a_restart(tmp_path):
    body = (_rounds("[{i}]\ttraining's binary_logloss: {t:.2f}\tvalid_1's binary_logloss: {v:.2f}", 6)
            + "[0]\ttraining's binary_logloss: 0.66\tvalid_1's binary_logloss: 0.67\n")
    assert _read(tmp_path, body).config["text_lines"]["runs"] == 2


def test_catboost_learn_and_test_are_the_losses_and_best_is_none(tmp_path):
    imp = _read(tmp_path, _rounds("{i}:\tlearn: {t:.2f}\ttest: {v:.2f}\tbest: {v:.2f} ({i})\ttotal: 52ms\tremaining: 52s"))
    assert _series(imp, "train", "loss")[1][0] == 0.66
    (val,) = [c for c in imp.evals if c.startswith("val_loss")]
    assert _series(imp, "evals", val)[1] == pytest.approx([0.67, 0.64, 0.61, 0.58, 0.55])
    assert "best" not in imp.evals and not any("best" in c and c.startswith("val_loss") for c in imp.evals)


def test_a_leading_number_and_colon_before_bare_numbers_is_no_step(tmp_path):
    with pytest.raises(ImportFailedError, match="not a training log"):
        _read(tmp_path, _rounds("{i}: {t:.2f} {v:.2f}"))


@pytest.mark.parametrize("name, role", [
    ("train-logloss", (False, "loss")), ("training's binary_logloss", (False, "loss")),
    ("validation-logloss", (True, "val_loss")), ("valid_1's binary_logloss", (True, "val_loss")),
    ("eval-rmse", (True, "val_loss")), ("test-rmse", (True, "val_loss@test")), ("eval's l2", (True, "val_loss")),
])
def test_a_set_and_a_loss_like_metric_take_the_set_s_loss_role(name, role):
    assert role_of(name) == role


@pytest.mark.parametrize("name", ["train-auc", "validation-error", "valid_1's auc", "foo-logloss"])
def test_a_set_and_another_metric_take_no_loss_role(name):
    assert role_of(name)[1] not in ("loss", "val_loss")


def test_the_step_written_after_the_loss(tmp_path):
    imp = _read(tmp_path, "".join(f"INFO:tensorflow:loss = {2.31 - 0.3 * i:.2f}, step = {100 * i} (0.3 sec)\n"
                                  for i in range(5)))
    assert _series(imp, "train", "loss")[0] == [0, 100, 200, 300, 400]
    imp = _read(tmp_path, "".join(f"loss={2.31 - 0.3 * i:.2f} step={100 * i}\n" for i in range(5)), "b.log")
    assert _series(imp, "train", "loss")[1][0] == 2.31


def test_a_step_first_line_keeps_its_fields_after_the_step(tmp_path):
    imp = _read(tmp_path, "".join(f"lr=0.1 step={100 * i} loss={2.31 - 0.3 * i:.2f}\n" for i in range(5)))
    assert "lr" not in imp.train and _series(imp, "train", "loss")[1][0] == 2.31


def _estimator(eval_line: str) -> str:
    lines = [f"INFO:tensorflow:loss = {2.31 - 0.3 * i:.2f}, step = {100 * i} (0.3 sec)" for i in range(5)]
    lines.insert(3, eval_line)
    return "\n".join(lines) + "\n"


def test_an_evaluation_dict_at_a_step_is_the_validation_loss(tmp_path):
    imp = _read(tmp_path, _estimator("INFO:tensorflow:Saving dict for global step 200: accuracy = 0.84, "
                                     "average_loss = 0.36, global_step = 200, loss = 46.1"))
    assert _series(imp, "train", "loss")[1] == pytest.approx([2.31, 2.01, 1.71, 1.41, 1.11])
    assert _series(imp, "evals", "val_loss") == ([200], [0.36])


def test_a_training_line_that_names_its_step_once_stays_a_training_line(tmp_path):
    imp = _read(tmp_path, _estimator("INFO:tensorflow:global step 250: accuracy = 0.84, loss = 1.30"))
    steps, values = _series(imp, "train", "loss")
    assert "val_loss" not in imp.evals and values[steps.index(250)] == 1.30


def test_a_stated_nan_loss_is_a_nonfinite_event(tmp_path):
    imp = _read(tmp_path, _estimator("INFO:tensorflow:global_step/sec: 3.1")
                + "ERROR:tensorflow:Model diverged with loss = NaN.\n")
    assert [(e[0], e[1]) for e in imp.events] == [(400, "nonfinite_loss")]


def test_a_line_that_names_nan_and_loss_otherwise_is_no_event(tmp_path):
    imp = _read(tmp_path, _estimator("INFO:tensorflow:global_step/sec: 3.1")
                + "INFO:tensorflow:NaN checks are on for the loss.\n")
    assert imp.events == []


def _espnet(i: int, train: float, valid: float) -> str:
    return (f"[gpu01] 2020-11-11 16:41:04,070 (trainer:243) INFO: {i}epoch results: [train] iter_time=0.001, "
            f"loss={train:.2f}, lr_0=0.100, total_count=52549, [valid] loss={valid:.2f}, total_count=1680\n")


def test_a_glued_epoch_and_train_valid_sections_feed_both_series(tmp_path):
    imp = _read(tmp_path, "".join(_espnet(i, 2.4 - 0.2 * i, 2.1 - 0.1 * i) for i in range(1, 6)))
    assert _series(imp, "train", "loss") == ([1, 2, 3, 4, 5], pytest.approx([2.2, 2.0, 1.8, 1.6, 1.4]))
    assert _series(imp, "evals", "val_loss") == ([1, 2, 3, 4, 5], pytest.approx([2.0, 1.9, 1.8, 1.7, 1.6]))


def test_a_bracketed_word_that_names_no_set_heads_no_section(tmp_path):
    imp = _read(tmp_path, "".join(f"step {i} [rank0] loss={2.4 - 0.2 * i:.2f}\n" for i in range(1, 6)))
    assert _series(imp, "train", "loss")[0] == [1, 2, 3, 4, 5] and not imp.evals


def test_a_progress_count_glued_to_epoch_is_no_step(tmp_path):
    # No step is read from "1/25epoch": the lines, which name none, are read in their order (round 15).
    imp = _read(tmp_path, "".join(f"INFO: {i}/25epoch started, loss=2.0\n" for i in range(1, 6)))
    assert imp.config["index_kind"] == "row" and list(imp.train["loss"].steps) == [0, 1, 2, 3, 4]


def _roles(tmp_path, header: str) -> dict[str, tuple[str, ...]]:
    from runlens.io.reader import read_table
    from runlens.io.reader.roles import infer

    path = tmp_path / "evals.csv"
    path.write_text(header + "\n" + "".join(f"{0.66 - 0.04 * i:.2f},{0.67 - 0.03 * i:.2f}\n" for i in range(5)))
    table = read_table(path)
    assert table is not None
    return {p.role: p.columns for p in infer(table).picks}


def test_a_table_of_boosting_evaluation_results_has_both_losses(tmp_path):
    assert _roles(tmp_path, "train-logloss,validation-logloss") == {
        "loss": ("train-logloss",), "val_loss": ("validation-logloss",)}


def test_a_table_of_set_scores_has_no_loss(tmp_path):
    assert _roles(tmp_path, "train-auc,validation-auc") == {}


def _echo(evals: list[float], every: int = 20) -> str:
    lines = []
    for i in range(80):
        val = evals[min(i // every, len(evals)) - 1] if i >= every else None
        tail = f" | val_loss: {val}" if val is not None else ""
        lines.append(f"iteration {10 * i} | reduced_train_loss: {3.25 * 0.99 ** i:.3f}{tail}\n")
    return "".join(lines)


def test_a_validation_loss_echoed_on_every_training_line_is_one_evaluation_per_value(tmp_path):
    imp = _read(tmp_path, _echo([1.921, 1.712, 1.902]))
    assert _series(imp, "evals", "val_loss") == ([200, 400, 600], [1.921, 1.712, 1.902])


def test_a_validation_loss_of_one_value_throughout_keeps_every_record(tmp_path):
    # A stuck validation loss logged at every line, or a single evaluation: nothing tells them apart.
    imp = _read(tmp_path, _echo([0.693]))
    assert len(_series(imp, "evals", "val_loss")[0]) == 60
