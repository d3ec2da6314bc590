"""``ce_grad_scale`` and ``backward_passes`` (recorders/_torch_outgrad.py): the factor a softmax
cross-entropy was multiplied by, bounded from below off the logits' gradient, against the factor the
loop used, measured here in torch."""

from __future__ import annotations

import numpy as np
import pytest
from recorder_testutil import read_table

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from recorders._torch_outgrad import READINGS, OutputGradWatch, settle  # noqa: E402
from recorders.torch import Recorder  # noqa: E402


class Net(nn.Module):
    def __init__(self, out: str = "tensor") -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 5))
        self.out = out

    def forward(self, x):
        z = self.body(x)
        if self.out == "softmax":  # the model ends in softmax: probabilities reach the loss
            return torch.softmax(z, -1)
        if self.out == "sigmoid":  # in [0, 1], rows not summing to 1
            return torch.sigmoid(z)
        if self.out == "dict":
            return {"logits": z, "hidden": x}
        return (z, x) if self.out == "tuple" else z


def _train(path, *, k: int, divide: bool, reduction: str = "mean", out: str = "tensor", loss: str = "ce",
           steps: int = 6, layers_every: int = 1):
    torch.manual_seed(0)
    model = Net(out)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    true = []
    with Recorder(path, model, opt, layers_every=layers_every, handle_signals=False, announce=False) as rec:
        for _ in range(steps):
            opt.zero_grad()
            for _ in range(k):
                x, y = torch.randn(8, 6), torch.randint(0, 5, (8,))
                z = model(x)
                z = z if isinstance(z, torch.Tensor) else (z["logits"] if isinstance(z, dict) else z[0])
                if loss == "ce":
                    raw = nn.functional.cross_entropy(z, y, reduction=reduction)
                elif loss == "softmax_ce":  # a softmax between the model and the loss
                    raw = nn.functional.cross_entropy(torch.softmax(z, -1), y, reduction=reduction)
                else:
                    raw = nn.functional.mse_loss(z, nn.functional.one_hot(y, 5).float())
                factor = (1 / k if divide else 1.0) * (8 if reduction == "sum" else 1)
                true.append(factor)
                (raw / k if divide else raw).backward()
                model.eval()
                with torch.no_grad():  # a validation forward between micro-batches is not read
                    model(torch.randn(4, 6))
                model.train()
            opt.step()
            rec.step(raw)
    return read_table(rec.run_dir, "scalars").sort_by("step").to_pydict(), true


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("divide", [True, False])
def test_the_scale_is_a_lower_bound_on_the_factor_the_loss_was_multiplied_by(tmp_path, k, divide):
    s, true = _train(tmp_path / "run", k=k, divide=divide)
    factor = true[0]
    assert all(v is not None for v in s["ce_grad_scale"])
    # (p - y) has an entry of size 1 - p_y <= 1: the bound never passes the factor, and at init
    # (p_y near 1/5) it comes within a factor of two of it.
    assert all(0.5 * factor <= v <= factor * (1 + 1e-5) for v in s["ce_grad_scale"]), (s["ce_grad_scale"], factor)
    assert s["backward_passes"] == [k] * 6
    if k > 1:  # the engine's rule: above 1/K only when the loss was not divided
        assert (max(s["ce_grad_scale"]) > 1.25 / k) == (not divide)


def test_a_summed_loss_reads_its_batch_size(tmp_path):
    s, _ = _train(tmp_path / "run", k=1, divide=False, reduction="sum")
    assert all(4 <= v <= 8 * (1 + 1e-5) for v in s["ce_grad_scale"])


@pytest.mark.parametrize("out", ["dict", "tuple"])
def test_the_logits_of_a_model_output_are_read(tmp_path, out):
    s, _ = _train(tmp_path / "run", k=2, divide=False, out=out)
    assert all(0.5 <= v <= 1 + 1e-5 for v in s["ce_grad_scale"])


def test_an_output_that_is_not_a_softmax_cross_entropy_writes_nothing(tmp_path):
    # Silent twin: a mean squared error's rows do not sum to zero.
    s, _ = _train(tmp_path / "run", k=2, divide=False, loss="mse")
    assert "ce_grad_scale" not in s and "backward_passes" not in s


def test_only_the_steps_that_record_layers_read_it(tmp_path):
    s, _ = _train(tmp_path / "run", k=2, divide=False, layers_every=3)
    assert [v is not None for v in s["ce_grad_scale"]] == [True, False, False, True, False, False]


def test_a_read_that_fails_never_breaks_the_backward(tmp_path, monkeypatch):
    # The hook runs inside the user's backward: whatever goes wrong in it, training goes on.
    from recorders import _torch_outgrad

    def broken(self, grad):
        raise RuntimeError("boom")

    monkeypatch.setattr(_torch_outgrad.OutputGradWatch, "_read", broken)
    s, _ = _train(tmp_path / "run", k=2, divide=False, steps=3)
    assert s["step"] == [0, 1, 2] and "ce_grad_scale" not in s


def test_an_empty_batch_is_not_read(tmp_path):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with Recorder(tmp_path / "run", model, opt, handle_signals=False, announce=False) as rec:
        for n in (0, 8):
            opt.zero_grad()
            z = model(torch.randn(n, 6))
            (z.sum() if n == 0 else nn.functional.cross_entropy(z, torch.randint(0, 5, (n,)))).backward()
            opt.step()
            rec.step(1.0)
    s = read_table(rec.run_dir, "scalars").sort_by("step").to_pydict()
    assert s["ce_grad_scale"][0] is None and s["ce_grad_scale"][1] is not None


@pytest.mark.parametrize(("out", "unit", "ones"), [("softmax", 1.0, 1.0), ("sigmoid", 1.0, 0.0), ("tensor", 0.0, 0.0)])
def test_probabilities_fed_to_the_loss_read_as_bounded_logits(tmp_path, out, unit, ones):
    s, _ = _train(tmp_path / "run", k=1, divide=False, out=out)
    # Its silent twin ("tensor") feeds raw logits, some of them negative; a sigmoid's rows do not sum to 1.
    assert s["logits_in_unit_interval"] == [unit] * 6 and s["logits_sum_to_one"] == [ones] * 6


@pytest.mark.parametrize("loss", ["softmax_ce", "ce"])
def test_a_softmax_between_model_and_loss_squeezes_the_logits_gradient(tmp_path, loss):
    # d/dz of CE(softmax(softmax(z))) is J^T (q - y), J's entries at most p(1 - p): the bound stays
    # near 1/4 however wrong the model is; a plain cross-entropy's worst row reaches (K-1)/K = 0.8.
    s, _ = _train(tmp_path / "run", k=1, divide=False, loss=loss, steps=12)
    top = max(s["ce_grad_scale"])
    assert (top <= 0.3) == (loss == "softmax_ce"), top
    assert s["logits_in_unit_interval"] == [0.0] * 12 and s["logits_sum_to_one"] == [0.0] * 12


def test_the_readings_wait_for_the_steps_one_transfer(tmp_path):
    # take() hands one device tensor to the step's batched transfer (no host sync, no device work of its
    # own); settle() makes the columns on the host, or drops them when no softmax cross-entropy was seen.
    torch.manual_seed(0)
    model = Net()
    watch = OutputGradWatch(model)
    watch.armed = True
    nn.functional.cross_entropy(model(torch.randn(8, 6)), torch.randint(0, 5, (8,))).backward()
    got = watch.take(1)
    assert isinstance(got[READINGS], torch.Tensor) and got[READINGS].shape == (6,)
    host = {**got, READINGS: got[READINGS].numpy(), "loss": 1.0}
    settled = settle(host)
    assert settled.keys() == {"ce_grad_scale", "logits_in_unit_interval", "logits_sum_to_one", "backward_passes",
                              "loss"}
    assert 0.5 <= settled["ce_grad_scale"] <= 1 + 1e-5
    not_ce = {**host, READINGS: np.array([8.0, 0.1, 0.5, 0.0, 1.0, 0.0])}  # rows summing far from zero
    assert settle(not_ce) == {"loss": 1.0}
