"""Round 30's readers, from the sixteenth thread set's misses (a development set since its one grading in
round 29): each shape on a synthetic log of its own, with a silent twin.

- a line that writes each value before its name (``10.50 loss, 1.7e-05 LR, 8.83 GB used, 18.70 s``):
  the number belongs to the name after it, not to the one before;
- a gradient logged under its bare name (``Grad=9164.28``) is the gradient norm: a non-finite one is
  a non-finite gradient;
- numbered advice (``1. If ... 2. Inspect ...``) shows its first item as the fix, not ``1.``.
"""

from __future__ import annotations

import numpy as np

from runlens import analyze
from runlens.io.importers import detect_kind, read
from runlens.io.importers._postfix import postfix_fields
from runlens.io.importers._textline import read_fields
from runlens.render.report.text import first_sentence


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_value_before_its_name_is_that_names():
    fields = read_fields("10.5008 loss, 0.000016689301 LR, 124.27 GB used, 5.79 s   ")
    assert fields == [("loss", 10.5008), ("LR", 1.6689301e-05), ("GB used", 124.27), ("time (s)", 5.79)]


def test_a_name_before_its_value_is_not_postfix():
    assert postfix_fields("loss 10.5, lr 0.001") is None
    assert postfix_fields("Epoch 3, 0.5 loss") is None  # one part is not number-then-name
    assert postfix_fields("3 epochs") is None
    assert read_fields("loss: 10.5, lr: 0.001") == [("loss", 10.5), ("lr", 0.001)]


def test_a_postfix_log_is_read_by_its_names(tmp_path):
    losses = 10.5 - np.arange(8) * 0.2
    lr = 1e-5 * (1 + np.arange(8))
    lines = ["training llama3"] + [f"{v:.4f} loss, {r:.12f} LR, 124.27 GB used, 5.{i}9 s"
                                   for i, (v, r) in enumerate(zip(losses, lr, strict=True))]
    path = _write(tmp_path, lines)
    imp = read(detect_kind(path), path)
    assert np.allclose(imp.train["loss"].values, losses)
    diagnosis = analyze(str(path))
    # A warmup's rising rate is not a rising loss: the loss falls at every line.
    assert diagnosis.curve.label != "diverged"


def _solver(tmp_path, grads):
    lines = []
    for e, g in enumerate(grads, start=1):
        lines += [f"2024-07-26 16:21:42,549 - INFO - Training Epoch {e} ...",
                  f"2024-07-26 17:06:38,010 - INFO - Train Summary | Epoch {e} | Loss={0.3 - e * 0.02:.4f} | Grad={g}",
                  f"2024-07-26 17:06:42,187 - INFO - Valid Summary | Epoch {e} | Loss={0.31 - e * 0.02:.4f} | Nsdr=6.2"]
    return _write(tmp_path, lines)


def test_a_bare_grad_that_goes_inf_is_a_nonfinite_gradient(tmp_path):
    d = analyze(str(_solver(tmp_path, ["9164.2812", "16170.3185", "inf"])))
    assert "nonfinite_gradient" in {f.code for f in d.findings}


def test_a_bare_grad_that_stays_finite_is_silent(tmp_path):
    d = analyze(str(_solver(tmp_path, ["1.20", "1.10", "0.95"])))
    assert "nonfinite_gradient" not in {f.code for f in d.findings}
    assert not any(f.severity in ("warning", "error") for f in d.findings)


def test_numbered_advice_shows_its_first_item():
    assert first_sentence("1. If the loss became NaN, see nonfinite_loss. 2. Clip.") == (
        "If the loss became NaN, see nonfinite_loss.")
    assert first_sentence("Lower the learning rate. Then clip.") == "Lower the learning rate."


def _gan(tmp_path, g, d, names=("Err_G", "Err_D")):
    lines = ["ndf : 75", "ngf : 140", ""]
    for i, (a, b) in enumerate(zip(g, d, strict=True)):
        lines.append(f"Epoch: [1][{i:8d} /      910]\t Time: 0.321  DataTime: 0.000    {names[0]}: {a:.4f}  "
                     f"{names[1]}: {b:.4f}\t")
    return _write(tmp_path, lines)


def test_a_gans_two_players_without_a_loss_word_are_its_loss(tmp_path):
    # The discriminator won: the generator's loss frozen at its saturation value, line after line.
    path = _gan(tmp_path, [27.6310] * 9, [0.0039, 0, 0, 0, 0, 0.0002, 0, 0, 0])
    d = analyze(str(path))
    assert d.curve.label == "underfitting"
    assert any("GAN" in w for w in d.reading_warnings + d.warnings)


def test_a_gan_that_trains_is_read_and_not_called_stuck(tmp_path):
    rng = np.random.default_rng(0)
    g = 2.0 + rng.normal(0, 0.4, 9).clip(-1, 1)
    d = 0.7 + rng.normal(0, 0.1, 9)
    assert analyze(str(_gan(tmp_path, g, d))).curve.label in ("healthy", "insufficient_data")


def test_one_letter_alone_is_no_gan_player(tmp_path):
    # ``G`` beside an ``Acc`` is a letter, not a player: the GAN reading needs both sides.
    imp = read(detect_kind(path := _gan(tmp_path, [1.5] * 6, [0.2] * 6, names=("G", "Acc"))), path)
    assert not any("GAN" in w for w in imp.warnings)
