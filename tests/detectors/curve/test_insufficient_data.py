"""insufficient_data: too few finite losses for a shape (runlens/detectors/curve/short.py), and what the
short-log rules still claim."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import make_run

from runlens import analyze
from runlens.detectors.curve import classify
from runlens.testing import build_run


@pytest.mark.parametrize("n", [0, 1, 2, 3, 19])
def test_too_few_points_is_insufficient_data(n):
    v = classify(make_run(np.linspace(2, 1, n)))
    assert v.label == "insufficient_data"
    assert v.evidence["finite_points"] == n


def test_no_scalars_is_insufficient_data():
    run = build_run(meta={}, name="x")
    assert classify(run).label == "insufficient_data"


@pytest.mark.parametrize("seed", range(20))
def test_a_dozen_minibatch_losses_from_the_start_stay_insufficient(seed):
    # The first steps of a run: a slow fall buried in minibatch noise.
    rng = np.random.default_rng(seed)
    x = 2.3 - 0.01 * np.arange(12) + 0.15 * rng.standard_normal(12)
    assert analyze(make_run(x)).curve.label == "insufficient_data"


@pytest.mark.parametrize("seed", range(5))
def test_a_fall_that_has_not_slowed_is_not_yet_settled(seed):
    x = 2.0 - 0.1 * np.arange(12) + 0.003 * np.random.default_rng(seed).standard_normal(12)
    assert analyze(make_run(x)).curve.label == "insufficient_data"


def test_a_log_whose_training_loss_is_all_null_gets_no_shape_and_no_crash():
    import pyarrow as pa

    steps = np.arange(10, dtype=np.int64)
    run = make_run(np.ones(10), val_loss=np.linspace(1, 0.5, 10), val_steps=steps)
    sc = run.scalars.set_column(run.scalars.schema.get_field_index("loss"), "loss",
                                pa.nulls(10, pa.float64()))
    d = analyze(build_run(tables={"scalars": sc, "evals": run.evals}, meta=run.meta, name="synthetic"))
    assert d.curve.label == "insufficient_data", d.curve
    assert not [w for w in d.warnings if "crashed" in w], d.warnings


def test_a_log_without_training_loss_is_insufficient_data_with_a_reason_and_the_rest_is_analysed():
    n = 300
    gn = np.exp(0.1 * np.random.default_rng(0).standard_normal(n))
    gn[200:] = np.inf
    vs = np.arange(0, n, 20)
    d = analyze(make_run(None, scalars={"grad_norm": gn}, val_loss=np.linspace(2, 1, vs.size), val_steps=vs))
    assert d.curve.label == "insufficient_data" and "no training loss" in d.curve.reason
    assert d.curve.evidence["training_loss_logged"] is False
    outcomes = {o.code: o.state for o in d.outcomes}
    assert outcomes["no_validation"] == "ran" and "no_validation" not in [f.code for f in d.findings]
    assert outcomes["loss_spikes"] == "skipped"
    assert "nonfinite_gradient" in [f.code for f in d.findings]  # the gradient norms are still judged
    assert not [o for o in d.outcomes if o.state == "crashed"]
