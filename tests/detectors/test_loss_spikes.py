"""loss_spikes: isolated upward spikes that recover, and silence on their healthy twins."""

from __future__ import annotations

import numpy as np
import pytest
from curve_cases import SHORT_SEEDS, short
from loss_synth import chaotic, healthy, make_run, noise, oscillating, random_walk

from runlens import analyze
from runlens.detectors import Context
from runlens.detectors.curve import classify
from runlens.detectors.loss_spikes import LossSpikes
from runlens.stats.spikes import rolling_spikes


def findings(x, det=None):
    run = make_run(x)
    return (det or LossSpikes()).check(run, Context(curve=classify(run)))


def spiky(n: int, seed: int, k: int = 4, mult: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    x = healthy(n, seed)
    rng = np.random.default_rng(seed + 100)
    slots = np.arange(n // 10, n - 30, 25)  # spikes at least 25 steps apart: separate events
    idx = np.sort(rng.choice(slots, k, replace=False))
    x[idx] *= mult
    return x, idx


@pytest.mark.parametrize("n", [200, 3000, 100_000])
def test_fires_on_spikes_that_recover(n):
    for seed in range(10):
        x, idx = spiky(n, seed)
        (f,) = findings(x)
        assert f.code == "loss_spikes" and f.severity == "warning"
        assert set(f.evidence["steps"]) == set(idx.tolist())
        assert f.step == idx[0]
        assert all(z >= 6 for z in f.evidence["z_scores"])


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_healthy_twin_is_silent(scale):
    for seed in range(100):
        x = healthy((100, 600, 3000)[seed % 3], seed, noise=(0.02, 0.1, 0.3)[seed % 3],
                    schedule=("none", "step", "cosine")[seed % 3], warmup=seed % 2 == 0, scale=scale)
        assert findings(x) == [], seed


def test_long_healthy_run_is_silent():
    assert findings(healthy(200_000, 0, noise=0.2, schedule="step", warmup=True)) == []


def test_silent_on_noise_and_random_walks():
    for seed in range(20):
        assert findings(noise(2000, seed)) == []
        assert findings(random_walk(2000, seed)) == []


def test_a_jump_that_stays_up_is_not_a_spike():
    x = healthy(2000, 0)
    x[1500:] *= 5
    assert findings(x) == []


def test_heavy_tailed_minibatch_noise_is_not_spikes():
    # A few hard examples in a small batch: big z-scores are routine there.
    for seed in range(20):
        rng = np.random.default_rng(seed)
        base = healthy(3000, seed, noise=0.05, floor=0.01) * 2.3
        x = base + rng.poisson(0.3, 3000) * 5 / 32
        assert findings(x) == []


def test_spikes_inside_an_unstable_curve_still_need_recovery():
    for seed in range(5):
        for x in (oscillating(2000, seed), chaotic(2000, seed)):
            for s in rolling_spikes(x, z_min=6, tail_factor=3.6, alpha=0.01, min_rise=0.25, min_progress=0.05,
                                    max_width=10, recovery=20):
                assert np.median(x[s["index"] + 1:s["index"] + 21]) <= s["level"] + 0.5 * (s["value"] - s["level"])


def test_spike_on_the_loss_scale_of_negative_losses():
    x = -5 + healthy(2000, 0)
    x[1000] += 10
    (f,) = findings(x)
    assert f.evidence["steps"] == [1000]


def test_parameters_are_stored_and_used():
    det = LossSpikes(z_min=1e6)
    assert det.z_min == 1e6
    x, _ = spiky(1000, 0)
    assert findings(x, det) == []


@pytest.mark.parametrize("x", [np.array([]), np.array([1.0, np.nan, 2.0]), np.full(100, np.nan),
                               np.ones(500), np.zeros(500)])
def test_degenerate_input_is_silent(x):
    from runlens.analysis import run_detector

    outcome, found = run_detector(LossSpikes(), make_run(x), Context())
    assert found == [] and outcome.state in ("ran", "skipped")


def test_a_spike_in_four_points_is_a_loss_spike_with_its_point_count():
    d = analyze(make_run(np.array([1.0, 12.0, 0.98, 0.97])))
    (f,) = [f for f in d.findings if f.code == "loss_spikes"]
    assert f.evidence["n_points"] == 4


@pytest.mark.parametrize("ratio", [10, 1000])
def test_a_spike_in_a_short_log_is_found_by_its_robust_ratio(ratio):
    for seed in range(SHORT_SEEDS):
        x = short(12, seed)
        x[6] *= ratio
        d = analyze(make_run(x))
        (f,) = [f for f in d.findings if f.code == "loss_spikes"]
        assert f.step == 6 and f.evidence["short_log"] is True and f.evidence["points"] == 12
        assert d.curve.label in ("insufficient_data", "healthy")


def test_silent_twin_a_short_log_with_a_two_fold_bump_is_no_spike():
    # below the short-log ratio (3x): minibatch noise of a small batch can do that
    for seed in range(SHORT_SEEDS):
        x = short(12, seed)
        x[6] *= 1.8
        assert "loss_spikes" not in [f.code for f in analyze(make_run(x)).findings]


def test_silent_twin_a_short_log_reaching_exactly_zero_has_no_spike_from_its_ripples():
    # Train loss of a fine-tune that memorizes: a 1.2x ripple, then exactly 0 (printed 0.0000).
    x = np.array([0.166, 0.167, 0.170, 0.113, 0.128, 0.122, 0.120, 0.078, 0.029, 0.008, 0.004, 0.0035,
                  0.0007, 0.0001, 0.0001, 0.0001, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert "loss_spikes" not in [f.code for f in analyze(make_run(x)).findings]
    x[5] = 0.9  # a real spike among positive neighbours: 7x
    (f,) = [f for f in analyze(make_run(x)).findings if f.code == "loss_spikes"]
    assert f.step == 5


def _printed_every_50(seed: int, spike_at: int | None) -> np.ndarray:
    """60 printed losses of a fast early fall (3%/print at first) with 2% noise: the trend moves
    more within a window of 11 than the noise does."""
    rng = np.random.default_rng(seed)
    j = np.arange(60)
    x = (0.34 + 2.11 * np.exp(-j / 10)) * np.exp(rng.normal(0, 0.02, j.size))
    if spike_at is not None:
        x[spike_at] = 10 * 0.5 * (x[spike_at - 1] + x[spike_at + 1])
    return x


@pytest.mark.parametrize("seed", range(5))
def test_a_lone_spike_on_a_fast_falling_printed_curve_is_found(seed):
    """The centred median of a locally monotone stretch is its middle point, so most residuals
    are exactly 0: the noise must come from second differences, or every wiggle is a spike and
    the run's own tail bound hides the real one."""
    x = _printed_every_50(seed, spike_at=41)
    (f,) = findings(x)
    assert f.evidence["steps"] == [41]


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_the_same_printed_curve_without_the_spike(seed):
    assert findings(_printed_every_50(seed, spike_at=None)) == []
