"""The curve verdict on synthetic curves: each label fires on its shape and
healthy curves of every length, scale, noise and schedule stay healthy."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loss_synth import chaotic, diverging, healthy, make_run, oscillating

import runlens.detectors.curve
from runlens.detectors._base import DOC_SECTIONS, parse_doc_sections
from runlens.detectors.curve import CurveClassifier, chance_level, classify
from runlens.diagnosis import CURVES, jsonable
from runlens.io.run import Run


def label(x, **kw) -> str:
    return classify(make_run(x, **kw)).label


# -- healthy ------------------------------------------------------------------

@pytest.mark.parametrize("n", [50, 300, 3000])
@pytest.mark.parametrize("schedule", ["none", "step", "cosine"])
def test_healthy_curves_are_healthy_for_every_seed(n, schedule):
    for seed in range(100):
        x = healthy(n, seed, noise=(0.02, 0.1, 0.3)[seed % 3], schedule=schedule, warmup=seed % 2 == 0,
                    scale=10.0 ** (seed % 7 - 3))
        v = classify(make_run(x))
        assert v.label == "healthy", (seed, v.reason, dict(v.evidence))


@pytest.mark.parametrize("n", [20_000, 200_000])
def test_long_healthy_curves_are_healthy(n):
    for seed in range(4):
        x = healthy(n, seed, noise=0.15, schedule=("none", "step", "cosine", "none")[seed], warmup=True,
                    scale=(1e-3, 1.0, 1e3, 7.0)[seed])
        assert label(x) == "healthy"


def test_healthy_with_validation_that_follows_is_healthy():
    for seed in range(20):
        x = healthy(2000, seed)
        vs = np.arange(0, 2000, 100)
        v = healthy(2000, seed + 1000, noise=0.005)[vs] * 1.1
        assert label(x, val_loss=v, val_steps=vs) == "healthy"


# -- insufficient data ------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 3, 19])
def test_too_few_points_is_insufficient_data(n):
    v = classify(make_run(np.linspace(2, 1, n)))
    assert v.label == "insufficient_data"
    assert v.evidence["finite_points"] == n


def test_a_short_run_that_explodes_is_diverged_not_insufficient():
    x = 1.5 * np.geomspace(1, 1e8, 13) * np.exp(0.05 * np.random.default_rng(0).standard_normal(13))
    v = classify(make_run(x))
    assert v.label == "diverged" and v.evidence["points"] == 13
    assert label(np.linspace(2, 1, 13)) == "insufficient_data"


def test_no_scalars_is_insufficient_data():
    run = Run(path="x", meta={}, status="finished")
    assert classify(run).label == "insufficient_data"


# -- diverged -----------------------------------------------------------------------

def test_nan_loss_is_diverged_whatever_came_before():
    x = healthy(500, 0)
    x[300] = np.nan
    v = classify(make_run(x))
    assert v.label == "diverged"
    assert v.evidence["first_nonfinite_step"] == 300


def test_inf_on_the_first_step_is_diverged():
    assert label(np.array([np.inf, 1.0, 1.0])) == "diverged"
    assert label(np.full(10, np.nan)) == "diverged"


def test_nan_on_a_step_the_loss_scaler_skipped_is_not_divergence():
    x = healthy(500, 1)
    x[100] = np.inf
    run = make_run(x)
    skipped = np.zeros(500, dtype=np.int64)
    skipped[100] = 1
    run = Run(path="x", meta={}, status="finished",
              scalars=run.scalars.append_column("step_skipped", pa.array(skipped)))
    assert classify(run).label == "healthy"


@pytest.mark.parametrize("n", [60, 400, 5000, 100_000])
def test_loss_growing_without_bound_is_diverged(n):
    for seed in range(10):
        assert label(diverging(n, seed)) == "diverged"


def test_loss_that_rises_back_above_its_start_is_diverged():
    for seed in range(20):
        t = np.linspace(0, 1, 800)
        x = (1.0 - 0.6 * np.sin(np.pi * np.minimum(t / 0.6, 1)) + 2.0 * np.maximum(t - 0.6, 0))
        x = x * np.exp(0.03 * np.random.default_rng(seed).standard_normal(800))
        assert label(x) == "diverged"


@pytest.mark.parametrize("n", [3000, 100_000])
def test_blow_up_in_the_last_steps_is_diverged(n):
    for seed in range(10):
        x = healthy(n, seed)
        k = int(0.03 * n)
        x[-k:] *= np.geomspace(1, 1e3, k)
        assert label(x) == "diverged"


# -- unstable --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [300, 3000, 50_000])
def test_oscillating_loss_is_unstable(n):
    labels = [label(oscillating(n, seed)) for seed in range(20)]
    assert labels.count("unstable") >= 19, labels


@pytest.mark.parametrize("n", [3000, 50_000])
def test_chaotic_loss_is_unstable(n):
    labels = [label(chaotic(n, seed)) for seed in range(20)]
    assert labels.count("unstable") >= 15, labels


def test_validation_jitter_small_against_its_fall_is_not_unstable():
    # A small validation set jitters by 2-3% of its level, but that is
    # nothing next to how far it fell: healthy.
    rng = np.random.default_rng(0)
    vs = np.arange(0, 2000, 50)
    v = (0.5 + 2.0 * np.exp(-5 * vs / 2000)) * np.exp(0.025 * rng.standard_normal(vs.size))
    assert label(healthy(2000, 0), val_loss=v, val_steps=vs) == "healthy"


def test_validation_jump_right_after_a_training_spike_is_the_spike_not_instability():
    rng = np.random.default_rng(1)
    x = healthy(1200, 1)
    vs = np.arange(24, 1200, 25)
    v = (0.5 + 1.0 * np.exp(-5 * vs / 1200)) * np.exp(0.003 * rng.standard_normal(vs.size))
    for step in (700, 900, 1100):
        x[step] *= 8  # a corrupt batch...
        v[np.searchsorted(vs, step)] *= 1.5  # ...throws the next evaluation off too
    assert label(x, val_loss=v, val_steps=vs) == "healthy"


def test_noisy_validation_on_a_smooth_training_loss_is_not_unstable():
    # Evaluation noise alone (a small eval set) says nothing about the optimization.
    for seed in range(20):
        rng = np.random.default_rng(seed)
        x = healthy(1000, seed)
        vs = np.arange(0, 1000, 40)
        v = 1.0 * np.exp(0.3 * rng.standard_normal(vs.size))
        verdict = classify(make_run(x, val_loss=v, val_steps=vs))
        assert verdict.label == "healthy", (seed, verdict.reason)


def test_validation_that_keeps_jumping_with_a_wandering_training_loss_is_unstable():
    for seed in range(20):
        rng = np.random.default_rng(seed)
        n = 1000
        t = np.arange(n) / n
        # falls, then its level wanders (momentum oscillation) on top of minibatch noise
        x = (0.5 + 1.8 * np.exp(-8 * t)) * np.exp(0.15 * np.sin(2 * np.pi * t * 9) * (t > 0.3)
                                                  + 0.05 * rng.standard_normal(n))
        vs = np.arange(0, n, 40)
        v = 0.8 * np.exp(0.25 * rng.standard_normal(vs.size))
        verdict = classify(make_run(x, val_loss=v, val_steps=vs))
        assert verdict.label == "unstable", (seed, verdict.reason)


# -- overfitting ----------------------------------------------------------------------------

def overfit_run(seed: int, n: int = 2000, every: int = 50, rise: float = 0.5):
    rng = np.random.default_rng(seed)
    x = healthy(n, seed, floor=0.01)
    vs = np.arange(every, n + 1, every) - 1
    t = vs / n
    v = 0.4 + 0.6 * np.exp(-10 * t) + rise * np.maximum(t - 0.3, 0) ** 1.2
    v = v * np.exp(0.01 * rng.standard_normal(vs.size))
    return make_run(x, val_loss=v, val_steps=vs)


def test_validation_rising_after_its_minimum_is_overfitting():
    for seed in range(30):
        v = classify(overfit_run(seed))
        assert v.label == "overfitting", (seed, v.reason)
        assert 0.2 * 2000 < v.evidence["val_min_step"] < 0.5 * 2000


def test_overfitting_needs_enough_evaluations_after_the_minimum():
    run = overfit_run(0, n=300, every=60)  # 5 evals: too few after the minimum
    assert classify(run).label != "overfitting"


def test_flat_noisy_validation_is_not_overfitting():
    for seed in range(50):
        rng = np.random.default_rng(seed)
        vs = np.arange(0, 3000, 100)
        v = 0.5 * np.exp(0.003 * rng.standard_normal(vs.size))
        assert label(healthy(3000, seed), val_loss=v, val_steps=vs) == "healthy"


# -- underfitting -------------------------------------------------------------------------

@pytest.mark.parametrize("k,config", [(2, {}), (4, {}), (10, {}), (100, {"classes": 100})])
def test_loss_pinned_at_ln_k_is_underfitting_at_chance(k, config):
    for seed in range(10):
        rng = np.random.default_rng(seed)
        x = math.log(k) * (1 + 0.003 * rng.standard_normal(500)) + 0.02 * np.exp(-np.arange(500) / 20)
        v = classify(make_run(x, meta={"config": config}))
        assert v.label == "underfitting"
        assert v.evidence["chance_classes"] == k
        assert f"ln({k})" in v.reason


def test_slow_barely_moving_loss_is_underfitting_and_not_chance():
    rng = np.random.default_rng(0)
    x = 1.0 - 0.05 * np.arange(1000) / 1000 + 0.01 * rng.standard_normal(1000)
    v = classify(make_run(x))
    assert v.label == "underfitting"
    assert "chance_classes" not in v.evidence


def test_plateau_after_progress_is_healthy_not_underfitting():
    for seed in range(20):
        x = healthy(2000, seed, rate=30)  # falls fast, then flat for most of the run
        assert label(x) == "healthy"


def test_chance_level_matches_ln_k_only_within_tolerance():
    assert chance_level(math.log(2))["chance_classes"] == 2
    assert chance_level(2.3026)["chance_classes"] == 10
    assert chance_level(0.5) is None
    assert chance_level(-1.0) is None
    assert chance_level(float("nan")) is None
    # Between ln 33 and ln 34: ambiguous without the config, exact with it.
    assert chance_level(3.511) is None
    assert chance_level(3.511, classes=33)["chance_classes"] == 33


def test_chance_uses_the_number_of_classes_in_the_config():
    rng = np.random.default_rng(0)
    x = math.log(500) + 0.002 * rng.standard_normal(400)
    v = classify(make_run(x, meta={"config": {"num_classes": 500}}))
    assert v.label == "underfitting" and v.evidence["chance_classes"] == 500


# -- contract -----------------------------------------------------------------------------------

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
