"""``restarted_from_scratch``: a later attempt whose loss starts again at the first attempt's initial level."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, make_run
from verdict_fixtures import TRUTH, analysed, codes

from runlens.analysis import run_detector
from runlens.detectors import Context
from runlens.detectors.restarted_from_scratch import RestartedFromScratch


def meta(*first_steps):
    return {"name": "synthetic", "attempts": [{"started_at": None, "first_step": s} for s in first_steps]}


def found(run):
    outcome, findings = run_detector(RestartedFromScratch(), run, Context())
    assert outcome.state == "ran", outcome
    return findings


@pytest.mark.parametrize("seed", range(5))
def test_a_second_attempt_starting_at_the_initial_level_fires(seed):
    x = np.concatenate([healthy(400, seed)[:250], healthy(400, seed + 100)[:150]])
    (f,) = found(make_run(x, meta=meta(0, 250)))
    assert f.severity == "error" and f.step == 250 and f.evidence["given_back"] > 0.5


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_second_attempt_that_resumes_at_the_reached_level(seed):
    x = healthy(400, seed)
    assert found(make_run(x, meta=meta(0, 250))) == []


def test_silent_twin_one_attempt_with_the_same_curve():
    x = np.concatenate([healthy(400, 0)[:250], healthy(400, 100)[:150]])
    assert found(make_run(x, meta=meta(0))) == []


def test_an_attempt_whose_step_counter_went_back_to_the_start_fires():
    (f,) = found(make_run(healthy(300, 0), meta=meta(0, 0)))
    assert f.evidence["kind"] == "steps_restarted"


def test_recorded_runs_restarted_and_resumed():
    assert TRUTH["restarted"]["label"] == "restarted_from_scratch" and TRUTH["resumed"]["label"] == "resumed"
    assert "restarted_from_scratch" in codes(analysed("restarted"), "error")
    assert "restarted_from_scratch" not in codes(analysed("resumed"))
