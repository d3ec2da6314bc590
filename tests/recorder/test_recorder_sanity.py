"""The single-batch overfit check passes a learnable model and fails a broken one."""

from __future__ import annotations

import pytest
import torch
from recorder_testutil import meta, read_table
from torch import nn

from recorders.sanity import assert_can_overfit_one_batch, overfit_one_batch

torch.set_num_threads(1)


def batch():
    gen = torch.Generator().manual_seed(0)
    return torch.randn(8, 10, generator=gen), torch.randint(0, 3, (8,), generator=gen)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))


def test_a_learnable_model_overfits_and_the_run_is_recorded(tmp_path, check_runlog):
    net = model()
    before = [p.detach().clone() for p in net.parameters()]
    state = torch.get_rng_state()
    result = assert_can_overfit_one_batch(net, batch(), nn.CrossEntropyLoss(), steps=150, lr=1e-2,
                                          path=tmp_path / "ok")
    assert result and result.passed and result.best_loss <= result.target
    assert "can overfit one batch" in str(result)
    check_runlog(tmp_path / "ok")
    assert meta(tmp_path / "ok")["status"] == "finished"
    assert len(read_table(tmp_path / "ok", "scalars")) == 150
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))  # caller's model untouched
    assert torch.equal(torch.get_rng_state(), state)


class Detached(nn.Module):
    """A classic bug: the output is cut from the graph, only a bias can learn."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(10, 3)
        self.bias = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return self.body(x).detach() + self.bias


def test_a_broken_model_fails_with_the_numbers(tmp_path, check_runlog):
    with pytest.raises(AssertionError, match=r"could NOT overfit one batch: loss .* target <="):
        assert_can_overfit_one_batch(Detached(), batch(), nn.CrossEntropyLoss(), steps=100, lr=1e-2,
                                     path=tmp_path / "bad")
    check_runlog(tmp_path / "bad")
    result = overfit_one_batch(Detached(), batch(), nn.CrossEntropyLoss(), steps=20, path=tmp_path / "b2")
    assert not result and result.final_loss > result.target


def test_steps_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="'steps' parameter of overfit_one_batch must be an int >= 1"):
        overfit_one_batch(model(), batch(), nn.CrossEntropyLoss(), steps=0, path=tmp_path)
