"""Short logs (4-19 points) carry the claims a long run would get: stuck, spike, NaN event, validation rise."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from loss_synth import make_run

from runlens.analysis import analyze
from runlens.io.run import Run


def loud(d):
    return {f.code for f in d.findings if f.severity in ("warning", "error")}


@pytest.mark.parametrize("n", [4, 10, 19])
def test_a_loss_printed_as_the_same_value_is_stuck_at_chance(n):
    d = analyze(make_run(np.full(n, 2.3026)))
    assert d.curve.label == "underfitting" and d.curve.evidence["n_points"] == n
    assert {"underfitting", "loss_at_chance"} <= loud(d)
    assert d.curve.evidence["chance_classes"] == 10


def test_a_loss_stuck_within_a_small_band_without_trend_is_stuck_at_its_stated_k():
    x = 1.0986 + 0.0004 * np.array([1, -1, 0, 2, -2, 1, 0, -1, 1, 0])
    d = analyze(make_run(x, meta={"name": "s", "config": {"num_classes": 3}}))
    assert d.curve.label == "underfitting" and d.curve.evidence["chance_source"] == "config.num_classes"


def test_silent_twin_a_short_log_that_falls_is_not_stuck():
    d = analyze(make_run(np.array([2.30, 2.10, 1.90, 1.70, 1.60, 1.52, 1.47, 1.44, 1.42, 1.41])))
    assert d.curve.label != "underfitting" and "loss_at_chance" not in loud(d)


def test_silent_twin_a_flat_but_trending_band_is_not_stuck():
    # 0.8% of the level, but every step goes down: progress, slowly.
    x = 1.0 - 0.0009 * np.arange(10)
    assert analyze(make_run(x)).curve.evidence.get("kind") != "short_stuck"


def test_a_spike_in_four_points_is_a_loss_spike_with_its_point_count():
    d = analyze(make_run(np.array([1.0, 12.0, 0.98, 0.97])))
    (f,) = [f for f in d.findings if f.code == "loss_spikes"]
    assert f.evidence["n_points"] == 4


def _with_event(loss, kind):
    run = make_run(loss)
    steps = np.array([3], dtype=np.int64)
    events = pa.table({"step": steps, "time": steps.astype(float), "kind": [kind],
                       "message": ["Warning: NaN or Inf found in input tensor."], "layer": [None]})
    return Run(path=run.path, meta=run.meta, status=run.status, scalars=run.scalars, events=events)


def test_a_nonfinite_loss_event_with_a_finite_printed_loss_is_a_nonfinite_loss():
    d = analyze(_with_event(np.array([2.3, 2.1, 1.9, 1.8, 1.7, 1.65, 1.6, 1.58]), "nonfinite_loss"))
    (f,) = [f for f in d.findings if f.code == "nonfinite_loss"]
    assert f.severity == "error" and f.step == 3 and f.evidence["cause"] == "event"


def test_silent_twin_another_event_kind_is_no_nonfinite_loss():
    d = analyze(_with_event(np.array([2.3, 2.1, 1.9, 1.8, 1.7, 1.65, 1.6, 1.58]), "user"))
    assert "nonfinite_loss" not in {f.code for f in d.findings}
