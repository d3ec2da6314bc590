"""Console lines in every common punctuation, and log folders, through the reader: each fixture is
written here with a firing case, and the analysed steps are the ones the file spells."""

from __future__ import annotations

import sys

import pytest
import shapes_text as st
from logmaker import NAN_AT

from runlens.analysis import analyze
from runlens.io.discover import discover_runs
from runlens.io.loader import load_run


def codes(d) -> set[str]:
    return {f.code for f in d.findings}


@pytest.mark.parametrize("name", sorted(st.DIALECTS))
def test_each_dialect_keeps_the_logged_steps_and_finds_the_nan(tmp_path, name):
    path, steps = st.dialect(tmp_path, name)
    assert load_run(str(path)).scalars.column("step").to_pylist() == steps
    d = analyze(str(path))
    assert "nonfinite_loss" in codes(d)
    assert next(f for f in d.findings if f.code == "nonfinite_loss").step == steps[NAN_AT]


def test_a_warning_that_a_nan_loss_was_skipped_is_a_nonfinite_loss(tmp_path):
    path = st.skipped_nan_warning(tmp_path)
    run = load_run(str(path))
    assert run.events.column("kind").to_pylist() == ["nonfinite_loss"]
    assert "nonfinite_loss" in codes(analyze(str(path)))


def test_a_dvclive_folder_is_one_run_whose_eval_loss_overfits(tmp_path):
    root = st.dvclive(tmp_path)
    run = load_run(str(root))
    assert run.scalars.column("step").to_pylist() == list(range(60))
    assert run.config["import_roles"]["val_loss"]["columns"] == ["eval/loss"]
    assert analyze(str(root)).curve.label == "overfitting"
    assert discover_runs([tmp_path]) == [str(root)]


def test_lightning_versions_read_the_latest_and_name_the_others(tmp_path):
    root = st.lightning_versions(tmp_path)
    run = load_run(str(root))
    assert any("read version_1/metrics.csv" in w for w in run.warnings)
    assert run.scalars.column("step").to_pylist()[:3] == [9, 19, 29]
    assert "nonfinite_loss" in codes(analyze(str(root)))  # version_1 is the one that went NaN


def test_a_trainer_output_folder_reads_its_log_and_names_every_other_file(tmp_path):
    root = st.output_folder(tmp_path)
    run = load_run(str(root))
    assert run.config["config_json"] == {"lr": 0.04, "batch_size": 32}
    assert any("config.json" in w and "notes.txt" in w for w in run.warnings)
    assert run.scalars.column("step").to_pylist()[:3] == [0, 10, 20]
    assert "nonfinite_loss" in codes(analyze(str(root)))


def test_keras_tensor_summaries_decode_without_the_tensorboard_package(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "tensorboard" or m.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard now fails
    root, epochs = st.keras_tensor_events(tmp_path)
    run = load_run(str(root))
    assert run.scalars.column("step").to_pylist() == epochs == run.evals.column("step").to_pylist()
    assert analyze(str(root)).curve.label == "overfitting"


def test_loose_logs_beside_runs_are_analyzed_and_data_files_are_not(tmp_path):
    st.output_folder(tmp_path)
    path, _ = st.dialect(tmp_path, "colon")
    (tmp_path / "data.csv").write_text("x,y\n1,2\n3,4\n5,6\n")
    found = discover_runs([tmp_path])
    assert str(path) in found and str(tmp_path / "lr_sweep_1") in found
    assert str(tmp_path / "data.csv") not in found
