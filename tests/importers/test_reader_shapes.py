"""The structure-first reader on every shape of structured log: each fixture is written here, each
has a firing case (a NaN, a spike or overfitting) recovered through the reader, and the steps of the
analysed run are the ones the file spells."""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapes
from click.testing import CliRunner
from logmaker import NAN_AT

from runlens.analysis import analyze
from runlens.cli import main
from runlens.io.importers import detect_kind
from runlens.io.loader import load_run


def codes(d) -> set[str]:
    return {f.code for f in d.findings}


def loss_steps(path) -> list[int]:
    return load_run(str(path)).scalars.column("step").to_pylist()


def test_a_list_of_records_without_extension_goes_nan_at_its_own_iteration(tmp_path):
    path, steps = shapes.records_json(tmp_path)
    assert detect_kind(path) == "table"
    run = load_run(str(path))
    assert run.scalars.column("step").to_pylist() == steps
    assert run.evals.column("step").to_pylist() == steps[9::10]
    d = analyze(str(path))
    assert "nonfinite_loss" in codes(d)
    first_nan = next(f for f in d.findings if f.code == "nonfinite_loss").step
    assert first_nan == steps[NAN_AT]  # the log's own iteration number, not a row index
    assert run.config["import_roles"]["loss"]["columns"] == ["main/loss"]


@pytest.mark.parametrize("maker, kind", [(shapes.history_columns, "row"), (shapes.history_with_epochs, "epoch")])
def test_a_dict_of_lists_overfits_on_its_rows_or_its_epochs(tmp_path, maker, kind):
    path, steps = maker(tmp_path)
    run = load_run(str(path))
    assert run.config["index_kind"] == kind
    assert run.scalars.column("step").to_pylist() == steps == run.evals.column("step").to_pylist()
    assert analyze(str(path)).curve.label == "overfitting"


def test_json_lines_written_twice_keep_each_step_once_and_find_the_spike(tmp_path):
    path, steps = shapes.jsonl_twice(tmp_path)
    assert loss_steps(path) == steps  # no duplicated steps
    d = analyze(str(path))
    assert "loss_spikes" in codes(d)
    spike = next(f for f in d.findings if f.code == "loss_spikes")
    assert spike.step == steps[70]


def test_flair_tsv_uses_its_epochs_and_its_dev_loss(tmp_path):
    path, epochs = shapes.flair_tsv(tmp_path)
    run = load_run(str(path))
    assert run.scalars.column("step").to_pylist() == epochs and run.config["index_kind"] == "epoch"
    assert run.config["import_roles"]["val_loss"]["columns"] == ["DEV_LOSS"]
    assert analyze(str(path)).curve.label == "overfitting"


@pytest.mark.parametrize("maker", [shapes.ultralytics_padded, shapes.yolo_results_txt])
def test_loss_parts_without_a_total_are_summed_and_said_so(tmp_path, maker):
    path, epochs = maker(tmp_path)
    run = load_run(str(path))
    roles = run.config["import_roles"]
    assert run.scalars.column("step").to_pylist() == epochs
    assert roles["val_loss"]["how"] == "sum" and len(roles["val_loss"]["columns"]) == 3
    if maker is shapes.ultralytics_padded:
        assert roles["loss"]["how"] == "sum" and "summed" in roles["loss"]["why"]
        assert run.scalars.column("loss")[5].as_py() == pytest.approx(3 * (shapes.falling(10) / 3), rel=1e-9)
    assert analyze(str(path)).curve.label == "overfitting"
    assert any(w.startswith("import (table): roles: loss <-") for w in analyze(str(path)).warnings)


def test_every_nonfinite_spelling_counts_and_a_repeated_header_is_skipped(tmp_path):
    path, steps, nonfinite = shapes.semicolon_spellings(tmp_path)
    loss = np.array(load_run(str(path)).scalars.column("loss").to_pylist(), dtype=float)
    assert loss_steps(path) == steps
    assert int((~np.isfinite(loss)).sum()) == nonfinite
    assert "nonfinite_loss" in codes(analyze(str(path)))


def test_appended_runs_are_told_apart_and_the_last_is_read(tmp_path):
    path, second = shapes.appended_runs(tmp_path)
    run = load_run(str(path))
    assert run.scalars.column("step").to_pylist() == second
    assert any("2 runs in one log" in w for w in run.warnings)
    assert load_run(str(path), import_options={"run": 1}).scalars.num_rows == 40
    assert "nonfinite_loss" in codes(analyze(str(path)))


def test_a_perplexity_logged_alone_becomes_its_log_and_says_so(tmp_path):
    path, steps = shapes.perplexity_only(tmp_path)
    run = load_run(str(path))
    assert run.config["import_roles"]["loss"]["how"] == "log"
    loss = run.scalars.column("loss").to_pylist()
    assert loss[3] == pytest.approx(shapes.falling(3)) and loss_steps(path) == steps


def test_a_gzipped_log_is_read_as_it_is(tmp_path):
    path, steps = shapes.records_json(tmp_path)
    packed = shapes.gz(path)
    assert loss_steps(packed) == steps
    assert "nonfinite_loss" in codes(analyze(str(packed)))


def test_overrides_win_and_the_json_says_which_column_took_which_role(tmp_path):
    path, _ = shapes.ultralytics_padded(tmp_path)
    res = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "--loss", "train/cls_loss"])
    import json

    out = json.loads(res.stdout)
    assert out["roles"]["loss"] == {"columns": ["train/cls_loss"], "how": "column", "why": "named by --loss"}
    assert out["roles"]["index"]["how"] == "epoch"
    bad = CliRunner().invoke(main, ["analyze", str(path), "--loss", "nope"])
    assert bad.exit_code == 2 and "no loss column 'nope'" in bad.output


def test_no_analysis_writes_a_run(tmp_path, monkeypatch):
    import recorders.writer

    def refuse(*a, **k):
        raise AssertionError("an analysis wrote a run")

    monkeypatch.setattr(recorders.writer.RunWriter, "__init__", refuse)
    path, _ = shapes.records_json(tmp_path)
    d = analyze(str(path))  # Diagnosis holds no run (issue 22): the run is read again to check it
    assert d.step_range is not None and not math.isnan(load_run(path).scalars.column("loss")[0].as_py())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log"]


def test_open_run_takes_a_log_by_url(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    from runlens.io.remote import open_run

    path, steps = shapes.records_json(tmp_path)
    fsspec.filesystem("memory").pipe("/bucket/runs/log", path.read_bytes())
    run = open_run("memory://bucket/runs/log")
    assert run.path == "memory://bucket/runs/log"
    assert run.scalars.column("step").to_pylist() == steps


def test_a_counter_two_processes_wrote_out_of_order_is_still_the_step(tmp_path):
    import json

    steps = [10 * (i + 1) for i in range(120)]
    order = []
    for i in range(0, 120, 2):  # each process writes its line twice, the second one step late
        order += [steps[i], steps[i], steps[i + 1], steps[i]] if i % 4 == 0 else [steps[i], steps[i + 1]]
    path = tmp_path / "trainer_log.jsonl"
    path.write_text("\n".join(json.dumps({"current_steps": s, "loss": 3.0 - s / 1000}) for s in order))
    run = load_run(str(path))
    assert run.config["index_kind"] == "step"
    assert run.scalars.column("step").to_pylist() == sorted(set(order))
