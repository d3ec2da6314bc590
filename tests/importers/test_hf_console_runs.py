"""Hugging Face console logs holding several launches: told apart like the text reader's runs (issue 19)."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from runlens.cli import main
from runlens.errors import ImportFailedError
from runlens.io.importers import hf

BANNER = "***** Running training *****\n  Num examples = 1,000\n  Num Epochs = 1\n"
STEPS = range(10, 310, 10)  # 30 logged steps, logging_steps=10, max_steps=300


def _healthy(step: int) -> float:
    return 2.4 * math.exp(-step / 90) + 0.3 + 0.01 * math.sin(step)


def _nan_late(step: int) -> float:
    return _healthy(step) if step < 200 else float("nan")


def _launch(loss, *, banner=True, bar=True, summary=True) -> str:
    out = [BANNER] if banner else []
    for step in STEPS:
        value = loss(step)
        shown = "nan" if math.isnan(value) else f"{value:.4f}"
        head = f" {step // 3}%|###       | {step}/300 [00:{step // 10:02d}<00:30, 9.8it/s]" if bar else ""
        out.append(f"{head}{{'loss': {shown}, 'grad_norm': 1.5, 'learning_rate': 5e-05, 'epoch': {step / 300:.2f}}}\n")
        if step % 100 == 0:
            out.append(f"{{'eval_loss': {value + 0.05 if value == value else 'nan'}, 'eval_runtime': 1.2, "
                       f"'epoch': {step / 300:.2f}}}\n")
    if summary:
        out.append("{'train_runtime': 31.0, 'train_samples_per_second': 96.1, 'train_loss': 0.9, 'epoch': 1.0}\n")
    return "".join(out)


@pytest.fixture
def three_launches(tmp_path):
    path = tmp_path / "stdout.txt"
    path.write_text(_launch(_healthy) + "Traceback? no: relaunched\n" + _launch(_nan_late) + _launch(_healthy))
    return path


def test_three_appended_launches_are_three_runs_the_last_read_by_default(three_launches):
    imp = hf.read(three_launches)
    assert imp.train["loss"].steps.tolist() == list(STEPS)
    assert all(math.isfinite(v) for v in imp.train["loss"].values)
    note = next(w for w in imp.warnings if w.startswith("the log holds 3 runs"))
    assert "imported run 3 (the last)" in note and "steps 10..300" in note


def test_run_picks_one_launch_with_its_own_steps(three_launches):
    imp = hf.read(three_launches, run=2)
    loss = imp.train["loss"]
    assert loss.steps.tolist() == list(STEPS)
    assert [int(s) for s, v in zip(loss.steps, loss.values, strict=True) if math.isnan(v)][0] == 200
    assert imp.evals["val_loss"].steps.tolist() == [100, 200, 300]
    with pytest.raises(ImportFailedError, match="--run 4: the log holds 3 run"):
        hf.read(three_launches, run=4)


def test_analyze_judges_each_launch_and_names_the_diverged_one(three_launches):
    res = CliRunner().invoke(main, ["analyze", str(three_launches), "--format", "json"])
    assert res.exit_code == 1, res.output
    obj = json.loads(res.stdout)
    assert [e["index"] for e in obj["runs_in_file"]] == [1, 2, 3]
    assert obj["headline"].startswith("Run 2 of 3 in this log")
    assert obj["key_numbers"]["first_nonfinite_step"] == 200


@pytest.mark.parametrize("banner, bar, summary", [
    (False, True, False),   # the progress bar starts again
    (False, False, False),  # no bar: the epoch goes back
    (False, False, True),   # a training dict after the final summary
])
def test_a_launch_is_told_apart_without_a_banner(tmp_path, banner, bar, summary):
    path = tmp_path / "out.log"
    path.write_text(_launch(_nan_late, banner=banner, bar=bar, summary=summary)
                    + _launch(_healthy, banner=banner, bar=bar, summary=summary))
    assert any(w.startswith("the log holds 2 runs") for w in hf.read(path).warnings)
    first = hf.read(path, run=1).train["loss"]
    assert math.isnan(first.values[-1]) and len(first.steps) == len(STEPS)


def test_one_launch_with_evaluations_and_a_summary_stays_one_run(tmp_path):
    path = tmp_path / "out.log"
    path.write_text(_launch(_healthy) + "{'eval_loss': 0.41, 'eval_runtime': 1.0, 'epoch': 1.0}\n")
    imp = hf.read(path)
    assert not any("runs" in w for w in imp.warnings)
    assert imp.train["loss"].steps.tolist() == list(STEPS)
    assert imp.evals["val_loss"].steps.tolist()[-1] == 300
    with pytest.raises(ImportFailedError, match="--run 2: the log holds 1 run"):
        hf.read(path, run=2)


def test_a_state_file_holds_one_run(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": [{"loss": 1.0, "step": 1}, {"loss": 0.9, "step": 2}]}))
    assert hf.read(path, run=1).train["loss"].steps.tolist() == [1, 2]
    with pytest.raises(ImportFailedError, match="holds one run"):
        hf.read(path, run=2)


def test_import_hf_takes_run(three_launches, tmp_path):
    out = tmp_path / "run2"
    res = CliRunner().invoke(main, ["import", "hf", str(three_launches), str(out), "--run", "2"])
    assert res.exit_code == 0, res.output
    obj = json.loads(CliRunner().invoke(main, ["analyze", str(out), "--format", "json"]).stdout)
    assert obj["key_numbers"]["first_nonfinite_step"] == 200
    bad = CliRunner().invoke(main, ["import", "hf", str(three_launches), str(tmp_path / "x"), "--run", "5"])
    assert bad.exit_code == 2 and "the log holds 3 run" in bad.output
