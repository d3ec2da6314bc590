"""Histories people keep or paste in the shapes their tools print them: each read by structure.

- TensorBoard's scalar CSV download (``Wall time,Step,Value``), its series named by the file name's
  tag, or by ``--loss Value``; a folder of them (one tag a file) is one run.
- ``print(history.history)``: a Keras History printed as a Python literal, not JSON.
- ``print(df)`` / ``df.to_string()``: pandas' unnamed index column in front of the header's names.

Each firing case has a silent twin that keeps its old reading.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from click.testing import CliRunner

from runlens.cli import main
from runlens.io.importers import detect_kind
from runlens.io.reader import read_table


def _analyze(path: Path, *args: str) -> tuple[int, dict | str]:
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", *args])
    if result.exit_code not in (0, 1):  # 1: a failing verdict; the report is still written
        return result.exit_code, result.output
    doc = json.loads(result.output)
    return 0, doc if "curve" in doc else doc["runs"][0]


def _roles(doc: dict) -> dict[str, list[str]]:
    return {k: v["columns"] for k, v in doc["roles"].items() if k != "index"}


def _falling(i: int) -> float:
    return round(2.0 * math.exp(-i / 8) + 0.1, 4)


def _overfit(i: int) -> float:
    return round(2.0 * math.exp(-i / 8) + 0.3 + 0.004 * i * i, 4)


def _download(path: Path, values: list[float], every: int = 100) -> Path:
    lines = ["Wall time,Step,Value"] + [f"{1619761818.9 + 9.5 * i:.1f},{every * i},{v}" for i, v in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")
    return path


# -- pandas' index column ------------------------------------------------------------------

_PANDAS = """      loss  val_loss
0  0.512  0.331
1  0.401  0.300
2  0.322  0.285
3  0.270  0.276
4  0.230  0.270
"""


def test_the_unnamed_pandas_index_does_not_shift_the_names(tmp_path):
    path = tmp_path / "hist.txt"
    path.write_text(_PANDAS)
    table = read_table(path)
    assert table is not None
    assert table.values["loss"].tolist() == [0.512, 0.401, 0.322, 0.270, 0.230]
    assert table.values["val_loss"].tolist() == [0.331, 0.300, 0.285, 0.276, 0.270]
    rc, doc = _analyze(path)
    assert rc == 0 and doc["curve"] != "diverged"


def test_a_named_pandas_index_and_a_tail_keep_their_numbers(tmp_path):
    path = tmp_path / "hist.txt"
    rows = "".join(f"{25 + i}  {_falling(25 + i)}  {_overfit(25 + i)}\n" for i in range(10))
    path.write_text("      loss  val_loss\nepoch\n" + rows)
    table = read_table(path)
    assert table is not None and table.values["epoch"].tolist() == list(range(25, 35))
    assert table.values["loss"].tolist() == [_falling(25 + i) for i in range(10)]


def test_a_headed_table_with_a_counter_column_is_unchanged(tmp_path):
    path = tmp_path / "hist.txt"
    path.write_text("epoch  loss  val_loss\n" + "".join(f"{i}  {_falling(i)}  {_overfit(i)}\n" for i in range(5)))
    table = read_table(path)
    assert table is not None and table.names == ["epoch", "loss", "val_loss"]
    assert table.values["epoch"].tolist() == [0, 1, 2, 3, 4]


def test_a_tab_table_one_header_cell_short_keeps_its_names(tmp_path):
    # Flair's loss.tsv: an extra empty cell on every row; its first column, EPOCH, counts up by one.
    path = tmp_path / "loss.tsv"
    rows = "".join(f"{i}\t11:17:{10 + i}\t0.1000\t{_falling(i)}\t\t{_overfit(i)}\n" for i in range(20))
    path.write_text("EPOCH\tTIMESTAMP\tLEARNING_RATE\tTRAIN_LOSS\tDEV_LOSS\n" + rows)
    table = read_table(path)
    assert table is not None and "index" not in table.names
    assert table.values["EPOCH"].tolist() == list(range(20))
    assert table.values["TRAIN_LOSS"].tolist() == [_falling(i) for i in range(20)]


def test_a_short_header_over_a_first_column_that_does_not_count_is_not_an_index(tmp_path):
    path = tmp_path / "hist.txt"
    path.write_text("      loss  val_loss\n" + "".join(f"{7 * i}  {_falling(i)}  {_overfit(i)}\n" for i in range(5)))
    table = read_table(path)
    assert table is not None and "index" not in table.names


# -- TensorBoard scalar downloads -------------------------------------------------------------

def test_a_tensorboard_download_is_named_by_the_tag_in_its_file_name(tmp_path):
    path = _download(tmp_path / "run-version_0-tag-train_loss.csv", [1.35, 1.10, 0.92, 0.80, 0.71])
    rc, doc = _analyze(path)
    assert rc == 0, doc
    assert _roles(doc) == {"loss": ["train_loss"]}
    assert doc["roles"]["index"]["columns"] == ["Step"]


def test_a_tensorboard_download_with_an_unnamed_value_is_read_with_loss_value(tmp_path):
    path = _download(tmp_path / "tensorboard-export.csv", [1.35, 1.10, 0.92, 0.80, 0.71])
    rc, out = _analyze(path)
    assert rc == 2 and "--loss Value" in out  # refused in one line, saying how to name it
    rc, doc = _analyze(path, "--loss", "Value")
    assert rc == 0, doc
    assert doc["roles"]["loss"]["why"] == "named by --loss"


def test_a_three_column_table_that_is_not_a_download_keeps_its_value_name(tmp_path):
    path = tmp_path / "run-x-tag-loss.csv"
    path.write_text("Time,Step,Value\n" + "".join(f"{i},{i},{_falling(i)}\n" for i in range(5)))
    table = read_table(path)
    assert table is not None and "Value" in table.names and "loss" not in table.names


def test_a_folder_of_tensorboard_downloads_is_one_run_with_a_column_per_tag(tmp_path):
    n = 40
    _download(tmp_path / "run-train-tag-epoch_loss.csv", [_falling(i) for i in range(n)], every=1)
    _download(tmp_path / "run-validation-tag-epoch_loss.csv", [_overfit(i) for i in range(n)], every=1)
    _download(tmp_path / "run-train-tag-epoch_learning_rate.csv", [0.001] * n, every=1)
    assert detect_kind(tmp_path) == "table"
    rc, doc = _analyze(tmp_path)
    assert rc == 0, doc
    assert _roles(doc) == {"loss": ["train/epoch_loss"], "val_loss": ["validation/epoch_loss"],
                           "lr": ["train/epoch_learning_rate"]}
    assert doc["curve"] == "overfitting"


def test_a_folder_with_one_download_is_read_as_before(tmp_path):
    _download(tmp_path / "run-train-tag-loss.csv", [_falling(i) for i in range(30)])
    (tmp_path / "notes.txt").write_text("lr 1e-3, batch 32\n")
    rc, doc = _analyze(tmp_path / "run-train-tag-loss.csv")
    assert rc == 0 and _roles(doc) == {"loss": ["train/loss"]}
    from runlens.io.reader.scalars import folder

    assert folder([(tmp_path / "run-train-tag-loss.csv", read_table(tmp_path / "run-train-tag-loss.csv"))]) is None


# -- print(history.history) ------------------------------------------------------------------

def test_a_printed_keras_history_is_read_as_its_json_twin(tmp_path):
    loss = [0.9, 0.7, 0.5, 0.4, 0.35]
    val = [0.8, 0.65, 0.55, 0.5, float("nan")]
    printed = tmp_path / "history.txt"
    printed.write_text(repr({"loss": loss, "val_loss": val, "accuracy": [0.5, 0.6, 0.7, 0.75, 0.8]}) + "\n")
    assert "'loss'" in printed.read_text() and "nan" in printed.read_text()
    rc, doc = _analyze(printed)
    assert rc in (0, 1) and "nonfinite_validation" in {f["code"] for f in doc["findings"]}
    assert _roles(doc) == {"loss": ["loss"], "val_loss": ["val_loss"]}
    table = read_table(printed)
    assert table is not None and table.values["loss"].tolist() == loss
    assert math.isnan(table.values["val_loss"][-1]) and table.present["val_loss"][-1]


def test_numpy_scalars_in_a_printed_history_are_numbers(tmp_path):
    path = tmp_path / "h.txt"
    path.write_text("{'loss': [np.float64(0.9), np.float64(0.7), np.float64(0.5)], 'lr': [1e-3, 1e-3, -inf]}")
    table = read_table(path)
    assert table is not None and table.values["loss"].tolist() == [0.9, 0.7, 0.5]


def test_a_python_expression_that_is_not_a_literal_is_never_evaluated(tmp_path):
    path = tmp_path / "h.txt"
    path.write_text("{'loss': [__import__('os').system('touch pwned'), 0.7, 0.5]}")
    assert read_table(path) is None
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_history_printed_in_a_repl_session_is_read_without_its_prompts(tmp_path):
    history = {"loss": [0.9, 0.7, 0.5, 0.4, 0.35], "val_loss": [0.8, 0.65, 0.55, 0.5, 0.48]}
    python = tmp_path / "python.txt"
    python.write_text(f">>> history = model.fit(x, y, epochs=5, verbose=0)\n>>> print(history.history)\n{history!r}\n>>> \n")
    ipython = tmp_path / "ipython.txt"
    ipython.write_text(f"In [3]: history.history\nOut[3]: {history!r}\n\nIn [4]: \n")
    for path in (python, ipython):
        table = read_table(path)
        assert table is not None and table.values["val_loss"].tolist() == history["val_loss"]


def test_trainer_console_dicts_after_a_prompt_stay_the_hf_importers(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(">>> trainer.train()\n" + "".join(f"{{'loss': {_falling(i)}, 'learning_rate': 5e-05, "
                                                       f"'epoch': {i / 10}}}\n" for i in range(30)))
    assert detect_kind(path) == "hf"


def test_trainer_console_dicts_stay_the_hf_importers(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("".join(f"{{'loss': {_falling(i)}, 'learning_rate': 5e-05, 'epoch': {i / 10}}}\n"
                            for i in range(30)))
    assert detect_kind(path) == "hf"


# -- YAML block-style lists ------------------------------------------------------------------

def test_a_block_style_yaml_list_of_records_is_read(tmp_path):
    path = tmp_path / "log_history.yaml"
    items = "".join(f"- epoch: {i / 10}\n  loss: {_falling(i)}\n  step: {50 * (i + 1)}\n" for i in range(6))
    path.write_text("# saved from trainer.state.log_history\nlog_history:\n" + items + "- eval_loss: .nan\n  step: 300\n")
    table = read_table(path)
    assert table is not None and table.values["step"].tolist() == [50 * (i + 1) for i in range(6)] + [300]
    rc, doc = _analyze(path)
    assert rc in (0, 1) and _roles(doc)["loss"] == ["loss"] and doc["roles"]["index"]["columns"] == ["step"]


def test_a_yaml_config_or_a_nested_list_is_not_a_history(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("model:\n  name: resnet\n  layers: 50\noptim:\n  lr: 0.1\n")
    assert read_table(config) is None
    nested = tmp_path / "runs.yaml"
    nested.write_text("- name: a\n  metrics:\n    - 0.5\n    - 0.4\n- name: b\n  metrics:\n    - 0.3\n")
    assert read_table(nested) is None


# -- long ("tidy") tables ------------------------------------------------------------------

def _long_rows(n: int) -> list[tuple[int, float, str, str]]:
    return ([(e, _falling(e), "loss", "training") for e in range(1, n + 1)]
            + [(e, _overfit(e), "loss", "validation") for e in range(1, n + 1)])


def test_a_long_history_table_is_pivoted_to_one_column_per_series(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,value,metric,data\n" + "".join(f"{e},{v},{m},{d}\n" for e, v, m, d in _long_rows(5)))
    rc, doc = _analyze(path)
    assert rc in (0, 1), doc
    assert _roles(doc) == {"loss": ["loss_training"], "val_loss": ["loss_validation"]}
    assert doc["roles"]["index"]["columns"] == ["epoch"]


def test_r_print_of_a_long_history_with_row_numbers_is_pivoted(tmp_path):
    path = tmp_path / "history.txt"
    rows = "".join(f"{i + 1}  {e}  {v}  {m}  {d}\n" for i, (e, v, m, d) in enumerate(_long_rows(30)))
    path.write_text("    epoch      value   metric       data\n" + rows)
    table = read_table(path)
    assert table is not None and table.values["loss_validation"].tolist() == [_overfit(e) for e in range(1, 31)]
    rc, doc = _analyze(path)
    assert rc in (0, 1) and doc["curve"] == "overfitting"


def test_a_table_with_a_text_label_on_every_row_is_not_pivoted(tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text("step,score,text\n" + "".join(f"{i},{_falling(i)},sample number {i}\n" for i in range(10)))
    table = read_table(path)
    assert table is not None and table.shape == "delimited" and "score" in table.names
