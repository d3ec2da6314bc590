"""late_loss_variance: noise that does not shrink late; silent while it shrinks with the loss."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, make_run, noise, random_walk

from runlens.detectors import Context
from runlens.detectors.curve import classify
from runlens.detectors.late_loss_variance import LateLossVariance


def findings(x, det=None):
    run = make_run(x)
    return (det or LateLossVariance()).check(run, Context(curve=classify(run)))


def noisier_late(n: int, seed: int, *, jump_at: float = 0.7) -> np.ndarray:
    """The learning rate is raised late: the loss keeps falling on average but
    jumps from step to step far more than before."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = 0.3 + 2.0 * np.exp(-6 * t)
    sd = np.where(t > jump_at, 0.3, 0.05)
    return np.where(t > jump_at, 1.3, 1.0) * base * np.exp(sd * rng.standard_normal(n))


def growing_noise(n: int, seed: int) -> np.ndarray:
    """Noise that grows through the run and steeply in its last quarter (a rate warmed up too far)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    return (0.3 + 2.0 * np.exp(-6 * t)) * np.exp((0.05 + 0.3 * t + 0.4 * (t > 0.75) * (t - 0.75) / 0.25)
                                                  * rng.standard_normal(n))


def confident_classifier(n: int, seed: int) -> np.ndarray:
    """A healthy classifier's batch-of-4 loss: its noise grows linearly as it grows confident and its
    per-sample losses grow heavier-tailed, 2-3x the variance the falling level predicts late."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    return (0.3 + 2.0 * np.exp(-6 * t)) * np.exp((0.05 + 0.3 * t) * rng.standard_normal(n))


@pytest.mark.parametrize("n", [400, 5000, 100_000])
def test_fires_when_late_noise_grows(n):
    for seed in range(10):
        # A gradual growth is compared with the noisiest earlier window, so
        # it takes more than a few hundred steps to be significant.
        for x in (noisier_late(n, seed), growing_noise(n, seed))[: 1 if n < 1000 else 2]:
            (f,) = findings(x)
            assert f.code == "late_loss_variance" and f.severity == "warning"
            assert f.evidence["variance_ratio"] >= 4 and f.evidence["levene_p"] < 1e-3
            assert f.step >= 0.7 * n


@pytest.mark.parametrize("n", [5000, 100_000])
def test_silent_twin_noise_growing_as_a_classifier_grows_confident(n):
    for seed in range(10):
        assert findings(confident_classifier(n, seed)) == []


@pytest.mark.parametrize("n", [100, 600, 5000])
def test_healthy_twin_is_silent(n):
    for seed in range(100):
        x = healthy(n, seed, noise=(0.02, 0.1, 0.3)[seed % 3], schedule=("none", "step", "cosine")[seed % 3],
                    warmup=seed % 2 == 0, scale=10.0 ** (seed % 7 - 3))
        assert findings(x) == [], seed


def test_long_healthy_run_is_silent():
    assert findings(healthy(200_000, 1, noise=0.2, schedule="cosine", warmup=True)) == []


def test_noise_that_stays_constant_while_the_loss_stays_is_silent():
    # Nothing was learned, so nothing had to shrink: that is underfitting.
    for seed in range(20):
        assert findings(noise(3000, seed, sd=0.1)) == []
        assert findings(random_walk(3000, seed)) == []


def test_quiet_plateau_then_normal_training_is_silent():
    # Tiny noise while stuck, ordinary noise afterwards: not a late problem.
    rng = np.random.default_rng(0)
    t = np.arange(600) / 600
    x = np.where(t < 0.5, 1.386 * np.exp(0.002 * rng.standard_normal(600)),
                 (0.5 + 0.9 * np.exp(-10 * (t - 0.5))) * np.exp(0.1 * rng.standard_normal(600)))
    assert findings(x) == []


def test_parameters_are_stored_and_used():
    det = LateLossVariance(min_ratio=1e9)
    assert det.min_ratio == 1e9
    assert findings(noisier_late(2000, 0), det) == []


@pytest.mark.parametrize("x", [np.array([]), np.full(300, np.nan), np.ones(500), np.zeros(500)])
def test_degenerate_input_is_silent(x):
    from runlens.analysis import run_detector

    run = make_run(x)
    outcome, found = run_detector(LateLossVariance(), run, Context(curve=classify(run)))
    assert found == [] and outcome.state in ("ran", "skipped")
    assert outcome.state == "ran" or outcome.reason


def late_noise_times(n: int, seed: int, factor: float, *, base_noise: float = 0.01) -> np.ndarray:
    """A healthy fall whose minibatch noise (log-sd) is ``factor`` times the mid-run level
    for the last quarter (a batch that shrank, an accumulation setting lost)."""
    rng = np.random.default_rng(seed + 999)
    sd = np.full(n, base_noise)
    sd[int(0.75 * n):] *= factor
    return healthy(n, seed, noise=0.0) * np.exp(sd * rng.standard_normal(n))


@pytest.mark.parametrize("n", [300, 3000])
@pytest.mark.parametrize("factor", [6, 9])
@pytest.mark.parametrize("base_noise", [0.005, 0.03])
def test_fires_when_late_noise_is_six_to_nine_times_the_mid_run_level(n, factor, base_noise):
    hits = sum(bool(findings(late_noise_times(n, seed, factor, base_noise=base_noise))) for seed in range(40))
    assert hits >= 38, hits


@pytest.mark.parametrize("n", [300, 3000])
@pytest.mark.parametrize("base_noise", [0.005, 0.03])
def test_silent_twin_the_same_run_with_steady_noise(n, base_noise):
    hits = sum(bool(findings(late_noise_times(n, seed, 1.0, base_noise=base_noise))) for seed in range(40))
    assert hits == 0, hits


def jump_and_recover(n: int, seed: int) -> np.ndarray:
    """Falls to 0.05 by 70% of the run, jumps to 0.8 and falls back toward 0.4 with batch-of-two noise:
    the last quarter falls, but from a level far above the one the run had reached."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = np.where(t < 0.75, 0.05 + 1.4 * np.exp(-8 * t), 0.4 + 0.4 * np.exp(-12 * (t - 0.75)))
    return base * np.exp(np.where(t < 0.75, 0.1, 0.5) * rng.standard_normal(n))


@pytest.mark.parametrize("seed", range(5))
def test_fires_when_the_late_fall_is_a_recovery_from_a_jump(seed):
    (f,) = findings(jump_and_recover(500, seed))
    assert f.evidence["late_level"] > 5 * f.evidence["reference_level"] or f.evidence["variance_ratio"] >= 2



@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_late_fall_to_new_lows_is_still_learning(seed):
    # The same late fall and noise, but from a plateau the run had not left before: the last quarter
    # reaches new lows, so the run has not reached "late" yet, as before.
    rng = np.random.default_rng(seed)
    t = np.arange(500) / 500
    base = np.where(t < 0.75, 1.0 + 0.4 * np.exp(-8 * t), 0.4 + 0.6 * np.exp(-12 * (t - 0.75)))
    x = base * np.exp(np.where(t < 0.75, 0.1, 0.5) * rng.standard_normal(500))
    assert findings(x) == []
