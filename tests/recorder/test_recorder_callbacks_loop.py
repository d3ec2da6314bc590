"""The Lightning callback: a second fit into the same folder is a new run unless it resumes a checkpoint;
the trainer's scheduler and the validation's model mode reach the loop columns."""

from __future__ import annotations

import pytest
from recorder_testutil import meta, read_table

torch = pytest.importorskip("torch")
L = pytest.importorskip("lightning")

from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from recorders.lightning import RunlensCallback  # noqa: E402


class Scheduled(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.05)
        # stepped per batch: the column must count the trainer's calls
        return {"optimizer": opt, "lr_scheduler": {"scheduler": torch.optim.lr_scheduler.StepLR(opt, 4),
                                                   "interval": "step"}}


def _loader() -> DataLoader:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 4, generator=g)
    return DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)


def _fit(tmp_path, cb, **kw) -> None:
    opts = dict(max_epochs=2, enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False,
                logger=False, num_sanity_val_steps=0)
    opts.update(kw)
    L.Trainer(callbacks=[cb], default_root_dir=str(tmp_path), **opts).fit(Scheduled(), _loader(), _loader())


def test_a_second_fit_is_a_new_run_with_the_loop_columns(tmp_path):
    run = tmp_path / "run"
    _fit(tmp_path, RunlensCallback(run, handle_signals=False))
    second = RunlensCallback(run, handle_signals=False)
    _fit(tmp_path, second)
    assert (tmp_path / "run-2" / "run.json").exists()
    for folder in (run, tmp_path / "run-2"):
        assert len(meta(folder)["attempts"]) == 1
        s = read_table(folder, "scalars").sort_by("step").to_pydict()
        assert s["step"] == list(range(8))
        assert s["optimizer_steps"] == list(range(1, 9))
        assert s["scheduler_steps"] == list(range(1, 9))
        e = read_table(folder, "evals").to_pydict()
        assert e["model_training"] == [0, 0]  # Lightning validates in eval mode
        assert meta(folder)["params_outside_optimizer"] == []
        assert meta(folder)["params_without_grad"] == []


def test_resume_true_appends_without_a_checkpoint(tmp_path):
    run = tmp_path / "run"
    _fit(tmp_path, RunlensCallback(run, handle_signals=False))
    _fit(tmp_path, RunlensCallback(run, handle_signals=False, resume=True), max_epochs=1)
    assert not (tmp_path / "run-2").exists()
    assert len(meta(run)["attempts"]) == 2
