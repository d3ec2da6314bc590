"""nonfinite_loss, nonfinite_gradient and no_validation: each firing case with its healthy twin."""

from __future__ import annotations

import numpy as np
import pytest
from edge_runs import make_run
from engine_runs import healthy

from runlens import analyze
from runlens.analysis import run_detector
from runlens.detectors import REGISTRY, Context


def _run(n=400, *, seed=0, evals=True, mutate=None):
    cols = healthy(n, 4, seed=seed)
    if mutate:
        mutate(cols)
    return make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], layers=cols["layers"],
                    evals=cols["evals"] if evals else None)


def _findings(code, run):
    outcome, found = run_detector(REGISTRY[code](), run, Context())
    assert outcome.state == "ran", outcome
    return found


def _nan_loss_at(step, *, explode):
    def mutate(cols):
        cols["scalars"]["loss"][step:] = np.nan
        if explode:
            cols["scalars"]["grad_norm"][step - 8:step] = np.logspace(1, 4, 8)
    return mutate


@pytest.mark.parametrize("seed", range(5))
def test_explosion_before_nan(seed):
    (f,) = _findings("nonfinite_loss", _run(seed=seed, mutate=_nan_loss_at(250, explode=True)))
    assert f.step == 250 and f.severity == "error"
    assert f.evidence["cause"] == "explosion" and f.evidence["grad_norm_growth"] > 1000


@pytest.mark.parametrize("seed", range(5))
def test_numerical_nan_with_healthy_gradients(seed):
    (f,) = _findings("nonfinite_loss", _run(seed=seed, mutate=_nan_loss_at(250, explode=False)))
    assert f.step == 250
    assert f.evidence["cause"] == "numerical"
    assert "healthy" in f.evidence["why"]
    assert f.evidence["last_finite_loss_step"] == 249


def test_inf_loss_and_recovery_are_reported():
    def mutate(cols):
        cols["scalars"]["loss"][100] = np.inf
    (f,) = _findings("nonfinite_loss", _run(mutate=mutate))
    assert f.evidence["value"] == "+Inf" and f.evidence["finite_again_after"] is True


def test_nonfinite_gradient_norm_before_the_loss_means_explosion():
    def mutate(cols):
        cols["scalars"]["grad_norm"][240] = np.inf
        cols["scalars"]["loss"][245:] = np.nan
    (f,) = _findings("nonfinite_loss", _run(mutate=mutate))
    assert f.evidence["cause"] == "explosion" and f.evidence["first_nonfinite_grad_norm_step"] == 240


def test_nan_at_step_zero_is_unclear_not_a_crash():
    (f,) = _findings("nonfinite_loss", _run(mutate=_nan_loss_at(0, explode=False)))
    assert f.step == 0 and f.evidence["cause"] == "unclear"


def test_finite_loss_is_silent():
    assert _findings("nonfinite_loss", _run()) == []
    assert _findings("nonfinite_gradient", _run()) == []


def _nan_grad_in_layers(step, layers):
    def mutate(cols):
        lay = cols["layers"]
        for name in layers:
            rows = (lay["step"] == step) & (np.array(lay["layer"]) == name)
            lay["grad_norm"] = np.where(rows, np.nan, lay["grad_norm"])
            lay["nonfinite"] = np.where(rows, 5, lay["nonfinite"]).astype(np.int32)
    return mutate


def test_nonfinite_gradient_names_the_layer_closest_to_the_loss():
    run = _run(mutate=_nan_grad_in_layers(200, ["layer0.weight", "layer2.weight"]))
    (f,) = _findings("nonfinite_gradient", run)
    assert f.step == 200 and f.layers == ("layer2.weight",)
    assert f.evidence["layers_nonfinite_at_first_step"] == 2


def test_skipped_steps_of_a_loss_scaler_are_ignored():
    def mutate(cols):
        _nan_grad_in_layers(200, ["layer3.weight"])(cols)
        cols["scalars"]["step_skipped"] = np.zeros(len(cols["scalars"]["step"]), dtype=np.int64)
        cols["scalars"]["step_skipped"][200] = 1
        cols["scalars"]["grad_norm"][200] = np.inf
    assert _findings("nonfinite_gradient", _run(mutate=mutate)) == []


def test_scale_drop_marks_a_skip_when_step_skipped_is_missing():
    def mutate(cols):
        _nan_grad_in_layers(200, ["layer3.weight"])(cols)
        scale = np.full(len(cols["scalars"]["step"]), 65536.0)
        scale[201:] = 32768.0
        cols["scalars"]["loss_scale"] = scale
    assert _findings("nonfinite_gradient", _run(mutate=mutate)) == []


def test_a_non_skipped_nonfinite_step_after_skipped_ones_fires():
    def mutate(cols):
        _nan_grad_in_layers(100, ["layer3.weight"])(cols)
        _nan_grad_in_layers(300, ["layer1.weight"])(cols)
        cols["scalars"]["step_skipped"] = (cols["scalars"]["step"] == 100).astype(np.int64)
    (f,) = _findings("nonfinite_gradient", _run(mutate=mutate))
    assert f.step == 300 and f.layers == ("layer1.weight",) and f.evidence["skipped_steps_ignored"] == 1


def test_events_give_the_earlier_step_and_the_writers_layer():
    cols = healthy(300, 4)
    events = {"step": [123], "time": [1.0], "kind": ["nonfinite_grad"], "layer": ["layer2.weight"],
              "value": [3.0], "message": ["NaN gradient"]}
    run = make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], layers=cols["layers"],
                   events=events)
    (f,) = _findings("nonfinite_gradient", run)
    assert f.step == 123 and f.layers == ("layer2.weight",) and f.evidence["sources"] == ["events"]


def test_at_the_same_step_the_writers_event_names_the_layer():
    cols = healthy(300, 4)
    _nan_grad_in_layers(100, ["layer1.weight", "layer3.weight"])(cols)
    events = {"step": [100], "time": [1.0], "kind": ["nonfinite_grad"], "layer": ["layer1.weight"],
              "value": [2.0], "message": ["NaN gradient"]}
    run = make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], layers=cols["layers"],
                   events=events)
    (f,) = _findings("nonfinite_gradient", run)
    assert f.layers == ("layer1.weight",) and f.evidence["sources"] == ["events", "layers"]


def test_null_grad_norm_is_not_a_nan_gradient():
    import pyarrow as pa

    cols = healthy(100, 2)
    cols["scalars"]["grad_norm"] = pa.array([None] * 100, pa.float64())
    run = make_run("r", scalars=cols["scalars"])
    assert _findings("nonfinite_gradient", run) == []


def test_no_validation_fires_as_info_only_without_evals():
    (f,) = _findings("no_validation", _run(evals=False))
    assert f.severity == "info" and f.step is None
    assert _findings("no_validation", _run()) == []


def test_findings_are_ordered_by_severity_then_cause_first():
    run = _run(evals=False, mutate=_nan_loss_at(250, explode=True))
    found = analyze(run).findings
    ranks = [{"error": 0, "warning": 1, "info": 2}[f.severity] for f in found]
    assert ranks == sorted(ranks)
    # within a severity a cause comes before the symptoms that name it (runlens.detectors._causes)
    position = {f.code: i for i, f in enumerate(found)}
    for i, f in enumerate(found):
        for cause in f.evidence.get("caused_by", ()):
            assert position[cause] < i or found[position[cause]].severity != f.severity, (cause, f.code)
    assert found[-1].code == "no_validation"


def test_a_null_loss_is_missing_not_nan():
    import pyarrow as pa

    cols = healthy(100, 2)
    loss = cols["scalars"]["loss"].tolist()
    loss[40:60] = [None] * 20
    cols["scalars"]["loss"] = pa.array(loss, pa.float64())
    run = make_run("r", scalars=cols["scalars"])
    assert _findings("nonfinite_loss", run) == []
    from runlens.analysis import first_nonfinite_step

    assert first_nonfinite_step(run) is None


def test_loss_blowing_up_before_nan_is_an_explosion_even_with_flat_gradient_norms():
    # Adam-like: clipped, steady gradient norms while the loss itself runs away.
    def mutate(cols):
        cols["scalars"]["loss"][240:250] = np.logspace(0, 3, 10)
        cols["scalars"]["loss"][250:] = np.nan
    (f,) = _findings("nonfinite_loss", _run(mutate=mutate))
    assert f.evidence["cause"] == "explosion" and f.evidence["loss_growth"] > 100


def test_the_writers_activation_culprit_is_in_the_evidence():
    cols = healthy(300, 4)
    cols["scalars"]["loss"][200:] = np.nan
    events = {"step": [200], "time": [1.0], "kind": ["nonfinite_loss"], "layer": ["encoder.norm"],
              "value": [np.nan], "message": ["loss is nan"]}
    run = make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], events=events)
    (f,) = _findings("nonfinite_loss", run)
    assert f.evidence["first_nonfinite_activation"] == "encoder.norm"


def test_bad_parameters_are_reported_in_the_template():
    from runlens.detectors.nonfinite_loss import NonfiniteLoss
    from runlens.errors import UsageError

    with pytest.raises(UsageError, match=r"The 'recent' parameter of NonfiniteLoss must be an int >= 1. Got 0"):
        analyze(_run(), detectors=[NonfiniteLoss(recent=0)])
    with pytest.raises(UsageError, match="explosion_ratio"):
        analyze(_run(), detectors=[NonfiniteLoss(explosion_ratio=2.0)])
