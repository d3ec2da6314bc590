"""Round 35's readers, from the twenty-first thread set's refusals (a development set since its one
grading in round 34). A log that names no loss is read through what it watches (``reader/objective``):

- MXNet's Speedometer prints ``Train-accuracy`` and ``Train-top_k_accuracy_5`` on alternate lines; the
  top-5 accuracy is the top-1's looser grain, not a second quantity to choose between, so the top-1 is read
  (the log was refused: "two quantities, --loss chooses").
- A reading-comprehension trainer prints only ``dev EM: .. F1: ..`` per epoch: an exact match and an
  F-score are scores like an accuracy, the F-score preferred (the log was refused).
- A forecaster prints ``{'RAE': nan, 'RSE': nan, 'CORR': nan}`` every epoch: RAE and RSE are error
  measures, and two of them, NaN on every line, say the run diverged whichever is read (refused before).
"""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.errors import ImportFailedError
from runlens.io.loader import load_run
from runlens.io.reader.names import tokens
from runlens.io.reader.objective import _top_k


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _speedometer(acc, top5):
    out = ["INFO:root:Start training with [gpu(0), gpu(1)]"]
    for i, (a, t) in enumerate(zip(acc, top5, strict=True)):
        batch = 50 * (i + 1)
        out.append(f"INFO:root:Epoch[0] Batch [{batch}]\tSpeed: 128.{i} samples/sec\tTrain-accuracy={a:.6f}")
        out.append(f"INFO:root:Epoch[0] Batch [{batch}]\tSpeed: 128.{i} samples/sec\tTrain-top_k_accuracy_5={t:.6f}")
    return out


def test_a_top_5_accuracy_beside_the_top_1_is_not_a_second_choice(tmp_path):
    run = load_run(_write(tmp_path, _speedometer([0.002, 0.0, 0.0, 0.0, 0.0, 0.0], [0.003, 0.0, 0.001, 0.0, 0.0, 0.0])))
    assert run.scalars.column("loss").to_pylist() == pytest.approx([0.998, 1, 1, 1, 1, 1])
    d = analyze(run)
    assert d.curve.label == "underfitting"


def test_a_top_k_accuracy_alone_is_still_read(tmp_path):
    lines = [f"Epoch {e} Acc@10: 0.{e:02d}00, Grad Norm: {1.5 + e:.2f}" for e in range(1, 7)]
    run = load_run(_write(tmp_path, lines))
    assert run.scalars.column("loss").to_pylist() == pytest.approx([1 - e / 100 for e in range(1, 7)])


@pytest.mark.parametrize("name, top_k", [
    ("Train-top_k_accuracy_5", True), ("Top-5 Accuracy", True), ("acc@5", True), ("top5_acc", True),
    ("top1", False), ("Acc@1", False), ("top_1_accuracy", False), ("val_accuracy", False)])
def test_which_accuracies_are_top_k(name, top_k):
    assert _top_k(tokens(name)) is top_k


def _drqa(em, f1):
    out = []
    for e, (a, b) in enumerate(zip(em, f1, strict=True), start=1):
        out.append(f"06/28/2017 03:{e:02d}:24 Epoch {e}")
        out.append(f"06/28/2017 03:{e:02d}:55 dev EM: {a} F1: {b}")
    return out


def test_an_exact_match_and_an_f_score_are_read_the_f_score_first(tmp_path):
    run = load_run(_write(tmp_path, _drqa([56.9, 62.1, 63.6, 65.1, 66.3, 66.9], [67.9, 72.0, 73.2, 74.9, 76.3, 76.8])))
    vals = [v for v in run.evals.column("val_loss").to_pylist() if v is not None]
    assert vals == pytest.approx([1 - f / 100 for f in (67.9, 72.0, 73.2, 74.9, 76.3, 76.8)])
    d = analyze(run)
    assert not [f for f in d.findings if f.severity in ("warning", "error")]


def _lstnet(rae, rse):
    out = []
    for e, (a, b) in enumerate(zip(rae, rse, strict=True), start=1):
        out.append(f"Metrics: Epoch {e}, Training {{'RAE': {a}, 'RSE': {b}, 'CORR': 0.5}}")
        out.append("")
    return out


def test_error_measures_nan_on_every_line_diverged(tmp_path):
    run = load_run(_write(tmp_path, _lstnet(["nan"] * 6, ["nan"] * 6)))
    assert all(math.isnan(v) for v in run.scalars.column("loss").to_pylist())
    d = analyze(run)
    assert d.curve.label == "diverged" and "nonfinite_loss" in {f.code for f in d.findings}


def test_finite_error_measures_leave_the_choice_to_the_user(tmp_path):
    with pytest.raises(ImportFailedError, match="RAE, RSE"):
        load_run(_write(tmp_path, _lstnet([0.9, 0.8, 0.7, 0.6, 0.5, 0.4], [0.5, 0.45, 0.4, 0.35, 0.3, 0.25])))


def test_one_finite_error_measure_is_read(tmp_path):
    lines = [f"Metrics: Epoch {e}, Training {{'RAE': {1 - e / 10:.2f}, 'CORR': 0.5}}" for e in range(1, 7)]
    run = load_run(_write(tmp_path, lines))
    assert run.scalars.column("loss").to_pylist() == pytest.approx([1 - e / 10 for e in range(1, 7)])
