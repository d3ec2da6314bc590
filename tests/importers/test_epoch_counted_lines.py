"""A console log whose only counter is the epoch ("Epoch 7 train loss 0.61") holds one value per
epoch, a mean over its batches: its index is the epoch, which the curve's loss-only swing reading
needs. A log counting steps, or with an epoch beside its step counter, keeps its steps."""

from __future__ import annotations

import numpy as np

from runlens import analyze
from runlens.io.importers import text

_SWINGS = [2.31, 1.62, 1.20, 0.67, 2.91, 0.98, 2.67, 0.67, 0.79, 2.85, 1.9, 0.6, 2.4, 1.1, 0.7, 2.6,
           1.4, 0.55, 2.2, 1.7, 0.9, 2.95, 0.8, 1.3, 2.5, 0.6, 1.8, 2.7, 1.0, 0.75]


def _write(tmp_path, lines: list[str]):
    path = tmp_path / "train.log"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_epoch_counted_lines_are_indexed_by_epoch(tmp_path):
    path = _write(tmp_path, [f"Epoch {i + 1} train loss {v:.4f} acc {50 + i}%" for i, v in enumerate(_SWINGS)])
    imp = text.read(path)
    assert imp.config["index_kind"] == "epoch"
    assert "only counter is its epoch" in imp.index_why


def test_silent_twin_step_counted_lines_keep_their_steps(tmp_path):
    path = _write(tmp_path, [f"step {50 * (i + 1)} | loss {v:.4f}" for i, v in enumerate(_SWINGS)])
    assert text.read(path).config.get("index_kind", "step") == "step"


def test_silent_twin_an_epoch_beside_a_step_counter_keeps_the_steps(tmp_path):
    path = _write(tmp_path, [f"epoch {i // 10} step {i} loss {v:.4f}" for i, v in enumerate(_SWINGS)])
    assert text.read(path).config.get("index_kind", "step") == "step"


def test_per_epoch_swings_with_no_progress_are_unstable(tmp_path):
    """Epoch means swinging by up to 5x around no trend: the training's own swings (the per-step
    twin of the same numbers stays underfitting: a batch of 4's mean swings that much alone)."""
    epochs = _write(tmp_path, [f"Epoch {i + 1} train loss {v:.4f}" for i, v in enumerate(_SWINGS)])
    assert analyze(epochs).curve.label == "unstable"
    steps = tmp_path / "steps.log"
    steps.write_text("".join(f"step {i + 1} loss {v:.4f}\n" for i, v in enumerate(_SWINGS)))
    assert analyze(steps).curve.label == "underfitting"
    assert np.ptp(_SWINGS) > 2


def _steps(imp) -> list[int]:
    return [int(s) for s in imp.train["loss"].steps]


def test_a_step_counter_with_a_total_restarting_each_epoch_runs_on(tmp_path):
    """The PyTorch tutorial's "Epoch [2/5], Step [100/600], Loss: 0.15": one run, not one per epoch."""
    lines = [f"Epoch [{e}/5], Step [{s}/600], Loss: {2.3 - 0.1 * e - s / 6000:.4f}"
             for e in (1, 2, 3) for s in (200, 400, 600)]
    imp = text.read(_write(tmp_path, lines))
    assert _steps(imp) == [200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800]
    assert imp.config["text_lines"]["runs"] == 1


def test_silent_twin_a_step_counter_with_the_runs_total_keeps_its_steps(tmp_path):
    lines = [f"Epoch {e} | step {s}/9000 | loss {2.3 - s / 9000:.4f}" for e, s in
             ((1, 1000), (1, 2000), (1, 3000), (2, 4000), (2, 5000), (2, 6000), (3, 7000))]
    imp = text.read(_write(tmp_path, lines))
    assert _steps(imp) == [1000, 2000, 3000, 4000, 5000, 6000, 7000]


def test_a_second_run_from_epoch_one_is_still_a_restart(tmp_path):
    lines = [f"Epoch [{e}/2], Step [{s}/600], Loss: {2.0 - 0.1 * e:.4f}" for e in (1, 2) for s in (300, 600)]
    imp = text.read(_write(tmp_path, lines + lines))
    assert imp.config["text_lines"]["runs"] == 2


def _bar(desc: str, i: int, n: int) -> str:
    return f"{desc}: {100 * i // n:3d}%|{'#' * (10 * i // n):10s}| {i}/{n} [00:02<01:07,  2.81s/it]"


def test_a_bar_under_a_leading_count_runs_on_across_epochs(tmp_path):
    """torchtune's "2|26|Loss: 1.43:  4%|| 1/25": the bar restarts every epoch under the leading count."""
    lines = [_bar(f"{e}|{(e - 1) * 5 + i}|Loss: {1.9 - 0.03 * ((e - 1) * 5 + i):.4f}", i, 5)
             for e in (1, 2) for i in range(1, 6)]
    imp = text.read(_write(tmp_path, lines))
    assert _steps(imp) == list(range(1, 11))
    assert imp.config["text_lines"]["runs"] == 1


def test_silent_twin_a_bar_under_a_title_keeps_its_counter(tmp_path):
    lines = [_bar(f"Training loss={1.9 - 0.03 * i:.4f}", i, 10) for i in range(1, 11)]
    assert _steps(text.read(_write(tmp_path, lines))) == list(range(1, 11))


def test_a_keras_run_that_died_in_its_first_epoch_keeps_its_last_progress_line(tmp_path):
    """Keras' "3/234 [...] - ETA - loss: 44.41Batch 3: Invalid loss, terminating training", then "loss: inf":
    no epoch ever closed, so the running means are the only record of the run (after closed epochs a
    cut last epoch is still left out: test_keras_epochs)."""
    lines = ["Epoch 1/10",
             "  1/234 [..............................] - ETA: 33:37:24 - loss: 12.3110",
             "  3/234 [..............................] - ETA: 33:37:24 - loss: 44.4110Batch 3: Invalid loss, "
             "terminating training",
             "  4/234 [..............................] - ETA: 25:09:00 - loss: inf "]
    imp = text.read(_write(tmp_path, lines))
    assert [float(v) for v in imp.train["loss"].values] == [float("inf")]
    assert analyze(_write(tmp_path, lines)).curve.label == "diverged"


def test_a_bar_with_no_epoch_header_that_never_closes_is_read(tmp_path):
    lines = [f"{i}/700 [..............................] - ETA: 2:54:46 - loss: {v} - mean_squared_error: {v}"
             for i, v in ((1, "0.0024"), (2, "nan"), (3, "nan"), (4, "nan"))]
    assert analyze(_write(tmp_path, lines)).curve.label == "diverged"


def test_silent_twin_closed_epochs_keep_only_their_ends(tmp_path):
    lines = []
    for e in (1, 2):
        lines += [f"Epoch {e}/2", f"  1/3 [=========>....................] - ETA: 1s - loss: {1.0 / e:.4f}",
                  f"3/3 [==============================] - 1s 3ms/step - loss: {0.9 / e:.4f}"]
    imp = text.read(_write(tmp_path, lines))
    assert [round(float(v), 4) for v in imp.train["loss"].values] == [0.9, 0.45]
    assert imp.config["index_kind"] == "epoch"
