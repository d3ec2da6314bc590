"""healthy: curves of every length, scale, noise and schedule that fell and settled stay healthy."""

from __future__ import annotations

import numpy as np
import pytest
from curve_cases import SHORT_SEEDS, label, short
from loss_synth import healthy, make_run

from runlens import analyze
from runlens.detectors.curve import classify


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


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_a_loss_that_fell_and_settled_stays_healthy(seed):
    assert classify(make_run(healthy(3000, seed, noise=0.12))).label == "healthy"


def _epochs(n: int, seed: int, *, start: float = 0.8, floor: float = 0.2, noise: float = 0.005) -> np.ndarray:
    """Per-epoch averages: an exponential fall to ``floor`` with little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return floor + (start - floor) * np.exp(-t / 2.0) + noise * rng.standard_normal(n)


@pytest.mark.parametrize("seed", range(5))
def test_a_dozen_epochs_that_fall_and_slow_down_are_healthy(seed):
    d = analyze(make_run(_epochs(12, seed)))
    assert d.curve.label == "healthy" and d.curve.evidence["kind"] == "short_settled", d.curve


def loud(d) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in d.findings if f.severity != "info"]


@pytest.mark.parametrize("n", [8, 12, 19])
def test_silent_twin_a_clean_short_log_of_a_whole_healthy_curve_is_healthy_and_nothing_louder(n):
    # A whole healthy curve seen at n points: it falls nearly monotonically and slows down,
    # the one shape a short log can show (a dozen minibatch steps cannot: test_insufficient_data).
    for seed in range(SHORT_SEEDS):
        d = analyze(make_run(short(n, seed)))
        assert d.curve.label == "healthy" and d.curve.evidence["kind"] == "short_settled", d.curve
        assert f"in {n} points" in d.curve.reason
        assert loud(d) == [], seed
