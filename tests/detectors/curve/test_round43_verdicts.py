"""Round 43's verdicts, from the twenty-ninth thread set's misses: a Keras run on 26 samples at
``acc: 1.0000`` for its last epochs, its ``val_acc`` 0.8889 (8 of 9) at each and its training loss
between 1e-7 and 2e-4 beside a validation loss of 1.17, was called underfitting ("the model predicts
the same whatever it is shown"), then unstable (the loss swinging tenfold). It memorized its data.

- a held-out accuracy frozen beside a training accuracy at 0.99 or more at every point is no model
  that predicts the same whatever it is shown (that model cannot get every training example right);
- a training loss swinging at a thousandth of the run's largest loss, the validation loss's included,
  is at zero on the run's scale, not unstable.

Each has a silent twin.
"""

from __future__ import annotations

from runlens import analyze
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines

_TINY = [1.2563e-06, 2.2034e-04, 5.4705e-05, 4.6540e-05, 1.5589e-07, 2.2260e-06, 3.6035e-05, 2.5676e-07]


def _keras(losses, acc, val_losses, val_acc=0.8889) -> list[str]:
    out = []
    for k, (loss, a, vl) in enumerate(zip(losses, acc, val_losses, strict=True)):
        out += [f"Epoch {491 + k}/500",
                f"26/26 [==============================] - 0s 857us/step - loss: {loss:.4e} - acc: {a:.4f} - "
                f"val_loss: {vl:.4f} - val_acc: {val_acc:.4f}"]
    return out


def test_a_memorizing_run_with_a_frozen_held_out_accuracy_overfits(tmp_path):
    val = [1.1681, 1.1974, 1.1694, 1.1694, 1.1693, 1.1692, 1.1712, 1.1712]
    d = analyze(load_run(write_lines(tmp_path, _keras(_TINY, [1.0] * 8, val))))
    assert d.curve.label == "overfitting", d.curve
    assert d.curve.evidence["kind"] == "short_memorized"


def test_silent_twin_a_frozen_held_out_accuracy_beside_a_poor_training_one_predicts_the_same(tmp_path):
    # A training accuracy that moves around 0.6 and a held-out one fixed to its last digit while the
    # loss moves: the held-out predictions never change.
    losses = [1.9 - 0.12 * k for k in range(8)]
    acc = [0.58, 0.61, 0.57, 0.62, 0.60, 0.59, 0.63, 0.61]
    d = analyze(load_run(write_lines(tmp_path, _keras(losses, acc, [2.0] * 8, val_acc=0.5312))))
    assert d.curve.label == "underfitting", d.curve
    assert d.curve.evidence["kind"] == "short_frozen_accuracy"


def test_a_loss_swinging_at_zero_beside_a_large_validation_loss_is_not_unstable(tmp_path):
    # Without accuracies: only the scale the validation loss gives says the swings are at zero.
    lines = [f"epoch {k + 1}: loss {v:.4e} val_loss {1.17 + 0.01 * (k % 2):.4f}" for k, v in enumerate(_TINY)]
    d = analyze(load_run(write_lines(tmp_path, lines)))
    assert d.curve.label != "unstable", d.curve


def test_silent_twin_a_loss_swinging_tenfold_on_the_validation_losss_scale_is_unstable(tmp_path):
    swings = [v * 1e4 for v in _TINY]  # 0.0016 .. 2.2: the validation loss, 1.17, is of its scale
    lines = [f"epoch {k + 1}: loss {v:.4e} val_loss {1.17 + 0.01 * (k % 2):.4f}" for k, v in enumerate(swings)]
    d = analyze(load_run(write_lines(tmp_path, lines)))
    assert d.curve.label == "unstable", d.curve
    assert d.curve.evidence["kind"] == "short_swings"
