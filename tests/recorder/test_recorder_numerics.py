"""Gradient, weight and update norms are right from 1e-30 to 1e30 in every floating dtype.

A float32 sum of squares underflows below ~1e-19 and overflows above ~1e19 (issue 21.3: gradients of
1e-22 were recorded with grad_norm 0, so the engine saw a dead layer). Every recorded norm is checked
against a float64 reference computed here from the same tensors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from recorder_testutil import read_table

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from recorders import _torch_norms as tn  # noqa: E402
from recorders.torch import Recorder  # noqa: E402

MAGNITUDES = (1e-30, 1e-22, 1e-8, 1.0, 1e8, 1e22, 1e30)
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# float32 sums of many terms carry ~1e-4 relative error; half precisions are compared on their own values.
RTOL = 2e-3


def _in_range(dtype: torch.dtype, magnitude: float) -> bool:
    info = torch.finfo(dtype)
    # Values 2x the magnitude must stay normal and finite, and their norms under float64's max.
    return info.tiny <= magnitude and 4 * magnitude < info.max


CASES = [(d, m) for d in DTYPES for m in MAGNITUDES if _in_range(d, m)]


def _values(shape: tuple[int, ...], magnitude: float, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, shape, generator=g) * 2 - 1
    spread = 1.0 + torch.rand(shape, generator=g, dtype=torch.float64)  # |x| in [m, 2m)
    return (signs * spread * magnitude).to(dtype)


def _ref(t: torch.Tensor) -> float:
    return float(t.double().norm())


@pytest.mark.parametrize(("dtype", "magnitude"), CASES, ids=lambda v: str(v))
def test_norm_functions_match_a_float64_reference(dtype, magnitude):
    small = [_values((32, 32), magnitude, dtype, i) for i in range(3)]
    big = [_values((300, 300), magnitude, dtype, 10 + i) for i in range(2)]
    tensors = small + big
    refs = np.array([_ref(t) for t in tensors])
    np.testing.assert_allclose(tn.l2_norms(tensors).numpy(), refs, rtol=RTOL)
    norms, _ = tn.norms_and_maxes(big, True)
    np.testing.assert_allclose(norms.numpy(), refs[3:], rtol=RTOL)
    layout = tn.Layout([t.shape for t in tensors], 1 << 16, 1024, torch.device("cpu"))
    np.testing.assert_allclose(layout.l2(tensors).numpy(), refs, rtol=RTOL)
    stats, _, _ = layout.grad_stats(tensors, True)
    np.testing.assert_allclose(stats.numpy(), refs, rtol=RTOL)


class _Two(nn.Module):
    """A stacked-by-shape small parameter and a large one (sampled update path)."""

    def __init__(self, dtype: torch.dtype, magnitude: float) -> None:
        super().__init__()
        self.small = nn.Parameter(_values((32, 32), magnitude, dtype, 1))
        self.big = nn.Parameter(_values((300, 300), magnitude, dtype, 2))

    def forward(self) -> torch.Tensor:
        return self.small.sum() + self.big.sum()


@pytest.mark.parametrize(("dtype", "magnitude"), CASES, ids=lambda v: str(v))
def test_recorded_norms_match_a_float64_reference(tmp_path, dtype, magnitude):
    model = _Two(dtype, magnitude)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    want = {"grad": [], "weight": [], "update": []}
    with Recorder(tmp_path / "run", model, opt, handle_signals=False, announce=False) as rec:
        for step in range(3):
            grads = [_values(tuple(p.shape), magnitude, dtype, 100 + 10 * step + i)
                     for i, p in enumerate(model.parameters())]
            for p, g in zip(model.parameters(), grads, strict=True):
                p.grad = g  # set by hand: the magnitude is exactly the one under test
            before = [p.detach().clone() for p in model.parameters()]
            opt.step()
            rec.step(1.0)
            want["grad"].append([_ref(g) for g in grads])
            want["weight"].append([_ref(p.detach()) for p in model.parameters()])
            want["update"].append([_ref(p.detach().double() - b.double())
                                   for p, b in zip(model.parameters(), before, strict=True)])
    scalars = read_table(tmp_path / "run", "scalars").sort_by("step")
    expected_total = [math.sqrt(sum(x * x for x in row)) for row in want["grad"]]
    np.testing.assert_allclose(scalars.column("grad_norm").to_numpy(), expected_total, rtol=RTOL)
    layers = read_table(tmp_path / "run", "layers").to_pylist()
    position = {"small": 0, "big": 1}
    for col, key, rtol in (("grad_norm", "grad", RTOL), ("weight_norm", "weight", RTOL),
                           ("update_norm", "update", 0.05)):  # big's update norm is a 4,096-element sample
        got = [row[col] for row in layers]
        ref = [want[key][row["step"]][position[str(row["layer"])]] for row in layers]
        np.testing.assert_allclose(got, ref, rtol=rtol, err_msg=col)
    assert len(layers) == 6 and all(row["grad_norm"] > 0 for row in layers)
