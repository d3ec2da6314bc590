"""Round 18, from the fourth thread set's misses (a development set since its one grading): a learning
rate printed on a line of its own (``Updating learning rate to 7.2e-280``) is the rate from the last
training step on, and a short log whose rate sits at or below ``VANISHED_LR`` over its last half trains
nothing: underfitting, with the schedule named as the cause. Silent twins: a small but real rate, a
rate that reaches ~0 only at its last point (a cosine schedule's end), a step-less line that names the
rate beside other numbers."""

from __future__ import annotations

import pytest

from runlens import analyze
from runlens.detectors.curve.short_level import VANISHED_LR
from runlens.io.importers import text


def _informer(tmp_path, rates, name="informer.log"):
    lines = []
    for i, (e, lr) in enumerate(zip(range(915, 915 + len(rates)), rates, strict=True)):
        lines += [f"Epoch: {e} cost time: 8.27",
                  f"Epoch: {e}, Steps: 153 | Train Loss: {838.64 + 7 * (-1) ** i:.7f} Vali Loss: "
                  f"{22288.13 - 100 * i:.7f} Test Loss: {13408.78 - 50 * i:.7f}",
                  f"EarlyStopping counter: {261 + i} out of 3", f"Updating learning rate to {lr!r}"]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_rate_line_is_read_at_the_last_step(tmp_path):
    imp = text.read(_informer(tmp_path, [7.2e-280, 3.6e-280, 1.8e-280, 9.0e-281]))
    lr = imp.train["lr"]
    assert list(lr.steps) == [915, 916, 917, 918] and lr.values[0] == 7.2e-280


def test_a_vanished_rate_is_underfitting_with_the_schedule_as_cause(tmp_path):
    diag = analyze(_informer(tmp_path, [7.2e-280, 3.6e-280, 1.8e-280, 9.0e-281]))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_lr_vanished"
    assert diag.curve.evidence["step"] == 915 and diag.curve.evidence["last_lr"] <= VANISHED_LR
    assert "schedule" in diag.headline
    (f,) = [f for f in diag.findings if f.code == "underfitting"]
    assert f.advice.startswith("Check the learning-rate schedule")


@pytest.mark.parametrize("rates", [
    [1e-6, 5e-7, 2.5e-7, 1.25e-7],        # small, but every weight still moves
    [2e-4, 1e-4, 5e-5, 0.0],              # ~0 at the last point only: a cosine schedule's end
    [0.0, 0.0, 0.0, 0.0],                 # printed as 0 ("lr: 0.0000"): any rate under the last digit
])
def test_silent_twin_a_rate_that_still_trains(tmp_path, rates):
    diag = analyze(_informer(tmp_path, rates))
    assert diag.curve.evidence.get("kind") != "short_lr_vanished"


def test_silent_twin_a_line_naming_the_rate_beside_other_numbers_is_no_rate(tmp_path):
    lines = ["step 1 loss 2.30", "learning rate warmup over 500 steps from 0", "step 2 loss 2.20",
             "step 3 loss 2.10", "lr schedule: 1e-3 decayed by 0.5 every 10 epochs", "step 4 loss 2.00"]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    imp = text.read(path)
    assert "learning rate" not in imp.train and "lr" not in imp.train
