"""``steps_went_back``: a step counter that restarts or stands still within one attempt, so rows that
share a step replace each other; a resume going back to its checkpoint is not one.

The runs are written by the project's own writer (and, for the training-loop bug, by the recorder
around a real PyTorch loop), so the evidence is what a user's run folder holds: the rows in write
order while no compaction merged them, the writer's own count in run.json once one has."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from recorders.writer import RunWriter
from runlens.analysis import analyze
from runlens.io.loader import load_run
from runlens.io.rewinds import rewinds
from runlens.io.validate import validate_run


def _write(path, steps_per_attempt, *, flush_every=1000, compact=True):
    """One RunWriter per attempt (a second one on the same folder is a resume), each writing its steps."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for steps in steps_per_attempt:
            w = RunWriter(path, flush_every=flush_every, compact_on_close=compact, heartbeat=False)
            for s in steps:
                w.add_scalars(int(s), 2.0 * np.exp(-s / 200) + 0.1, lr=1e-3)
            w.close()
    return path


def _codes(path):
    return [f.code for f in analyze(load_run(path)).findings]


def _finding(path):
    (f,) = [f for f in analyze(load_run(path)).findings if f.code == "steps_went_back"]
    return f


EPOCH = np.arange(50)


@pytest.mark.parametrize(("flush_every", "compact", "source"), [
    (1000, True, "scalars rows in write order"), (7, False, "scalars rows in write order"),
    (7, True, "run.json attempts[].steps_went_back")])
def test_a_batch_index_passed_as_the_step_fires_in_every_layout(tmp_path, flush_every, compact, source):
    # One part, several parts, several parts compacted (the rows merged: only run.json's count is left).
    run = _write(tmp_path / "run", [np.tile(EPOCH, 4)], flush_every=flush_every, compact=compact)
    f = _finding(run)
    assert f.evidence["source"] == source
    assert f.severity == "error"
    assert f.evidence["times"] == 3 and f.evidence["rows_sharing_a_step"] == 150
    assert (f.evidence["first_from"], f.evidence["first_to"]) == (49, 0)
    assert "batch index" in f.title
    assert validate_run(run).violations == [], "the writer's added run.json key conforms to the format"


def test_the_epoch_passed_as_every_batchs_step_fires_as_standing_still(tmp_path):
    run = _write(tmp_path / "run", [np.repeat(np.arange(5), 20)])
    f = _finding(run)
    assert f.evidence["times"] == 0 and f.evidence["rows_sharing_a_step"] == 95
    assert "stood still" in f.title


def test_a_second_training_written_after_the_first_fires_once(tmp_path):
    run = _write(tmp_path / "run", [np.concatenate([np.arange(300), np.arange(120)])], flush_every=50)
    f = _finding(run)
    assert f.evidence["times"] == 1 and (f.evidence["first_from"], f.evidence["first_to"]) == (299, 0)


@pytest.mark.parametrize("compact", [True, False])
def test_silent_twin_a_resume_from_its_checkpoint_goes_back_by_design(tmp_path, compact):
    run = _write(tmp_path / "run", [np.arange(300), np.arange(250, 500)], flush_every=40, compact=compact)
    meta = json.loads((run / "run.json").read_text())
    assert [a["first_step"] for a in meta["attempts"]] == [0, 250]
    assert "steps_went_back" not in _codes(run)


def test_silent_twin_a_counter_that_keeps_counting(tmp_path):
    run = _write(tmp_path / "run", [np.arange(200)], flush_every=7)
    assert "steps_went_back" not in _codes(run)


def test_rewinds_in_write_order():
    assert rewinds(np.arange(10), {}) is None
    got = rewinds(np.array([0, 1, 2, 3, 1, 2, 3, 4]), {})
    assert got == {"times": 1, "rows": 3, "first_from": 3, "first_to": 1}
    # The same jump where a later attempt starts is a resume.
    assert rewinds(np.array([0, 1, 2, 3, 1, 2, 3, 4]), {"attempts": [{"first_step": 0}, {"first_step": 1}]}) is None
    assert rewinds(np.array([5]), {}) is None


torch = pytest.importorskip("torch")


def _loop(path, *, pass_batch_index: bool):
    """A real classifier trained for 4 epochs of 8 batches; the bug passes ``step=i`` (the batch index)."""
    from recorders.torch import Recorder

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(256, 6), torch.randint(0, 3, (256,))
    with Recorder(path, model, opt, handle_signals=False, announce=False, flush_every=5) as rec:
        for epoch in range(4):
            for i in range(8):
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x[i * 32:(i + 1) * 32]), y[i * 32:(i + 1) * 32])
                loss.backward()
                opt.step()
                rec.step(loss, step=i if pass_batch_index else epoch * 8 + i)
    return path


def test_recorded_loop_that_passes_the_batch_index_fires_and_warns_while_training(tmp_path):
    with pytest.warns(RuntimeWarning, match="step went back from 7 to 0"):
        run = _loop(tmp_path / "bug", pass_batch_index=True)
    truth = load_run(run).scalars.num_rows  # measured on the run: 32 steps trained, 8 rows left
    assert truth == 8
    f = _finding(run)
    assert f.evidence["times"] == 3 and f.evidence["rows_sharing_a_step"] == 24


def test_silent_twin_recorded_loop_with_the_global_step(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run = _loop(tmp_path / "fixed", pass_batch_index=False)
    assert load_run(run).scalars.num_rows == 32
    assert "steps_went_back" not in _codes(run)
