"""nonfinite_loss: the first non-finite loss and its cause (explosion, numerical, unclear); each firing
case with its healthy twin."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from curve_cases import SHORT_SEEDS, short
from edge_runs import make_run
from engine_runs import healthy
from loss_synth import make_run as curve_run
from nonfinite_runs import findings_of, healthy_run, nan_loss_at

from runlens import analyze
from runlens.testing import build_run


@pytest.mark.parametrize("seed", range(5))
def test_explosion_before_nan(seed):
    (f,) = findings_of("nonfinite_loss", healthy_run(seed=seed, mutate=nan_loss_at(250, explode=True)))
    assert f.step == 250 and f.severity == "error"
    assert f.evidence["cause"] == "explosion" and f.evidence["grad_norm_growth"] > 1000


@pytest.mark.parametrize("seed", range(5))
def test_numerical_nan_with_healthy_gradients(seed):
    (f,) = findings_of("nonfinite_loss", healthy_run(seed=seed, mutate=nan_loss_at(250, explode=False)))
    assert f.step == 250
    assert f.evidence["cause"] == "numerical"
    assert "healthy" in f.evidence["why"]
    assert f.evidence["last_finite_loss_step"] == 249


def test_inf_loss_and_recovery_are_reported():
    def mutate(cols):
        cols["scalars"]["loss"][100] = np.inf
    (f,) = findings_of("nonfinite_loss", healthy_run(mutate=mutate))
    assert f.evidence["value"] == "+Inf" and f.evidence["finite_again_after"] is True


def test_nonfinite_gradient_norm_before_the_loss_means_explosion():
    def mutate(cols):
        cols["scalars"]["grad_norm"][240] = np.inf
        cols["scalars"]["loss"][245:] = np.nan
    (f,) = findings_of("nonfinite_loss", healthy_run(mutate=mutate))
    assert f.evidence["cause"] == "explosion" and f.evidence["first_nonfinite_grad_norm_step"] == 240


def test_nan_at_step_zero_is_unclear_not_a_crash():
    (f,) = findings_of("nonfinite_loss", healthy_run(mutate=nan_loss_at(0, explode=False)))
    assert f.step == 0 and f.evidence["cause"] == "unclear"


def test_finite_loss_is_silent():
    assert findings_of("nonfinite_loss", healthy_run()) == []
    assert findings_of("nonfinite_gradient", healthy_run()) == []


def test_a_null_loss_is_missing_not_nan():

    cols = healthy(100, 2)
    loss = cols["scalars"]["loss"].tolist()
    loss[40:60] = [None] * 20
    cols["scalars"]["loss"] = pa.array(loss, pa.float64())
    run = make_run("r", scalars=cols["scalars"])
    assert findings_of("nonfinite_loss", run) == []
    from runlens.analysis import first_nonfinite_step

    assert first_nonfinite_step(run) is None


def test_loss_blowing_up_before_nan_is_an_explosion_even_with_flat_gradient_norms():
    # Adam-like: clipped, steady gradient norms while the loss itself runs away.
    def mutate(cols):
        cols["scalars"]["loss"][240:250] = np.logspace(0, 3, 10)
        cols["scalars"]["loss"][250:] = np.nan
    (f,) = findings_of("nonfinite_loss", healthy_run(mutate=mutate))
    assert f.evidence["cause"] == "explosion" and f.evidence["loss_growth"] > 100


def test_the_writers_activation_culprit_is_in_the_evidence():
    cols = healthy(300, 4)
    cols["scalars"]["loss"][200:] = np.nan
    events = {"step": [200], "time": [1.0], "kind": ["nonfinite_loss"], "layer": ["encoder.norm"],
              "value": [np.nan], "message": ["loss is nan"]}
    run = make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], events=events)
    (f,) = findings_of("nonfinite_loss", run)
    assert f.evidence["first_nonfinite_activation"] == "encoder.norm"


def test_bad_parameters_are_reported_in_the_template():
    from runlens.detectors.nonfinite_loss import NonfiniteLoss
    from runlens.errors import UsageError

    with pytest.raises(UsageError, match=r"The 'recent' parameter of NonfiniteLoss must be an int >= 1. Got 0"):
        analyze(healthy_run(), detectors=[NonfiniteLoss(recent=0)])
    with pytest.raises(UsageError, match="explosion_ratio"):
        analyze(healthy_run(), detectors=[NonfiniteLoss(explosion_ratio=2.0)])


def _with_event(loss, kind):
    run = curve_run(loss)
    steps = np.array([3], dtype=np.int64)
    events = {"step": steps, "time": steps.astype(float), "kind": [kind],
              "message": ["Warning: NaN or Inf found in input tensor."], "layer": [None]}
    return build_run(tables={"scalars": run.scalars, "events": events}, meta=run.meta, name=run.path,
                     status=run.status)


def test_a_nonfinite_loss_event_with_a_finite_printed_loss_is_a_nonfinite_loss():
    d = analyze(_with_event(np.array([2.3, 2.1, 1.9, 1.8, 1.7, 1.65, 1.6, 1.58]), "nonfinite_loss"))
    (f,) = [f for f in d.findings if f.code == "nonfinite_loss"]
    assert f.severity == "error" and f.step == 3 and f.evidence["cause"] == "event"


def test_silent_twin_another_event_kind_is_no_nonfinite_loss():
    d = analyze(_with_event(np.array([2.3, 2.1, 1.9, 1.8, 1.7, 1.65, 1.6, 1.58]), "user"))
    assert "nonfinite_loss" not in {f.code for f in d.findings}


@pytest.mark.parametrize("n", [8, 12, 19])
def test_a_nan_in_a_short_log_is_a_nonfinite_loss(n):
    for seed in range(SHORT_SEEDS):
        x = short(n, seed)
        x[n - 3] = np.nan
        d = analyze(curve_run(x))
        (f,) = [f for f in d.findings if f.code == "nonfinite_loss"]
        assert f.step == n - 3 and f.evidence["points_before"] == n - 3
        assert d.curve.label == "diverged"
