"""``runlens import hf``: every step written and shown is one the Trainer's own file holds (issue 19)."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
from _cli import invoke

LOGGING_STEPS, EVAL_STEPS, LAST = 10, 50, 300
NAN_FROM = 200  # the training loss is NaN from this logged step on


def _loss(step: int) -> float:
    return 2.5 * math.exp(-step / 80) + 0.2


def _state(path):
    history = []
    for step in range(LOGGING_STEPS, LAST + 1, LOGGING_STEPS):
        loss = "NaN" if step >= NAN_FROM else _loss(step)
        history.append({"epoch": step / 100, "grad_norm": 1.0, "learning_rate": 1e-3, "loss": loss, "step": step})
        if step % EVAL_STEPS == 0:
            history.append({"epoch": step / 100, "eval_loss": _loss(step) + 0.1, "eval_runtime": 1.0, "step": step})
    history.append({"epoch": 3.0, "step": LAST, "train_loss": 0.9, "train_runtime": 12.0})
    state = {"global_step": LAST, "logging_steps": LOGGING_STEPS, "eval_steps": EVAL_STEPS, "log_history": history}
    # json.dumps writes NaN bare, as the Trainer's own json.dump does
    path.write_text(json.dumps(state, indent=2).replace('"NaN"', "NaN"))
    return path


def _steps_of(run, table):
    files = sorted((run / table).rglob("*.parquet"))
    return sorted(s for f in files for s in pq.read_table(f, columns=["step"]).column("step").to_pylist())


def test_imported_trainer_state_keeps_the_files_own_steps(tmp_path):
    state = _state(tmp_path / "trainer_state.json")
    history = json.loads(state.read_text())["log_history"]
    train_steps = sorted(e["step"] for e in history if "loss" in e)
    eval_steps = sorted(e["step"] for e in history if "eval_loss" in e)
    res = invoke("import", "hf", state, tmp_path / "run")
    assert res.exit_code == 0, res.output
    assert _steps_of(tmp_path / "run", "scalars") == train_steps
    assert _steps_of(tmp_path / "run", "evals") == eval_steps


def test_every_step_the_analysis_names_is_one_in_the_file(tmp_path):
    state = _state(tmp_path / "trainer_state.json")
    in_file = {e["step"] for e in json.loads(state.read_text())["log_history"]}
    assert invoke("import", "hf", state, tmp_path / "run").exit_code == 0
    res = invoke("analyze", tmp_path / "run", "--format", "json")
    assert res.exit_code == 1, res.output  # the NaN loss is an error
    obj = json.loads(res.stdout)
    numbers = obj["key_numbers"]
    assert numbers["first_nonfinite_step"] == NAN_FROM
    assert (numbers["first_step"], numbers["last_step"]) == (LOGGING_STEPS, LAST)
    named = [v for k, v in numbers.items() if k.endswith("_step") and v is not None]
    named += [f["step"] for f in obj["findings"] if f["step"] is not None]
    named += [obj["verdict_step"]] if obj["verdict_step"] is not None else []
    assert named and set(named) <= in_file, sorted(set(named) - in_file)


def test_the_log_read_directly_and_imported_agree_on_steps(tmp_path):
    state = _state(tmp_path / "trainer_state.json")
    assert invoke("import", "hf", state, tmp_path / "run").exit_code == 0
    direct = json.loads(invoke("analyze", state, "--format", "json").stdout)["key_numbers"]
    imported = json.loads(invoke("analyze", tmp_path / "run", "--format", "json").stdout)["key_numbers"]
    keys = [k for k in direct if k.endswith("_step") or k == "first_step"]
    assert {k: direct[k] for k in keys} == {k: imported[k] for k in keys}


def test_console_steps_are_the_progress_bar_counts(tmp_path):
    log = tmp_path / "job.out"
    log.write_text(
        " 10%|#         | 10/100 [00:01<00:09,  9.9it/s]{'loss': 2.5, 'grad_norm': 1.5, 'learning_rate': 0.001}\n"
        " 20%|##        | 20/100 [00:02<00:08,  9.9it/s]{'loss': 2.1, 'grad_norm': 1.4, 'learning_rate': 0.001}\n"
        "{'eval_loss': 2.7, 'eval_runtime': 0.5, 'epoch': 0.2}\n")
    assert invoke("import", "hf", log, tmp_path / "run").exit_code == 0
    assert _steps_of(tmp_path / "run", "scalars") == [10, 20]
    assert _steps_of(tmp_path / "run", "evals") == [20]


def test_console_lines_without_a_bar_count_in_logging_steps(tmp_path):
    log = tmp_path / "job.out"
    log.write_text("".join(f"{{'loss': {2.5 - i / 10}, 'learning_rate': 0.001}}\n" for i in range(4)))
    assert invoke("import", "hf", log, tmp_path / "run", "--logging-steps", "25").exit_code == 0
    assert _steps_of(tmp_path / "run", "scalars") == [25, 50, 75, 100]
