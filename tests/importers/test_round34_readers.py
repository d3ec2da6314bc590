"""Round 34's reader, from the twentieth thread set's misses (a development set since its one grading in
round 33): NVIDIA's Tacotron 2 print (copied by Mellotron, Flowtron and many TTS trainers) puts the
iteration between the loss's name and its value (``Train loss 130950 0.412 Grad Norm 1.53 2.11s/it``,
``Validation loss 130950:  0.34``). The counter is the step and the number after it the loss; read the
other way, the counter became the loss and a NaN loss was lost (the log was refused).
"""

from __future__ import annotations

import math

import pytest

from runlens import analyze
from runlens.io.loader import load_run


def _write(tmp_path, lines):
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _lines(losses, first=130940):
    out = []
    for i, v in enumerate(losses):
        out.append(f"Train loss {first + i} {v:.6f} Grad Norm {0.8 + 0.01 * i:.6f} 2.11s/it")
    out.append(f"Validation loss {first + len(losses) - 1}: {losses[-1] + 0.05:9f}")
    return out


def test_the_iteration_between_the_name_and_the_value_is_the_step(tmp_path):
    run = load_run(_write(tmp_path, _lines([0.52, 0.50, 0.49, 0.47, 0.46])))
    assert run.scalars.column("step").to_pylist() == [130940, 130941, 130942, 130943, 130944]
    assert run.scalars.column("loss").to_pylist() == pytest.approx([0.52, 0.50, 0.49, 0.47, 0.46])
    assert run.evals.column("val_loss").to_pylist() == pytest.approx([0.51])


def test_a_nan_loss_in_this_print_is_read_and_diverged(tmp_path):
    lines = ["WARNING:root:NaN or Inf found in input tensor.",
             "Train loss 130950 nan Grad Norm nan 2.11s/it", "Validation loss 130950:       nan"]
    run = load_run(_write(tmp_path, lines))
    assert math.isnan(run.scalars.column("loss").to_pylist()[0])
    d = analyze(run)
    assert d.curve.label == "diverged" and {"nonfinite_loss", "nonfinite_gradient"} <= {f.code for f in d.findings}


@pytest.mark.parametrize("why, fmt", [
    ("a decimal after the name is the value itself", "Train loss 0.41{i} Grad Norm 1.2"),
    ("a counter before the name is the epoch's", "Epoch {i} loss 0.41{i} lr 0.001"),
])
def test_silent_twins_other_shapes_keep_their_reading(tmp_path, why, fmt):
    run = load_run(_write(tmp_path, [fmt.format(i=i) for i in range(1, 6)]))
    assert run.scalars.column("loss").to_pylist() == pytest.approx([0.411, 0.412, 0.413, 0.414, 0.415]), why


# -- an error rate of exactly 100%: an empty output ---------------------------------------------------

def _speech(wer: list[float], train: list[float]) -> list[str]:
    return [f"epoch: {e}, lr_model: 9.00e-01 - train loss: {t:.2f} - valid loss: {t - 0.1:.2f}, "
            f"valid CER: {w:.2e}, valid WER: {w:.2e}" for e, (w, t) in enumerate(zip(wer, train, strict=True), 1)]


@pytest.mark.parametrize("full", [100.0, 1.0])  # a percentage or a fraction
def test_a_word_error_rate_of_exactly_100_percent_at_every_evaluation_is_no_learning(tmp_path, full):
    d = analyze(_write(tmp_path, _speech([full] * 4, [3.11, 2.95, 2.92, 2.89])))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_empty_output", d.curve


@pytest.mark.parametrize("why, wer, train", [
    ("the rate left 100%: the model writes something", [100.0, 100.0, 98.7, 95.1], [3.11, 2.95, 2.92, 2.89]),
    ("two evaluations are the blank stage every CTC model passes", [100.0, 100.0], [3.11, 2.95]),
    ("a loss that halved is leaving the blank stage", [100.0] * 4, [3.11, 2.4, 1.9, 1.4]),
])
def test_silent_twins_of_an_empty_output(tmp_path, why, wer, train):
    d = analyze(_write(tmp_path, _speech(wer, train)))
    assert d.curve.evidence.get("kind") != "short_empty_output", why
