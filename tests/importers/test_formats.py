"""Every other format, from fixtures the tests write: sniffed by content, read, and a firing case."""

from __future__ import annotations

import math
import sys

import logmaker
import pytest
from click.testing import CliRunner

from runlens.analysis import analyze
from runlens.cli import main
from runlens.errors import ImportFailedError
from runlens.io.importers import detect_kind, read
from runlens.io.importers import mlflow as mlflow_importer
from runlens.io.importers.sniff import sniff


def codes(d) -> set[str]:
    return {f.code for f in d.findings}


def test_detectron2_metrics_json_is_jsonl_with_total_loss(tmp_path):
    path = logmaker.detectron2(tmp_path)
    assert detect_kind(path) == "table"
    imp = read("jsonl", path)
    assert imp.config["import_roles"]["loss"]["columns"] == ["total_loss"] and imp.train["loss"].steps[0] == 19
    assert "loss_cls" in imp.train  # a part beside its total stays a user scalar
    assert "nonfinite_loss" in codes(analyze(str(path)))
    over = read("jsonl", path, loss="loss_cls")
    assert all(v == 0.5 for v in over.train["loss"].values)


def test_mmdet_log_json_counts_iters_across_epochs_and_reads_val(tmp_path):
    path = logmaker.mmdet_json(tmp_path)
    assert detect_kind(path) == "table"
    imp = read("jsonl", path)
    assert list(imp.train["loss"].steps[:4]) == [50, 100, 150, 200]
    assert list(imp.evals["val_loss"].steps[:2]) == [100, 200]  # at the last training step


def test_trainer_state_under_any_name_with_several_eval_sets(tmp_path, check_runlog):
    path = logmaker.trainer_state(tmp_path, "__init__.py", sets=("wiki", "code"))
    assert detect_kind(path) == "table"
    from runlens.io.loader import load_run

    cols = load_run(str(path)).evals.column_names
    d = analyze(str(path))
    assert "val_loss@wiki" in cols and "val_loss@code" in cols and "val_loss" in cols
    assert d.curve.label == "overfitting" and "no_validation" not in codes(d)
    assert any("named validation sets" in w for w in d.warnings)


def test_keras_csvlogger_without_extension_overfits(tmp_path):
    path = logmaker.keras_csv(tmp_path)
    assert detect_kind(path) == "table"
    assert analyze(str(path)).curve.label == "overfitting"


def test_wandb_chart_export_picks_the_last_run(tmp_path):
    path = logmaker.wandb_export(tmp_path)
    assert detect_kind(path) == "wandb"
    imp = read("wandb", path)
    assert imp.name == "run-b" and "loss" in imp.train
    assert any("the export holds 2 runs" in w for w in imp.warnings)
    assert "nonfinite_loss" in codes(analyze(str(path)))
    first = read("wandb", path, run=1)
    assert all(math.isfinite(v) for v in first.train["loss"].values)


def test_wandb_offline_file_names_the_extra_when_wandb_is_missing(tmp_path, monkeypatch):
    path = tmp_path / "run-abc.wandb"
    path.write_bytes(b":W&B" + b"\x00" * 60)
    # every wandb module, not only the package: a submodule another test imported stays cached in
    # sys.modules, and an import of it is served from there without looking at the parent
    for name in [m for m in sys.modules if m == "wandb" or m.startswith("wandb.")] + ["wandb"]:
        monkeypatch.setitem(sys.modules, name, None)
    assert detect_kind(path) == "wandb"
    with pytest.raises(ImportFailedError, match=r"runlens\[wandb\]"):
        read("wandb", path)


def test_mlflow_store_last_run_and_params(tmp_path):
    root = logmaker.mlflow_store(tmp_path)
    for p in (root, root / "0", root / "0" / "bbb222"):
        assert detect_kind(p) == "mlflow", p
    imp = read("mlflow", root)
    assert imp.name == "run-1" and imp.config["lr"] == "0.001"
    assert imp.train["loss"].times[0] == pytest.approx(1.7e9)
    assert "nonfinite_loss" in codes(analyze(str(root)))
    assert all(math.isfinite(v) for v in read("mlflow", root, run=1).train["loss"].values)
    assert analyze(str(root / "0" / "aaa111")).curve.label == "overfitting"


def test_mlflow_meta_yaml_without_pyyaml(monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)
    meta = mlflow_importer.parse_meta("run_id: abc\nrun_name: 'x y'\nstart_time: 12\ntags:\n- a\n")
    assert meta == {"run_id": "abc", "run_name": "x y", "start_time": 12, "tags": None}


def test_sniffing_reads_content_not_names(tmp_path):
    (tmp_path / "a.csv").write_text("step: 1 loss: 2.0\nstep: 2 loss: 1.5\nstep: 3 loss: 1.2\n")
    assert detect_kind(tmp_path / "a.csv") == "text"
    (tmp_path / "b.txt").write_text("epoch,step,train_loss,val_loss\n0,0,1.0,\n0,1,0.9,\n0,1,,1.2\n")
    assert detect_kind(tmp_path / "b.txt") == "table"
    (tmp_path / "c.log").write_text('{"iteration": 1, "loss": 2}\n{"iteration": 2, "loss": 1}\n')
    assert detect_kind(tmp_path / "c.log") == "table"
    pytest.importorskip("tensorboard")
    tb = logmaker.tfevents(tmp_path)
    renamed = tmp_path / "renamed.bin"
    renamed.write_bytes(tb.read_bytes())
    assert detect_kind(renamed) == "tensorboard"


def test_an_ambiguous_file_is_refused_with_what_each_reader_found(tmp_path):
    path = tmp_path / "both.log"
    lines = [f"{{'loss': {1 / (i + 1)}, 'learning_rate': 0.1}}\nstep {i}: loss {1 / (i + 1)}" for i in range(10)]
    path.write_text("\n".join(lines) + "\n")
    s = sniff(path)
    assert s.kind is None and "ambiguous" in s.reason and "hf would read 10 lines" in s.reason
    assert "text would read 10 lines" in s.reason
    res = CliRunner().invoke(main, ["analyze", str(path)])
    assert res.exit_code == 2 and "ambiguous" in res.output and res.output.count("\n") == 1


def test_tensorboard_corrupt_record_is_a_warning_with_its_offset(tmp_path):
    pytest.importorskip("tensorboard")
    path, offset = logmaker.tfevents(tmp_path, corrupt=True)
    imp = read("tensorboard", path)
    assert any(f"byte offset {offset}" in w and "CRC32C" in w for w in imp.warnings)
    assert len(imp.train["loss"].steps) == logmaker.N - 1  # the corrupt value is dropped, not kept wrong
    clean = read("tensorboard", logmaker.tfevents(tmp_path / "ok"))
    assert not any("CRC32C" in w for w in clean.warnings)
    assert "nonfinite_loss" in codes(analyze(str(path)))


def test_crc32c_fallback_matches_the_c_extension():
    from runlens.io.importers import _crc32c

    for data in (b"", b"123456789", bytes(range(256)) * 3):
        assert _crc32c._crc_py(data) == (_crc32c.crc32c(data))
    assert _crc32c._crc_py(b"123456789") == 0xE3069283  # the published check value


def test_crc32c_of_rows_matches_one_record_at_a_time():
    import numpy as np

    from runlens.io.importers import _crc32c

    rng = np.random.default_rng(0)
    for length in (0, 1, 8, 37, 300):
        rows = rng.integers(0, 256, size=(50, length), dtype=np.uint8)
        got = _crc32c.masked_rows(rows)
        assert got.tolist() == [_crc32c.masked(r.tobytes()) for r in rows]


def _wandb_file(path, n=60, nan_at=50, cut=False):
    """An offline-run file as wandb writes it: the header, LevelDB-log blocks, Record protos."""
    import json as _json
    import struct
    import zlib

    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    recs = []
    run = pb.Record()
    run.run.display_name = "offline-demo"
    recs.append(run.SerializeToString())
    for i in range(n):
        r = pb.Record()
        r.history.step.num = i
        for key, v in (("train/loss", math.nan if i >= nan_at else 1 / (i + 1)), ("lr", 0.1)):
            item = r.history.item.add()
            item.key = key
            item.value_json = _json.dumps(v)
        recs.append(r.SerializeToString())
    out = bytearray(b":W&B\xe1\xbe\x00")
    for data in recs:
        left = 32768 - len(out) % 32768
        if left < 7 + len(data):  # keep the fixture simple: pad to the next block
            out += b"\x00" * left
        out += struct.pack("<IHB", zlib.crc32(b"\x01" + data) & 0xFFFFFFFF, len(data), 1) + data
    path.write_bytes(bytes(out[:-5]) if cut else bytes(out))
    return path


def test_wandb_offline_file_is_read_with_its_checksums(tmp_path):
    path = _wandb_file(tmp_path / "run-x.wandb")
    assert detect_kind(path) == "wandb" and detect_kind(tmp_path) == "wandb"
    imp = read("wandb", tmp_path)
    assert imp.name == "offline-demo" and len(imp.train["loss"].steps) == 60
    assert "nonfinite_loss" in codes(analyze(str(path)))
    cut = read("wandb", _wandb_file(tmp_path / "cut" / "run-y.wandb" if (tmp_path / "cut").mkdir() is None
                                    else None, cut=True))
    assert len(cut.train["loss"].steps) == 59 and any("fails its checksum" in w for w in cut.warnings)


def test_a_named_loss_is_the_only_one_in_that_role_whatever_the_metric_order(tmp_path):
    # MLflow lists metrics by path: train/loss (the alias table's loss) comes after smoothed_loss.
    root = logmaker.mlflow_store(tmp_path)
    run = root / "0" / "bbb222"
    (run / "metrics" / "smoothed_loss").write_text(
        "\n".join(f"{1700000000000 + i * 1000} 0.5 {i}" for i in range(20)) + "\n")
    imp = read("mlflow", run, loss="smoothed_loss")
    assert set(imp.train["loss"].values) == {0.5}
    assert "train_loss_default" in imp.train  # the table's own loss steps aside, under its own name
