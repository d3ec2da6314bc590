"""Each run of a log of several, built from the one parse (``load_runs``), is the run ``--run N``
reads alone: same tables, same config, same warnings; and no two runs share their config."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runlens.io.loader import load_run, load_runs
from tests.multirun_logs import diverging, healthy, write_csv, write_text

RUNS = (healthy, diverging, healthy)


def _hf_console(path):
    launches = []
    for curve in RUNS:
        launches.append("***** Running training *****\n")
        launches += [f" 10%|#  | {s}/120 [00:01<00:10]{{'loss': {curve(s)}, 'epoch': {s / 120:.3f}}}\n"
                     for s in range(1, 121)]
        launches.append("{'eval_loss': 0.5, 'epoch': 1.0}\n{'train_runtime': 31.0, 'train_loss': 0.9, 'epoch': 1.0}\n")
    path.write_text("".join(launches))
    return path


def _wandb_export(path):
    header = "Step," + ",".join(f"run-{k} - train/loss" for k in range(len(RUNS)))
    path.write_text("\n".join([header, *(f"{s}," + ",".join(str(c(s)) for c in RUNS) for s in range(1, 121))]))
    return path


MAKERS = {
    "text": lambda d: write_text(d / "train.log", *RUNS),
    "csv": lambda d: write_csv(d / "train.csv", *RUNS),
    "hf": lambda d: _hf_console(d / "stdout.txt"),
    "wandb": lambda d: _wandb_export(d / "export.csv"),
}


def _same(a, b):
    config_a, config_b = dict(a.meta), dict(b.meta)
    assert config_a.pop("run_id") != config_b.pop("run_id")  # each built run is a run of its own
    assert config_a == config_b
    assert a.warnings == b.warnings and a.path == b.path and a.status == b.status
    for table in ("scalars", "evals", "layers", "events"):
        x, y = getattr(a, table), getattr(b, table)
        assert (x is None) == (y is None), table
        if x is not None:
            assert x.schema == y.schema, table
            for name in x.column_names:  # NaN is data: equal to NaN here, and a null stays a null
                np.testing.assert_array_equal(x[name].is_null().to_numpy(zero_copy_only=False),
                                              y[name].is_null().to_numpy(zero_copy_only=False))
                np.testing.assert_array_equal(x[name].to_numpy(zero_copy_only=False),
                                              y[name].to_numpy(zero_copy_only=False))


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_each_run_taken_from_the_one_parse_is_the_run_read_alone(kind, tmp_path):
    path = str(MAKERS[kind](tmp_path))
    runs = load_runs(path)
    _same(runs.run(), load_run(path))
    for i in range(1, len(RUNS) + 1):
        _same(runs.run(i), load_run(path, import_options={"run": i}))
    # Taken twice, in another order: a take leaves the parse as it found it.
    _same(runs.run(1), load_run(path, import_options={"run": 1}))


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_the_runs_taken_share_no_config(kind, tmp_path):
    runs = load_runs(str(MAKERS[kind](tmp_path)))
    first = runs.run(2)
    first.meta["config"]["import_warnings"].append("changed")
    first.meta["config"]["import_runs"]["runs"].clear()
    again = runs.run(2)
    assert "changed" not in again.meta["config"]["import_warnings"]
    assert len(again.meta["config"]["import_runs"]["runs"]) == len(RUNS)


def test_a_step_beyond_int64_is_said_once_in_each_run_of_a_csv(tmp_path):
    # The table the sniff read is cached and shared: a note about it once belonged to the table itself,
    # and every run read again from it added the note once more.
    path = write_csv(tmp_path / "train.csv", healthy, healthy)
    path.write_text(path.read_text() + "99999999999999999999999,0.5\n")
    runs = load_runs(str(path))
    for run in (runs.run(), runs.run(1), runs.run(2), load_run(str(path), import_options={"run": 2})):
        assert sum("beyond what a 64-bit integer" in w for w in run.warnings) == 1, run.warnings
    assert math.isfinite(healthy(1))
