"""A Keras console log (``nohup.out``): its index is the epoch the log counts, not the progress counter.

Keras prints ``Epoch e/E`` and then a progress bar whose counter ``i/N`` counts samples (or
batches) within the epoch and starts again every epoch; each epoch's last bar line (``N/N``)
holds the epoch's means. The reader keeps those lines only, and then the epoch as logged is
the step of every series. The expected steps here are read back from the file's own text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from runlens.cli import main
from runlens.io.importers import read

SAMPLES = 60_000
EPOCHS = 12


def _train_loss(e: int) -> float:
    return 2.0 / (1 + 0.6 * e)


def _val_loss(e: int) -> float:
    # Falls until epoch 5, then rises: the training loss keeps falling (overfitting from epoch 5).
    return 1.5 / (1 + 0.4 * e) if e <= 5 else 1.5 / 3 + 0.09 * (e - 5)


def keras_log(folder: Path, *, samples: int = SAMPLES, epochs: int = EPOCHS, runs: int = 1,
              cut_last: bool = False) -> Path:
    """What ``model.fit(verbose=1)`` under ``nohup`` writes: a bar line per batch of 256, newline-ended."""
    out = ["Using TensorFlow backend.", f"Train on {samples} samples, validate on 10000 samples"]
    for r in range(runs):
        for e in range(1, epochs + 1):
            out += [f"Epoch {e}/{epochs}", ""]
            done = list(range(256, samples, 256 * 20))
            for k, i in enumerate(done):
                out.append(f"{i:6d}/{samples} [=====>........] - ETA: {len(done) - k}s - loss: "
                           f"{_train_loss(e) + 0.3 + r:.4f} - accuracy: 0.61")
            if cut_last and e == epochs:
                break  # killed inside the last epoch: only running means of it
            out.append(f"{samples}/{samples} [==============================] - 51s 5ms/step - loss: "
                       f"{_train_loss(e) + r:.4f} - accuracy: 0.69 - val_loss: {_val_loss(e) + r:.4f} - "
                       "val_accuracy: 0.51")
    path = folder / "nohup.out"
    path.write_text("\n".join(out) + "\n")
    return path


def file_epochs(path: Path) -> tuple[list[int], dict[int, float]]:
    """The epochs whose summary line the file holds, and each one's val_loss, as a person reads them."""
    epochs, val, epoch = [], {}, None
    for line in path.read_text().splitlines():
        if m := re.match(r"Epoch (\d+)/\d+$", line):
            epoch = int(m.group(1))
        elif epoch is not None and (m := re.search(r"val_loss: ([\d.]+)", line)):
            epochs.append(epoch)
            val[epoch] = float(m.group(1))
    return epochs, val


def test_the_steps_are_the_epochs_the_log_counts(tmp_path):
    path = keras_log(tmp_path)
    epochs, _ = file_epochs(path)
    imp = read("text", path)
    assert list(imp.train["loss"].steps) == epochs == list(range(1, EPOCHS + 1))
    assert list(imp.evals["val_loss"].steps) == epochs
    assert imp.config["index_kind"] == "epoch"
    assert "epochs as logged (1..12)" in imp.config["import_roles"]["index"]["why"]


def test_overfitting_is_found_at_the_epoch_of_the_files_minimum(tmp_path):
    path = keras_log(tmp_path)
    epochs, val = file_epochs(path)
    best = min(val, key=lambda e: val[e])
    res = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "--fail-on", "never"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["curve"] == "overfitting"
    (finding,) = [f for f in obj["findings"] if f["code"] == "overfitting"]
    # The detector's own minimum is of its trend; it is an epoch of the file all the same.
    assert finding["step"] in epochs and finding["evidence"]["val_min_step"] in epochs
    assert abs(finding["evidence"]["val_min_step"] - best) <= 1
    assert obj["key_numbers"]["val_min_step"] == best
    assert (obj["key_numbers"]["first_step"], obj["key_numbers"]["last_step"]) == (1, EPOCHS)
    assert obj["roles"]["index"]["how"] == "epoch"


def test_a_run_killed_inside_an_epoch_and_a_second_launch_keep_epochs(tmp_path):
    path = keras_log(tmp_path, runs=2, epochs=6)
    imp = read("text", path, run=1)
    assert list(imp.train["loss"].steps) == [1, 2, 3, 4, 5, 6]
    assert any("epochs 1..6" in w for w in imp.warnings)  # the listing of the runs counts epochs too
    cut = keras_log(tmp_path / "cut" if (tmp_path / "cut").mkdir() is None else tmp_path, cut_last=True)
    assert list(read("text", cut).train["loss"].steps) == list(range(1, EPOCHS))


def test_counters_that_differ_between_epochs_stay_steps(tmp_path):
    # The same bar, but the epoch total changes (a last partial batch counted apart): N is not one
    # constant, so the numbers are not read as a within-epoch progress counter of one size.
    path = tmp_path / "mixed.log"
    lines = []
    for e in range(1, 7):
        n = 1000 if e % 2 else 1200
        lines += [f"Epoch {e}/6", f"{n}/{n} [==========] - 3s - loss: {_train_loss(e):.4f}"]
    path.write_text("\n".join(lines) + "\n")
    imp = read("text", path)
    assert imp.config.get("index_kind", "step") == "step"
    assert list(imp.train["loss"].steps)[:2] == [999, 2 * 1200 - 1]


def test_per_batch_counter_lines_stay_optimizer_steps(tmp_path):
    # Several lines per epoch, each a real point (not a running mean of a bar): the counter is a step.
    path = tmp_path / "train.log"
    lines = []
    for e in range(1, 4):
        lines.append(f"Epoch {e}/3")
        lines += [f"Epoch {e} [{i}/300] loss: {_train_loss(e) + 1 / i:.4f}" for i in (100, 200, 300)]
    path.write_text("\n".join(lines) + "\n")
    imp = read("text", path)
    assert list(imp.train["loss"].steps) == [99, 199, 299, 399, 499, 599, 699, 799, 899]
    assert imp.config.get("index_kind", "step") == "step"
