"""nonfinite_gradient: the first non-finite gradient and the layer closest to the loss, loss-scaler
skips ignored; each firing case with its healthy twin."""

from __future__ import annotations

import numpy as np
from edge_runs import make_run
from engine_runs import healthy
from grad_norm_runs import noisy, with_grad_norm
from gradients_synth import check
from nonfinite_runs import findings_of, healthy_run


def _nan_grad_in_layers(step, layers):
    def mutate(cols):
        lay = cols["layers"]
        for name in layers:
            rows = (lay["step"] == step) & (np.array(lay["layer"]) == name)
            lay["grad_norm"] = np.where(rows, np.nan, lay["grad_norm"])
            lay["nonfinite"] = np.where(rows, 5, lay["nonfinite"]).astype(np.int32)
    return mutate


def test_nonfinite_gradient_names_the_layer_closest_to_the_loss():
    run = healthy_run(mutate=_nan_grad_in_layers(200, ["layer0.weight", "layer2.weight"]))
    (f,) = findings_of("nonfinite_gradient", run)
    assert f.step == 200 and f.layers == ("layer2.weight",)
    assert f.evidence["layers_nonfinite_at_first_step"] == 2


def test_skipped_steps_of_a_loss_scaler_are_ignored():
    def mutate(cols):
        _nan_grad_in_layers(200, ["layer3.weight"])(cols)
        cols["scalars"]["step_skipped"] = np.zeros(len(cols["scalars"]["step"]), dtype=np.int64)
        cols["scalars"]["step_skipped"][200] = 1
        cols["scalars"]["grad_norm"][200] = np.inf
    assert findings_of("nonfinite_gradient", healthy_run(mutate=mutate)) == []


def test_scale_drop_marks_a_skip_when_step_skipped_is_missing():
    def mutate(cols):
        _nan_grad_in_layers(200, ["layer3.weight"])(cols)
        scale = np.full(len(cols["scalars"]["step"]), 65536.0)
        scale[201:] = 32768.0
        cols["scalars"]["loss_scale"] = scale
    assert findings_of("nonfinite_gradient", healthy_run(mutate=mutate)) == []


def test_a_non_skipped_nonfinite_step_after_skipped_ones_fires():
    def mutate(cols):
        _nan_grad_in_layers(100, ["layer3.weight"])(cols)
        _nan_grad_in_layers(300, ["layer1.weight"])(cols)
        cols["scalars"]["step_skipped"] = (cols["scalars"]["step"] == 100).astype(np.int64)
    (f,) = findings_of("nonfinite_gradient", healthy_run(mutate=mutate))
    assert f.step == 300 and f.layers == ("layer1.weight",) and f.evidence["skipped_steps_ignored"] == 1


def test_events_give_the_earlier_step_and_the_writers_layer():
    cols = healthy(300, 4)
    events = {"step": [123], "time": [1.0], "kind": ["nonfinite_grad"], "layer": ["layer2.weight"],
              "value": [3.0], "message": ["NaN gradient"]}
    run = make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], layers=cols["layers"],
                   events=events)
    (f,) = findings_of("nonfinite_gradient", run)
    assert f.step == 123 and f.layers == ("layer2.weight",) and f.evidence["sources"] == ["events"]


def test_at_the_same_step_the_writers_event_names_the_layer():
    cols = healthy(300, 4)
    _nan_grad_in_layers(100, ["layer1.weight", "layer3.weight"])(cols)
    events = {"step": [100], "time": [1.0], "kind": ["nonfinite_grad"], "layer": ["layer1.weight"],
              "value": [2.0], "message": ["NaN gradient"]}
    run = make_run("r", layer_names=cols["layer_names"], scalars=cols["scalars"], layers=cols["layers"],
                   events=events)
    (f,) = findings_of("nonfinite_gradient", run)
    assert f.layers == ("layer1.weight",) and f.evidence["sources"] == ["events", "layers"]


def test_null_grad_norm_is_not_a_nan_gradient():
    import pyarrow as pa

    cols = healthy(100, 2)
    cols["scalars"]["grad_norm"] = pa.array([None] * 100, pa.float64())
    run = make_run("r", scalars=cols["scalars"])
    assert findings_of("nonfinite_gradient", run) == []


def test_nonfinite_gradient_in_a_dozen_line_log():
    # On the last line: nothing after it shows the step was skipped (a NaN the log goes on from
    # finite was not applied: tests/detectors/test_gradient_pastes_round15.py).
    gn = noisy(np.zeros(12), 12, 0)
    gn[11] = np.nan
    [f] = check("nonfinite_gradient", with_grad_norm(gn))
    assert f.step == 11 and f.evidence["logged_steps"] == 12
