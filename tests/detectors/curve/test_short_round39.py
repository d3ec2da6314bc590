"""Round 39's short-log readings, from the twenty-fifth thread set's misses (a development set since its
one grading in round 38):

- a run that died of a check on a value gone NaN (torchdiffeq's ``AssertionError: underflow in dt nan``)
  diverged, however few losses it printed (``kind: died_nonfinite``);
- a gradient norm exactly 0 at its last 3 values or more beside a non-zero loss is a model that no
  longer learns (``kind: short_no_gradient``);
- a progress bar whose steps restart in a later epoch (Lightning's ``Epoch 2: 100/6166``) says nothing of
  how the run began: a slow fall there is no "no progress from the start" (a healthy run's window was
  read as underfitting).

Each has a silent twin.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.detectors.crash.decode import decode
from runlens.detectors.curve.no_gradient import no_gradient
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines


def _ode(message):
    return ["Saved ground truth spiral at ./ground_truth.png", "Iter: 1, running avg elbo: -19738.1055",
            "Iter: 2, running avg elbo: -61205141560896.3047", "Traceback (most recent call last):",
            '  File "latent_ode.py", line 263, in <module>', "    pred_z = odeint(func, z0, samp_ts)",
            f"AssertionError: {message}"]


def test_a_run_that_died_of_a_nan_check_diverged(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _ode("underflow in dt nan"))))
    assert d.curve.label == "diverged" and d.curve.evidence["kind"] == "died_nonfinite"


def test_silent_twin_a_run_that_died_of_a_finite_check_is_a_crash_only(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _ode("underflow in dt 1e-20"))))
    assert d.curve.label == "insufficient_data"
    assert any(f.code == "crash_other" for f in d.findings)


@pytest.mark.parametrize(("message", "kind"), [
    ("underflow in dt nan", "nonfinite"), ("tensor([nan, 1.0])", "nonfinite"),
    ("timed out after 30 nanoseconds", "other"), ("key 'nan' not found", "other"), ("NaNLoss()", "other")])
def test_a_nan_printed_as_a_value_is_the_nonfinite_pattern(message, kind):
    assert decode({"type": "AssertionError", "message": message}).kind == kind


STEPS = np.arange(9, dtype=np.int64)
LOSS = np.array([0.647, 2.26, 2.10, 2.14, 2.16, 2.17, 2.06, 2.18, 2.07])


def test_a_gradient_norm_of_zero_at_its_end_is_no_learning():
    v = no_gradient(STEPS, LOSS, (STEPS, np.array([6.7, 0.97, 1.6e-3, 0, 0, 0, 0, 0, 0])))
    assert v is not None and v.label == "underfitting" and v.evidence["zero_grad_values"] == 6
    assert v.evidence["first_zero_step"] == 3


def test_silent_twin_two_zero_norms_or_a_zero_loss_are_no_evidence():
    assert no_gradient(STEPS, LOSS, (STEPS, np.array([6.7, 0.97, 1.6e-3, 0.5, 0.4, 0.3, 0.2, 0, 0]))) is None
    assert no_gradient(STEPS, np.zeros(9), (STEPS, np.zeros(9))) is None
    assert no_gradient(STEPS, LOSS, None) is None


def test_silent_twin_a_norm_never_measured_or_a_loss_that_moves_is_no_evidence():
    # DeepSpeed under the Trainer prints ``'grad_norm': 0.0`` at every line: a norm it does not compute.
    assert no_gradient(STEPS, LOSS, (STEPS, np.zeros(9))) is None
    # A loss that climbs at every line while the norm reads 0: the weights moved, the zeros measured nothing.
    rising = np.array([1.27, 7.79, 14.97, 22.42, 60.93, 1053.0, 1100.0, 1200.0, 1300.0])
    assert no_gradient(STEPS, rising, (STEPS, np.array([0.5, 0.1, 0, 0, 0, 0, 0, 0, 0]))) is None


def _bar(epoch):
    losses = [0.00426, 0.00425, 0.00431, 0.00421, 0.00411, 0.00425, 0.00422, 0.00421, 0.00411, 0.00429, 0.00415,
              0.00413, 0.00413, 0.00404]
    return [f"Epoch {epoch}:   {i}%|#         | {100 * (i + 1)}/6166 [00:11<11:38,  8.68it/s, loss={v}, v_num=1]"
            for i, v in enumerate(losses)]


def test_a_window_of_a_later_epoch_is_not_judged_from_its_start(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _bar(2))))
    assert d.curve.label == "insufficient_data"


def test_silent_twin_the_same_window_in_the_first_epoch_made_no_progress(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _bar(0))))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_no_progress"


def _opennmt(ppl):
    losses = [185912.78, 158771.16, 138000.16, 159760.92, 159738.69, 169730.59, 141221.36, 161559.11]
    return ["INFO:tensorflow:Running evaluation for step 435000",
            f"INFO:tensorflow:Evaluation result for step 435000: loss = 148890.718750 ; perplexity = {ppl}"] + [
        f"INFO:tensorflow:Step = {435100 + 100 * i} ; steps/s = 2.95, source words/s = 12101 ; Learning rate = 1.2 ; "
        f"Loss = {v}" for i, v in enumerate(losses)]


def test_a_held_out_perplexity_beyond_any_vocabulary_diverged(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _opennmt("inf"))))
    assert d.curve.label == "diverged" and d.curve.evidence["kind"] == "held_out_beyond_vocabulary"


def test_silent_twin_a_held_out_perplexity_in_range_is_no_divergence(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _opennmt("35.2"))))
    assert d.curve.label != "diverged"
