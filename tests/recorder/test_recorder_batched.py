"""The batched statistics (small tensors stacked by shape, large ones chunked and sampled) against references."""

from __future__ import annotations

import math

import pytest
import torch
from recorder_testutil import read_table
from torch import nn

from recorders import _torch_norms as tn
from recorders.torch import Recorder

torch.set_num_threads(1)


class Mixed(nn.Module):
    """Many small tensors of a few shapes (stacked), one large (sampled), one over a chunk (split)."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(16, 600)
        self.big = nn.Linear(600, 600)  # 360,000 elements: two chunks, sampled statistics
        self.mid = nn.Linear(600, 16)
        self.small = nn.ModuleList(nn.Linear(16, 16) for _ in range(6))  # 12 tensors, two shapes
        self.norm = nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.mid(torch.relu(self.big(torch.relu(self.inp(x)))))
        for layer in self.small:
            h = torch.relu(layer(h))
        return self.norm(h)


def _reference(model: nn.Module, before: dict[str, torch.Tensor]) -> dict[str, dict[str, float]]:
    out = {}
    for n, p in model.named_parameters():
        g = p.grad
        out[n] = {"grad_norm": g.norm().item(), "grad_abs_max": g.abs().max().item(),
                  "grad_zero_frac": (g == 0).float().mean().item(), "weight_norm": p.detach().norm().item(),
                  "update_norm": (p.detach() - before[n]).norm().item(), "numel": p.numel()}
    return out


def test_stacked_and_chunked_statistics_match_a_reference(tmp_path, check_runlog):
    torch.manual_seed(0)
    model = Mixed()
    with torch.no_grad():
        model.inp.bias[:300] = -50.0  # dead units: exact zeros in whole rows of big's gradient
        model.small[2].bias[:5] = -50.0
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(32, 16)
    expected = []
    with Recorder(tmp_path / "r", model, opt, handle_signals=False, announce=False) as rec:
        for _ in range(3):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            before = {n: p.detach().clone() for n, p in model.named_parameters()}
            opt.step()
            expected.append(_reference(model, before))
            rec.step(torch.tensor(0.0))
    check_runlog(tmp_path / "r")
    rows = {(r["step"], r["layer"]): r for r in read_table(tmp_path / "r", "layers").to_pylist()}
    assert len(rows) == 3 * len(expected[0])
    for step, ref in enumerate(expected):
        for name, cols in ref.items():
            row, small = rows[(step, name)], cols["numel"] <= 4096
            for col in ("grad_norm", "grad_abs_max", "weight_norm"):
                assert row[col] == pytest.approx(cols[col], rel=1e-5, abs=1e-8), (step, name, col)
            if small:  # taken whole: exact
                assert row["grad_zero_frac"] == pytest.approx(cols["grad_zero_frac"], abs=1e-6), (step, name)
                assert row["update_norm"] == pytest.approx(cols["update_norm"], rel=1e-4, abs=1e-8), (step, name)
            else:  # sampled
                assert row["grad_zero_frac"] == pytest.approx(cols["grad_zero_frac"], abs=0.06), (step, name)
                assert row["update_norm"] == pytest.approx(cols["update_norm"], rel=0.05), (step, name)
    assert 0.4 < expected[0]["big.weight"]["grad_zero_frac"] < 0.9  # the sample had zeros to find


def test_a_nan_in_a_stacked_tensor_is_that_tensors_alone():
    shapes = [torch.Size([4, 4])] * 3 + [torch.Size([300, 300])]
    layout = tn.Layout(shapes, 4096, 1024, torch.device("cpu"))
    grads = [torch.ones(s) for s in shapes]
    grads[1][2, 3] = float("nan")
    grads[3][7, 7] = -9.0
    norms, maxes, zero = layout.grad_stats(grads, abs_max=True)
    assert math.isnan(norms[1]) and math.isnan(maxes[1])
    assert norms[[0, 2]].tolist() == [4.0, 4.0] and maxes[[0, 2]].tolist() == [1.0, 1.0]
    assert maxes[3].item() == 9.0 and zero.tolist() == [0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("shape", [(1024, 256), (64, 32, 3, 3), (100_000,)])
def test_the_sample_is_distinct_elements_over_the_whole_tensor(shape):
    n = math.prod(shape)
    sample = tn.Sample([torch.Size(shape)], 4096, torch.device("cpu"))
    taken = sample.gather([torch.arange(n, dtype=torch.float64).reshape(shape)]).long()
    assert len(taken) == sample.counts[0] == 4096 and len(set(taken.tolist())) == 4096
    assert taken.min() >= 0 and taken.max() < n
    assert taken.max() - taken.min() > 0.9 * n  # spread over the whole tensor, not one corner
    last = shape[-1] if len(shape) > 1 else 1
    if last > 1:
        assert len(set((taken % last).tolist())) == last  # every column, not a few
