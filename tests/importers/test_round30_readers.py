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


def _held_out_accuracy_log(tmp_path, losses, accs):
    lines = [f"DEBUG:root:Epoch: {e}\tTrain Loss: {v}\tTest Accuracy: {a}\t"
             for e, (v, a) in enumerate(zip(losses, accs, strict=True))]
    return _write(tmp_path, lines)


def test_a_held_out_accuracy_without_a_held_out_loss_is_kept(tmp_path):
    path = _held_out_accuracy_log(tmp_path, [0.9, 0.5, 0.3, 0.2], [43.87, 49.57, 52.6, 54.5])
    run = analyze(str(path))
    assert any("val_loss column is all null" in w for w in run.reading_warnings)
    from runlens.detectors.curve.memorized import accuracies
    from runlens.io.loader import load_run
    val = accuracies(load_run(str(path)))[1]
    assert val is not None and np.allclose(val[1], [0.4387, 0.4957, 0.526, 0.545])


def test_a_held_out_accuracy_frozen_to_the_last_digit_while_the_loss_moves_is_no_learning(tmp_path):
    losses = [0.87, 0.62, 0.45, 0.33, 0.24, 0.17, 0.12, 0.09]
    accs = [43.874363, 49.572593, 50.210792, 50.210792, 50.210792, 50.210792, 50.210792, 50.210792]
    d = analyze(str(_held_out_accuracy_log(tmp_path, losses, accs)))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_frozen_accuracy"
    assert d.curve.evidence["accuracy_of"] == "held-out"


def test_a_held_out_accuracy_that_moves_is_no_frozen_prediction(tmp_path):
    losses = [0.87, 0.62, 0.45, 0.33, 0.24, 0.17, 0.12, 0.09]
    accs = [43.874363, 49.572593, 55.210792, 60.113, 64.55, 67.01, 69.8, 71.2]
    d = analyze(str(_held_out_accuracy_log(tmp_path, losses, accs)))
    assert d.curve.evidence.get("kind") != "short_frozen_accuracy"


def _bare_table(tmp_path, val_acc):
    rng = np.random.default_rng(3)
    rows = ["epoch | train loss | train acc | val loss | val acc", "-- | -- | -- | -- | --"]
    for i in range(24):
        loss = 0.67 - 0.004 * i + rng.normal(0, 0.005)
        rows.append(f"{5 * (i + 1)} | {loss:.8f} | {0.51 + rng.normal(0, 0.002):.8f} | {loss + 0.01:.8f} | "
                    f"{val_acc(i):.8f}")
    return _write(tmp_path, rows, "results.md")


def test_a_pipe_table_without_outer_pipes_is_githubs_table(tmp_path):
    path = _bare_table(tmp_path, lambda i: 0.55 + 0.005 * i)
    imp = read(detect_kind(path), path)
    assert imp.kind == "markdown"
    assert len(imp.train["loss"].steps) == 24 and len(imp.evals["val_loss"].steps) == 24


def test_a_line_with_pipes_and_no_delimiter_row_is_no_table():
    from runlens.io.importers.markdown import tables
    assert tables(["epoch | loss", "1 | 0.5", "2 | 0.4"]) == []
    assert len(tables(["epoch | loss", "--|--", "1 | 0.5", "2 | 0.4"])[0].rows) == 2


def test_a_held_out_accuracy_frozen_over_a_long_run_while_the_loss_moves_is_no_learning(tmp_path):
    d = analyze(str(_bare_table(tmp_path, lambda i: 0.57318449)))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "frozen_accuracy"


def test_a_held_out_accuracy_that_settles_late_in_a_long_run_is_no_frozen_prediction(tmp_path):
    # Converged: the last half of the evaluations agree to the digit (a tagger's 0.9626 at 12 of its 21),
    # the first half do not; the noisy training loss still moves.
    d = analyze(str(_bare_table(tmp_path, lambda i: min(0.55 + 0.01 * i, 0.6625))))
    assert d.curve.evidence.get("kind") != "frozen_accuracy"
