"""A loop that prints ``loss`` rather than ``loss.item()`` shows the scalar inside its framework's
wrapper: PyTorch's ``tensor([2.3026], device='cuda:0')``, JAX's ``Array(2.30, dtype=float32)``, NumPy 2's
``np.float32(2.3)``, TensorFlow's ``tf.Tensor(...)`` and eager ``<tf.Tensor: ... numpy=2.3>``,
hasktorch's ``Tensor Float []  0.34``, a one-number list ``loss: [2.30]``. Each is read as its number
(round 18; a hasktorch paste of the first thread set was refused). Silent twins: a tensor of several
numbers is no scalar, a bracketed integer after a name stays a counter (``Epoch: [0]``)."""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.io.importers import text
from runlens.io.importers._clean import unwrap

WRAPPERS = {
    "torch": "Epoch {e}, loss: tensor({v:.4f}, grad_fn=<NllLossBackward0>)",
    "torch_list_device": "epoch: {e} loss: tensor([{v:.4f}], device='cuda:0')",
    "jax": "step {e} loss=Array({v:.4f}, dtype=float32)",
    "jax_old": "step {e} loss=DeviceArray({v:.4f}, dtype=float32)",
    "numpy2": "epoch {e} loss np.float32({v:.4f})",
    "tf": "Epoch {e} loss tf.Tensor({v:.6f}, shape=(), dtype=float32)",
    "tf_eager": "Epoch {e} loss: <tf.Tensor: shape=(), dtype=float32, numpy={v:.7f}>",
    "hasktorch": "Iteration: {e}00 | Loss: Tensor Float []  {v:.4f}",
    "one_list": "epoch {e} loss: [{v:.4f}]",
}


def _loss(e: int) -> float:
    return 2.3 * math.exp(-0.2 * e) + 0.1


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_a_wrapped_scalar_is_read_as_its_number(tmp_path, name):
    path = tmp_path / f"{name}.log"
    path.write_text("".join(WRAPPERS[name].format(e=e, v=_loss(e)) + "\n" for e in range(1, 13)))
    diag = analyze(path)
    assert diag.curve.label == "healthy"
    assert diag.key_numbers["final_loss"] == pytest.approx(_loss(12), rel=1e-3)


def test_a_wrapped_nan_is_a_nonfinite_loss(tmp_path):
    lines = [f"step {s} loss: tensor({_loss(s):.4f}, device='cuda:0', grad_fn=<DivBackward0>)" for s in range(1, 9)]
    lines.append("step 9 loss: tensor(nan, device='cuda:0', grad_fn=<DivBackward0>)")
    path = tmp_path / "nan.log"
    path.write_text("\n".join(lines) + "\n")
    assert "nonfinite_loss" in {f.code for f in analyze(path).findings}


@pytest.mark.parametrize("line", [
    "weights = tensor([0.1000, 0.2000, 0.3000])",    # several numbers: no scalar
    "Epoch: [0]  [ 10/500]  loss: 1.2",              # torchvision's epoch counter
    "shape=(2, 3) a = array([[1, 2, 3], [4, 5, 6]])",
])
def test_silent_twin_what_is_no_wrapped_scalar_stays_as_printed(line):
    assert unwrap(line) == line


def test_silent_twin_plain_lines_read_as_before(tmp_path):
    path = tmp_path / "plain.log"
    path.write_text("".join(f"Epoch: [{e}]  [ 50/50]  eta: 0:00:00  lr: 0.001  loss: {_loss(e):.4f}\n"
                            for e in range(12)))
    imp = text.read(path)
    assert len(imp.train["loss"].values) == 12
