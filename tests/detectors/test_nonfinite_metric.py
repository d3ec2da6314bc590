"""``nonfinite_metric``: a metric logged beside a finite loss that is NaN/Inf to the end."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from loss_synth import healthy, make_run
from verdict_fixtures import TRUTH, analysed, codes

from runlens.analysis import run_detector
from runlens.detectors import Context
from runlens.detectors.nonfinite_metric import NonfiniteMetric
from runlens.testing import build_run


def found(run):
    outcome, findings = run_detector(NonfiniteMetric(), run, Context())
    assert outcome.state == "ran", outcome
    return findings


def metric(n, *bad):
    v = np.linspace(1.0, 0.2, n)
    v[list(bad)] = np.nan
    return v


def test_a_metric_that_broke_and_stayed_broken_is_an_error():
    (f,) = found(make_run(healthy(200, 0), scalars={"kl": metric(200, *range(150, 200))}))
    assert f.severity == "error" and f.step == 150
    assert f.evidence["metric"] == "kl" and f.evidence["nonfinite_lines"] == 50 and f.evidence["finite_before"] == 150


def test_a_metric_never_finite_is_a_warning():
    (f,) = found(make_run(healthy(50, 0), scalars={"entropy": np.full(50, np.inf)}))
    assert f.severity == "warning" and f.evidence["finite_before"] == 0 and f.evidence["lines"] == 50


def test_the_worst_metric_is_named_and_the_others_listed():
    (f,) = found(make_run(healthy(100, 0), scalars={"kl": metric(100, *range(90, 100)),
                                                    "reward": np.full(100, np.nan)}))
    assert f.evidence["metric"] == "kl" and set(f.evidence["metrics"]) == {"kl", "reward"}


def test_silent_twin_a_nan_that_later_lines_recover_from():
    # cxxnet prints train-error:-nan when evaluate runs twice after an epoch: harmless, and it recovers.
    assert found(make_run(healthy(100, 0), scalars={"acc": metric(100, 10, 40, 70)})) == []


def test_silent_twin_two_nan_lines_at_the_end_are_fewer_than_min_lines():
    assert found(make_run(healthy(100, 0), scalars={"acc": metric(100, 98, 99)})) == []


@pytest.mark.parametrize("name", ["eta", "tokens_per_s", "time_per_step", "samples_per_second", "best_acc",
                                  "min_reward"])
def test_silent_twin_clocks_throughputs_and_records_of_an_extreme(name):
    assert found(make_run(healthy(100, 0), scalars={name: np.full(100, np.inf)})) == []


def test_silent_twin_a_loss_term_is_left_to_nonfinite_loss():
    assert found(make_run(healthy(100, 0), scalars={"loss_cls": metric(100, *range(50, 100))})) == []


def test_silent_twin_nan_only_where_the_loss_is_nan_too():
    x = healthy(100, 0)
    x[60:] = np.nan
    assert found(make_run(x, scalars={"acc": metric(100, *range(60, 100))})) == []


def test_silent_twin_nulls_are_not_logged_not_nonfinite():
    # Parts that lack a column are filled with null by the reader: that is "not logged".
    col = pa.array([0.5] * 50 + [None] * 50, type=pa.float64())
    run = build_run(loss=pa.array(healthy(100, 0)), scalars={"acc": col}, meta={"name": "synthetic"})
    assert run.scalars.column("acc").null_count == 50
    assert found(run) == []


# -- a real recorded run: an entropy computed as -(p * log p) goes NaN once a probability underflows to 0 --


def test_recorded_run_whose_entropy_goes_nan_beside_a_finite_loss():
    # Truth measured in torch while training (tests/fixtures/verdicts/generate.py): the entropy's last 99
    # steps are NaN and every loss is finite.
    truth = TRUTH["metric_nan"]
    assert truth["label"] == "nonfinite_metric" and truth["loss_all_finite"]
    (f,) = [f for f in analysed("metric_nan").findings if f.code == "nonfinite_metric"]
    assert f.severity == "error" and f.evidence["metric"] == "entropy"
    assert f.evidence["nonfinite_lines"] == truth["entropy_nonfinite_tail"]


def test_recorded_twin_with_a_finite_entropy_is_silent():
    assert TRUTH["metric_ok"]["label"] == "finite_metric"
    assert "nonfinite_metric" not in codes(analysed("metric_ok"))
