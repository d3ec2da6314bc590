"""An optimizer's trace that names its objective ``value`` and nothing else (R's ``optim``, ``nnet`` and
``multinom``: ``iter  10 value 72.296066``) is read with that value as the training loss (round 18, the
fifth thread set's R nnet answer, refused). Silent twin: beside a loss-named column, ``value`` is no loss."""

from __future__ import annotations

from runlens import analyze
from runlens.io.loader import load_run

NNET = [262.654300, 72.296066, 10.287034, 6.341659, 5.814649, 5.187836, 4.199448, 4.150082, 4.122058,
        4.117969, 4.115351]


def test_an_optimizer_trace_of_values_is_the_loss(tmp_path):
    lines = ["# weights: 83", f"initial value {NNET[0]:.6f}"]
    lines += [f"iter {10 * i:3d} value {v:.6f}" for i, v in enumerate(NNET[1:], start=1)]
    lines += [f"final value {NNET[-1]:.6f}", "stopped after 100 iterations"]
    path = tmp_path / "nnet.txt"
    path.write_text("\n".join(lines) + "\n")
    run = load_run(path)
    assert run.column("scalars", "loss") is not None
    diag = analyze(path)
    assert diag.curve.label == "healthy"
    assert any("objective" in w for w in diag.warnings)


def test_silent_twin_value_beside_a_loss_is_not_the_loss(tmp_path):
    lines = [f"iter {10 * i} loss {2.0 / i:.4f} value {0.5 + i:.3f}" for i in range(1, 12)]
    path = tmp_path / "train.txt"
    path.write_text("\n".join(lines) + "\n")
    run = load_run(path)
    loss = run.column("scalars", "loss")
    assert loss is not None and abs(float(loss[-1]) - 2.0 / 11) < 1e-3
