"""The TensorBoard importer on event files written by TensorBoard's and PyTorch's own writers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from torch.utils.tensorboard import SummaryWriter  # noqa: E402

import runlens  # noqa: E402
from runlens.io.importers import detect_kind, import_run  # noqa: E402
from runlens.io.importers._tfrecord import read_events  # noqa: E402
from runlens.io.importers.tensorboard import read  # noqa: E402

torch.set_num_threads(1)


def table(run: Path, name: str):
    parts = sorted((run / name).glob("r*.parquet"))
    return pq.read_table(parts) if parts else None


def event_file(folder: Path) -> Path:
    return next(folder.rglob("*tfevents*"))


def write_diverging(logdir: Path, steps: int = 60) -> None:
    w = SummaryWriter(str(logdir))
    for s in range(steps):
        loss = 2.0 * 0.95 ** s if s < 40 else (10.0 ** (s - 38) if s < 50 else float("nan"))
        w.add_scalar("train/loss", loss, s)
        w.add_scalar("lr", 0.5, s)
        if s % 10 == 9:
            w.add_scalar("val/loss", loss * 1.1, s)
    w.close()


def test_diverged_tensorboard_run_is_labeled_diverged(tmp_path, check_runlog):
    write_diverging(tmp_path / "tb")
    run = import_run("tensorboard", tmp_path / "tb", tmp_path / "run")
    check_runlog(run)
    s = table(run, "scalars")
    assert s.column("step").to_pylist() == list(range(60))
    assert all(math.isnan(v) for v in s.column("loss").to_pylist()[50:])  # NaN kept as data
    assert table(run, "evals").num_rows == 6
    cfg = json.loads((run / "run.json").read_text())["config"]
    assert cfg["import_tags"] == {"loss": "train/loss", "val_loss": "val/loss", "lr": "lr"}
    assert cfg["imported_from"]["kind"] == "tensorboard"
    d = runlens.analyze(run).to_dict()
    assert d["curve"] == "diverged"
    assert "nonfinite_loss" in {f["code"] for f in d["findings"]}


def test_every_value_matches_event_accumulator(tmp_path):
    """Mixed content (old- and new-style scalars, histograms, text) read the same as TensorBoard reads it."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    rng = np.random.default_rng(0)
    w = SummaryWriter(str(tmp_path / "tb"))
    for s in range(400):
        w.add_scalar("loss", float(rng.normal()), s)
        w.add_scalar("a/much/longer/tag/name/for/the/metric", float(rng.normal()) * 1e6, s * 1000)
        w.add_scalar("tensor_style", float(rng.normal()), s, new_style=True)
        if s % 37 == 0:
            w.add_histogram("fc.weight", torch.randn(50), s)
            w.add_text("note", f"step {s}", s)
    w.close()
    ea = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    imp = read(tmp_path / "tb")
    theirs = {t: ea.Scalars(t) for t in ea.Tags()["scalars"]}
    theirs["tensor_style"] = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
                              for e in ea.Tensors("tensor_style")]
    series = {"loss": imp.train["loss"], "a/much/longer/tag/name/for/the/metric":
              imp.train["a_much_longer_tag_name_for_the_metric"], "tensor_style": imp.train["tensor_style"]}
    for tag, events in theirs.items():
        steps = [e[0] if isinstance(e, tuple) else e.step for e in events]
        values = [e[1] if isinstance(e, tuple) else e.value for e in events]
        assert series[tag].steps.tolist() == steps, tag
        assert np.array_equal(series[tag].values, np.asarray(values, dtype=np.float32).astype(np.float64)), tag
    assert any("'tensor/text'" in w for w in imp.warnings)


def test_fast_framing_agrees_with_plain_framing(tmp_path):
    """The vectorised reader decodes exactly the records a record-by-record reader sees."""
    from tensorboard.compat.proto import event_pb2

    w = SummaryWriter(str(tmp_path / "tb"))
    for s in range(3000):
        w.add_scalar(f"m{s % 7}", s * 0.5, s)
        if s % 500 == 0:
            w.add_histogram("big", torch.randn(20000), s)  # records longer than the first window
    w.close()
    path = event_file(tmp_path / "tb")
    plain, data, pos = [], path.read_bytes(), 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 8], "little")
        ev = event_pb2.Event.FromString(data[pos + 12:pos + 12 + n])
        plain += [(v.tag, ev.step, v.simple_value) for v in ev.summary.value if v.HasField("simple_value")]
        pos += n + 16
    others: list[bytes] = []
    fast, notes = read_events(path, others.append)
    got = [(tag, int(st), float(v)) for tag, (steps, _, vals) in fast.by_tag().items()
           for st, v in zip(steps, vals, strict=True)]
    assert sorted(got) == sorted(plain) and not notes
    assert len(others) == 1 + 6  # file_version + the histograms go to the protobuf path


def test_truncated_file_keeps_whole_records_and_says_so(tmp_path):
    write_diverging(tmp_path / "tb", steps=30)
    path = event_file(tmp_path / "tb")
    path.write_bytes(path.read_bytes()[:-7])
    imp = read(path)
    assert len(imp.train["loss"].steps) == 30
    assert imp.evals["val_loss"].steps.tolist() == [9, 19]  # the last record, val/loss at 29, was cut
    assert any("truncated" in w for w in imp.warnings)


def test_histograms_give_exact_layer_norms_only_for_parameters(tmp_path, check_runlog):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = SummaryWriter(str(tmp_path / "tb"))
    expected = {}
    for s in range(5):
        opt.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        w.add_scalar("loss", loss.item(), s)
        for name, p in model.named_parameters():
            w.add_histogram(name, p, s)
            w.add_histogram(f"{name}.grad", p.grad, s)
            expected[(s, name)] = (p.grad.norm().item(), p.norm().item())
        w.add_histogram("activations/out", torch.randn(10), s)
        opt.step()
    w.close()
    run = import_run("tensorboard", tmp_path / "tb", tmp_path / "run")
    check_runlog(run)
    layers = table(run, "layers").to_pylist()
    assert len(layers) == 5 * 4
    for row in layers:
        g, wn = expected[(row["step"], row["layer"])]
        assert row["grad_norm"] == pytest.approx(g, rel=1e-5)
        assert row["weight_norm"] == pytest.approx(wn, rel=1e-5)
    meta = json.loads((run / "run.json").read_text())
    assert [x["name"] for x in meta["layers"]] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert any("activations/out" in x for x in meta["config"]["import_warnings"])


def test_keras_style_subfolders_and_tag_flags(tmp_path):
    for sub, base in (("train", 1.0), ("validation", 1.2)):
        w = SummaryWriter(str(tmp_path / "logs" / sub))
        for epoch in range(10):
            w.add_scalar("epoch_loss", base / (epoch + 1), epoch)
        w.close()
    assert detect_kind(tmp_path / "logs") == "tensorboard"
    imp = read(tmp_path / "logs")
    assert imp.config["import_tags"] == {"loss": "train/epoch_loss", "val_loss": "validation/epoch_loss"}
    imp = read(tmp_path / "logs", loss_tag="validation/epoch_loss", val_loss_tag="train/epoch_loss")
    assert imp.train["loss"].values[0] == pytest.approx(1.2)
    with pytest.raises(runlens.ImportFailedError, match="no loss tag 'nope'"):
        read(tmp_path / "logs", loss_tag="nope")


def test_a_keras_run_folder_is_one_run_also_inside_a_folder_of_runs(tmp_path):
    from runlens.io.discover import discover_runs

    for run in ("mod1", "mod2"):
        for sub, base in (("train", 1.0), ("validation", 1.2)):
            w = SummaryWriter(str(tmp_path / "logs" / run / sub))
            for epoch in range(25):
                w.add_scalar("epoch_loss", base / (epoch + 1) + (0.02 * epoch if sub == "validation" else 0), epoch)
            w.close()
    found = discover_runs([tmp_path / "logs"])
    assert [Path(p).name for p in found] == ["mod1", "mod2"]
    d = runlens.analyze(str(tmp_path / "logs" / "mod1"))
    assert "no_validation" not in [f.code for f in d.findings]
    # Only a train/ folder (no validation beside it): that folder is the run, as before.
    w = SummaryWriter(str(tmp_path / "solo" / "train"))
    w.add_scalar("epoch_loss", 1.0, 0)
    w.close()
    assert [Path(p).name for p in discover_runs([tmp_path / "solo"])] == ["train"]
