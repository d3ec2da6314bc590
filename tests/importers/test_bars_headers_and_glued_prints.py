"""Round 18, from the fourth thread set's misses (a development set since its one grading):

- a print glued after a tqdm bar's bracket (anoGAN's ``13.4s/it]dloss: 1e-5\tg_loss: 16.118``)
  holds the batch's metrics: read at the bar's count;
- a progress bar with no epoch that ran to its end and starts again at the same length (a loop of
  ``fit(epochs=1)``: ``32/32 [===] - loss: 11.8727`` once per pass) is a new pass, not the same step
  again: the identical lines of a run whose weights never move stay apart;
- the line right under an ``Epoch 4/200`` header that names no counter but a loss (Keras'
  ``verbose=2``: `` - 2s - loss: 55.80 - val_loss: 26.45``) is that epoch's summary;
- ``Vali Loss`` (Informer, Autoformer, TimesNet) is the validation loss;
- a step counter after the epoch on its line that repeats each epoch (MindSpore's ``epoch: 2 step: 1875,
  loss is 0.12``) counts on, as a counter with a total there already did.

Each has a silent twin that keeps the old reading.
"""

from __future__ import annotations

import numpy as np

from runlens.analysis import analyze
from runlens.io.importers import text


def _write(tmp_path, lines: list[str], name: str = "train.log"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _bar(i: int, n: int) -> str:
    return f"  0%|          | {i}/{n} [00:{10 + i:02d}<13:40:35, 16.42s/it]"


def test_a_print_glued_after_a_tqdm_bar_is_read_at_its_count(tmp_path):
    d = [1.2e-4, 5.9e-5, 3.7e-5, 2.6e-5, 2.0e-5, 1.4e-5, 9.7e-6, 1.0e-5, 6.2e-6, 6.7e-6]
    lines = [_bar(i + 1, 3000) + f"dloss: {v}\tg_loss: 16.11809539794922" for i, v in enumerate(d)]
    imp = text.read(_write(tmp_path, lines))
    loss = imp.train["g_loss"]
    assert list(loss.steps) == list(range(1, 11))
    assert np.all(loss.values == 16.11809539794922)
    # The generator's loss never moved to its last printed digit: stuck, from a run that is read.
    diag = analyze(_write(tmp_path, lines, "gan.log"))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck"


def test_silent_twin_a_bar_with_its_metrics_in_the_postfix_reads_as_before(tmp_path):
    lines = [f"  3%|▎         | {i}/300 [00:{i:02d}<01:30, 1.2s/it, loss={2.0 - 0.05 * i:.3f}]" for i in range(1, 9)]
    imp = text.read(_write(tmp_path, lines))
    assert list(imp.train["loss"].steps) == list(range(1, 9))
    assert imp.train["loss"].values[-1] == 1.6


def test_a_finished_bar_printed_again_is_a_new_pass(tmp_path):
    lines = []
    for _ in range(6):
        lines += ["2.1586735246819186 0.9375", "32/32 [==============================] - 1s - loss: 11.8727 - acc.: 0.6562"]
    imp = text.read(_write(tmp_path, lines))
    loss = imp.train["loss"]
    assert list(loss.steps) == [32 * k for k in range(1, 7)]
    diag = analyze(_write(tmp_path, lines, "keras.log"))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck"


def test_silent_twin_a_bar_that_counts_up_keeps_its_counts(tmp_path):
    lines = [f"{i}/32 [{'=' * i}>{'.' * (32 - i)}] - ETA: 1s - loss: {3.0 - 0.05 * i:.4f}" for i in (8, 16, 24)]
    lines.append("32/32 [==============================] - 1s - loss: 1.4000")
    imp = text.read(_write(tmp_path, lines))
    # Running means inside one pass: only its end is kept, at its count.
    assert list(imp.train["loss"].steps) == [32]


def test_a_loss_line_under_an_epoch_header_is_the_epochs(tmp_path):
    train = [55.8033, 53.3749, 51.0523, 48.8308, 46.7058, 44.6733, 42.7294]
    val = [26.4454, 26.3017, 26.2110, 26.1701, 26.1759, 26.2252, 26.3153]
    lines = []
    for e, (t, v) in enumerate(zip(train, val, strict=True), start=4):
        lines += [f"Epoch {e}/200", f" - 2s - loss: {t:.4f} - val_loss: {v:.4f}"]
    imp = text.read(_write(tmp_path, lines))
    assert imp.config["index_kind"] == "epoch"
    assert list(imp.train["loss"].steps) == list(range(4, 11))
    assert list(imp.train["loss"].values) == train
    assert list(imp.evals["val_loss"].values) == val


def test_silent_twin_a_line_far_below_its_header_is_not_the_epochs(tmp_path):
    lines = ["Epoch 1/3", "loading the data", "cache size: 512 batches, loss scale 1.0"]
    lines += [f"step {s} loss {2.0 - 0.1 * s:.2f}" for s in range(1, 9)]
    imp = text.read(_write(tmp_path, lines))
    assert list(imp.train["loss"].steps) == list(range(1, 9))


def test_vali_loss_is_the_validation_loss(tmp_path):
    lines = [f"Epoch: {e}, Steps: 153 | Train Loss: {900 - 10 * e:.7f} Vali Loss: {22000 + e:.7f} "
             f"Test Loss: {13000 + e:.7f}" for e in range(1, 6)]
    imp = text.read(_write(tmp_path, lines))
    assert list(imp.evals["val_loss"].values) == [22000.0 + e for e in range(1, 6)]
    assert "val_loss@test" in imp.evals


def test_silent_twin_a_validity_share_is_no_validation_loss(tmp_path):
    lines = [f"Epoch: {e} | Train Loss: {2.0 - 0.1 * e:.3f} validity: {0.5 + 0.01 * e:.2f}" for e in range(1, 6)]
    imp = text.read(_write(tmp_path, lines))
    assert "val_loss" not in imp.evals


def test_a_step_after_the_epoch_that_repeats_each_epoch_counts_on(tmp_path):
    # MindSpore's LossMonitor at each epoch's end: the step within the epoch, the same every epoch.
    lines = [f"epoch: {e} step: 1875, loss is {2.0 - 0.1 * e:.4f}" for e in range(1, 9)]
    imp = text.read(_write(tmp_path, lines))
    assert list(imp.train["loss"].steps) == [1875 * e for e in range(1, 9)]


def test_silent_twin_a_step_after_the_epoch_that_runs_on_is_kept(tmp_path):
    lines = [f"epoch {e} step {300 * e} loss {2.0 - 0.1 * e:.4f}" for e in range(1, 9)]
    imp = text.read(_write(tmp_path, lines))
    assert list(imp.train["loss"].steps) == [300 * e for e in range(1, 9)]
