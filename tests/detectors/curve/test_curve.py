"""The curve classifier itself (runlens/detectors/curve/__init__.py, code ``curve``): ordering,
determinism, parameters, documentation, scale, and a valid label for any series. Each label's
shapes are tested in the file named after it beside this one."""

from __future__ import annotations

import numpy as np
from curve_cases import label, overfit_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loss_synth import healthy, make_run

import runlens.detectors.curve
from runlens.detectors._base import DOC_SECTIONS, parse_doc_sections
from runlens.detectors.curve import CurveClassifier, classify
from runlens.diagnosis import CURVES, jsonable


def test_unsorted_steps_are_ordered_first():
    x = healthy(400, 3)
    order = np.random.default_rng(0).permutation(400)
    run = make_run(x[order], steps=np.arange(400)[order])
    assert classify(run).label == "healthy"


def test_verdict_is_deterministic():
    run = overfit_run(5)
    assert classify(run) == classify(run)


def test_thresholds_are_stored_verbatim():
    c = CurveClassifier(min_points=7, min_drop=0.3)
    assert (c.min_points, c.min_drop) == (7, 0.3)
    assert CurveClassifier(min_points=5).classify(make_run(np.linspace(2, 1, 6))).label != "insufficient_data"


def test_docstring_has_the_detector_sections():
    sections = parse_doc_sections(runlens.detectors.curve.CurveClassifier.__doc__)
    assert all(sections.get(s) for s in DOC_SECTIONS)


def test_a_million_points_classify():
    assert label(healthy(1_000_000, 0)) == "healthy"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=0, max_size=300),
       st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=0, max_size=30))
def test_any_series_gets_a_valid_deterministic_label(loss, val):
    x = np.array(loss, dtype=float)
    vs = np.arange(len(val), dtype=np.int64) * 10
    run = make_run(x, val_loss=np.array(val, dtype=float), val_steps=vs)
    with np.errstate(all="ignore"):
        v = classify(run)
        again = classify(run)
        # repr: evidence may hold NaN (a variance ratio of two zero variances), and NaN != NaN.
        assert v.label in CURVES and (v.label, v.reason, repr(v.evidence)) == (again.label, again.reason,
                                                                               repr(again.evidence))
    jsonable(v.evidence)
