"""recorders.lightning.RunlensCallback with a real lightning.Trainer, and the lightning-csv importer
on what Lightning's own CSVLogger wrote in the same fit."""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning")

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import runlens  # noqa: E402
from recorders.lightning import RunlensCallback  # noqa: E402
from runlens.io.importers import detect_kind, import_run  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


class Tiny(L.LightningModule):
    def __init__(self, lr: float = 0.05, fail_at: int | None = None, interrupt_at: int | None = None):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):
        if self.hparams.fail_at is not None and self.global_step == self.hparams.fail_at:
            raise RuntimeError("shape mismatch: boom")
        if self.hparams.interrupt_at is not None and self.global_step == self.hparams.interrupt_at:
            raise KeyboardInterrupt
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def loader(n: int = 64) -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    return DataLoader(TensorDataset(x, 3 * x.sum(1, keepdim=True)), batch_size=8)


def trainer(tmp_path: Path, cb: RunlensCallback, **kw) -> L.Trainer:
    opts = dict(max_epochs=3, enable_progress_bar=False, enable_checkpointing=False,
                enable_model_summary=False, logger=False, log_every_n_steps=1)
    opts.update(kw)
    return L.Trainer(callbacks=[cb], default_root_dir=str(tmp_path), **opts)


def table(run: Path, name: str):
    parts = sorted((run / name).glob("r*.parquet"))
    return pq.read_table(parts) if parts else None


def meta(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def test_fit_records_pre_clip_gradients_validation_and_csvlogger_imports_alike(tmp_path, check_runlog):
    L.seed_everything(0)
    run = tmp_path / "run"
    logger = L.pytorch.loggers.CSVLogger(str(tmp_path / "logs"), name="tiny")
    t = trainer(tmp_path, RunlensCallback(run), gradient_clip_val=0.01, accumulate_grad_batches=2,
                logger=logger)
    t.fit(Tiny(), loader(), loader(16))
    check_runlog(run)
    m = meta(run)
    assert m["status"] == "finished" and m["seed"] == 0
    assert m["config"]["trainer"]["gradient_clip_val"] == 0.01 and m["config"]["lr"] == 0.05
    s = table(run, "scalars")
    assert s.column("step").to_pylist() == list(range(t.global_step)) == list(range(12))
    assert s.column("epoch").to_pylist() == [0] * 4 + [1] * 4 + [2] * 4
    # Clipping to 0.01 happened after the Recorder read the gradients: the norms are far above it.
    assert min(s.column("grad_norm").to_pylist()) > 1.0
    assert s.column("lr").to_pylist() == [0.05] * 12
    layers = table(run, "layers")
    assert set(layers.column("layer").to_pylist()) == {n for n, _ in Tiny().named_parameters()}
    updates = [u for u in layers.column("update_norm").to_pylist()]
    assert max(updates) <= 0.05 * 0.01 * 1.01  # lr x clipped norm: the optimizer saw clipped grads
    e = table(run, "evals")
    assert e.column("step").to_pylist() == [3, 7, 11]  # after the last step of each epoch

    metrics = next((tmp_path / "logs").rglob("metrics.csv"))
    assert detect_kind(metrics.parent) == "table"  # the structure-first reader (issue 19)
    imported = import_run("lightning-csv", metrics.parent, tmp_path / "imported")
    check_runlog(imported)
    ie = table(imported, "evals")
    assert ie.column("val_loss").to_pylist() == pytest.approx(e.column("val_loss").to_pylist(), rel=1e-6)
    im = meta(imported)
    assert im["config"]["import_roles"]["loss"]["columns"] == ["train_loss"]
    assert im["config"]["hparams"]["lr"] == 0.05
    # Lightning's CSV steps are 0-based optimizer steps too, so both runs line up; the logged
    # per-batch loss is the last micro-batch's, the callback's is the step's mean.
    assert table(imported, "scalars").column("step").to_pylist() == list(range(12))
    assert ie.column("step").to_pylist() == e.column("step").to_pylist()


class _Unscaled(L.Callback):
    """The reference, read by hand where Lightning has unscaled the gradients and not yet clipped them."""

    def __init__(self, scaler):
        self.scaler, self.scales, self.norms = scaler, [], []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.scales.append(self.scaler.get_scale())
        self.norms.append({n: p.grad.double().norm().item() for n, p in pl_module.named_parameters()})


def test_16_mixed_records_unscaled_pre_clip_norms_and_skipped_steps(tmp_path, check_runlog):
    """Lightning's fp16 plugin with a CPU GradScaler (on CPU "16-mixed" makes none), a scale so
    high that the first steps overflow, accumulation and clipping."""
    from lightning.pytorch.plugins.precision import MixedPrecision

    L.seed_everything(0)
    run = tmp_path / "run"
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 40, backoff_factor=2.0 ** -8, growth_interval=1000)
    ref = _Unscaled(scaler)
    t = trainer(tmp_path, RunlensCallback(run), gradient_clip_val=0.01, accumulate_grad_batches=2,
                plugins=[MixedPrecision("16-mixed", "cpu", scaler=scaler)])
    t.callbacks.append(ref)
    t.fit(Tiny(), loader(), loader(16))
    check_runlog(run)
    s = table(run, "scalars").to_pydict()
    skipped = [int(not all(math.isfinite(v) for v in n.values())) for n in ref.norms]
    assert 1 <= sum(skipped) < len(skipped)
    assert s["loss_scale"] == ref.scales and s["step_skipped"] == skipped
    rows = {(r["step"], r["layer"]): r["grad_norm"] for r in table(run, "layers").to_pylist()}
    for step, norms in enumerate(ref.norms):
        if skipped[step]:
            continue
        assert s["grad_norm"][step] == pytest.approx(math.sqrt(sum(v * v for v in norms.values())), rel=1e-5)
        for name, value in norms.items():
            assert rows[(step, name)] == pytest.approx(value, rel=1e-5)
    events = table(run, "events")
    assert events is None or "nonfinite_grad" not in events.column("kind").to_pylist()


def test_exception_in_fit_ends_the_run_crashed(tmp_path, check_runlog):
    run = tmp_path / "run"
    with pytest.raises(RuntimeError, match="boom"):
        trainer(tmp_path, RunlensCallback(run)).fit(Tiny(fail_at=5), loader())
    check_runlog(run)
    m = meta(run)
    assert m["status"] == "crashed"
    assert m["error"]["type"] == "RuntimeError" and m["error"]["step"] == 5
    assert table(run, "scalars").column("step").to_pylist() == list(range(5))
    kinds = table(run, "events").column("kind").to_pylist()
    assert kinds.count("exception") == 1
    d = runlens.analyze(run).to_dict()
    assert d["status"] == "crashed" and any(f["code"].startswith("crash_") for f in d["findings"])


def test_interrupted_fit_is_recorded(tmp_path, check_runlog):
    run = tmp_path / "run"
    previous = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit):  # Lightning turns Ctrl-C into a graceful exit(1)
            trainer(tmp_path, RunlensCallback(run)).fit(Tiny(interrupt_at=3), loader())
    finally:
        signal.signal(signal.SIGINT, previous)
    check_runlog(run)
    m = meta(run)
    assert m["status"] == "crashed" and m["error"]["type"] == "KeyboardInterrupt"
    assert table(run, "scalars").num_rows == 3


def test_diverging_fit_is_labeled_diverged(tmp_path):
    L.seed_everything(0)
    run = tmp_path / "run"
    trainer(tmp_path, RunlensCallback(run, val_loss_key="val_loss"), max_epochs=6).fit(
        Tiny(lr=5.0), loader(), loader(16))
    loss = table(run, "scalars").column("loss").to_pylist()
    assert loss[-1] != loss[-1]  # NaN reached and recorded
    d = runlens.analyze(run).to_dict()
    assert d["curve"] == "diverged"
    assert "nonfinite_loss" in {f["code"] for f in d["findings"]}


def test_resumed_fit_appends_to_the_same_run(tmp_path, check_runlog):
    run = tmp_path / "run"
    first = trainer(tmp_path, RunlensCallback(run), max_epochs=1, enable_checkpointing=True)
    first.fit(Tiny(), loader())
    ckpt = next(tmp_path.rglob("*.ckpt"))
    trainer(tmp_path, RunlensCallback(run), max_epochs=2).fit(Tiny(), loader(), ckpt_path=str(ckpt))
    check_runlog(run)
    m = meta(run)
    assert m["status"] == "finished"
    assert [a["first_step"] for a in m["attempts"]] == [0, 8]
    assert sorted(table(run, "scalars").column("step").to_pylist()) == list(range(16))
