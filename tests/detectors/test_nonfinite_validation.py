"""``nonfinite_validation``: a validation loss that is NaN/Inf while the training loss is finite."""

from __future__ import annotations

import numpy as np
from loss_synth import healthy, make_run
from verdict_fixtures import TRUTH, analysed, codes

from runlens.analysis import run_detector
from runlens.detectors import Context
from runlens.detectors.nonfinite_validation import NonfiniteValidation

VS = np.arange(0, 1000, 100)


def val(*bad):
    v = 0.5 + np.exp(-np.arange(VS.size) / 3)
    v[list(bad)] = np.nan
    return v


def found(run):
    outcome, findings = run_detector(NonfiniteValidation(), run, Context())
    assert outcome.state == "ran", outcome
    return findings


def test_nan_on_most_evaluations_is_an_error():
    (f,) = found(make_run(healthy(1000, 0), val_loss=val(1, 2, 4, 5, 6, 7, 8), val_steps=VS))
    assert f.severity == "error" and f.evidence["nonfinite_evals"] == 7 and f.evidence["n_points"] == 10


def test_a_nan_on_the_last_evaluation_alone_is_an_error():
    (f,) = found(make_run(healthy(1000, 0), val_loss=val(9), val_steps=VS))
    assert f.severity == "error" and f.evidence["last_is_nonfinite"]


def test_one_nan_that_later_evaluations_recover_from_is_a_warning():
    (f,) = found(make_run(healthy(1000, 0), val_loss=val(3), val_steps=VS))
    assert f.severity == "warning" and f.step == 300


def test_silent_twin_a_finite_validation_loss():
    assert found(make_run(healthy(1000, 0), val_loss=val(), val_steps=VS)) == []


def test_silent_twin_nan_validation_after_the_training_loss_became_nan():
    x = healthy(1000, 0)
    x[250:] = np.nan
    assert found(make_run(x, val_loss=val(3, 4, 5, 6, 7, 8, 9), val_steps=VS)) == []


def test_recorded_run_with_empty_validation_batches_and_its_twin():
    assert TRUTH["val_nan"]["label"] == "nonfinite_validation" and TRUTH["val_ok"]["label"] == "finite_validation"
    assert "nonfinite_validation" in codes(analysed("val_nan"), "error")
    assert "nonfinite_validation" not in codes(analysed("val_ok"))
