"""Blow-ups the curve verdict and the learning-rate detector must name, each with a silent twin:
a jump that lands above the start (diverged) vs one that stays below it (unstable); a log that
ends on 1-2 exploded values with the gradient norm exploding too (diverged) vs an ordinary final
spike; a curve that went wrong right after a step raise of the learning rate (learning_rate_too_high,
whatever the step sizes) vs the same curve under a warmup."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, jump_no_recovery, make_run

from runlens.detectors import Context
from runlens.detectors._base import Skip
from runlens.detectors.curve import classify
from runlens.detectors.learning_rate_too_high import LearningRateTooHigh

SEEDS = 10


@pytest.mark.parametrize("n", [300, 3000])
def test_a_jump_that_lands_above_the_start_is_diverged_and_one_below_it_unstable(n):
    above = [classify(make_run(jump_no_recovery(n, s, to=3.5))) for s in range(SEEDS)]
    below = [classify(make_run(jump_no_recovery(n, s, to=1.45))) for s in range(SEEDS)]
    assert sum(v.label == "diverged" for v in above) >= SEEDS - 1, [v.label for v in above]
    for v in above:
        if v.label == "diverged" and v.evidence.get("kind") == "jump_above_start":
            assert 0.55 * n <= v.evidence["shift_step"] <= 0.65 * n
    assert not [v for v in below if v.label == "diverged"], [v.label for v in below]


def _ends_on(n: int, seed: int, last: float, grad_up: float) -> tuple[np.ndarray, np.ndarray]:
    x = healthy(n, seed)
    g = np.exp(0.1 * np.random.default_rng(seed + 100).standard_normal(n))
    x[-1] = last
    g[-1] *= grad_up
    return x, g


@pytest.mark.parametrize("n", [100, 2000])
def test_a_log_ending_as_loss_and_gradient_blow_up_is_diverged(n):
    for seed in range(SEEDS):
        x, g = _ends_on(n, seed, last=1e11, grad_up=1e12)
        v = classify(make_run(x, scalars={"grad_norm": g}))
        assert v.label == "diverged" and v.evidence["kind"] == "ended_exploding", (seed, v.label, v.reason)
        assert v.evidence["step"] == n - 1 and v.evidence["orders_of_magnitude"] > 9


@pytest.mark.parametrize("n", [100, 2000])
def test_a_final_loss_spike_with_an_ordinary_gradient_is_not_diverged(n):
    for seed in range(SEEDS):
        x, g = _ends_on(n, seed, last=1e11, grad_up=2.0)  # the gradient norm stays within its scale
        assert classify(make_run(x, scalars={"grad_norm": g})).label != "diverged", seed
        x, _ = _ends_on(n, seed, last=1e11, grad_up=1.0)
        assert classify(make_run(x)).evidence.get("kind") != "ended_exploding", seed  # no gradient: no claim


def _after_raise(n: int, seed: int) -> np.ndarray:
    """Healthy until 0.5 n, then jumps well above the start and bounces there."""
    rng = np.random.default_rng(seed)
    x = healthy(n, seed)
    t = np.arange(n)
    return np.where(t >= n // 2, 4.0 * np.exp(0.3 * rng.standard_normal(n)), x)


def _lr_findings(x: np.ndarray, lr: np.ndarray):
    run = make_run(x, lr=lr)
    return list(LearningRateTooHigh().check(run, Context(curve=classify(run))))


@pytest.mark.parametrize("n", [300, 3000])
def test_fires_when_the_curve_went_wrong_right_after_a_step_raise_of_the_rate(n):
    t = np.arange(n)
    for seed in range(5):
        x = _after_raise(n, seed)
        (f,) = _lr_findings(x, np.where(t >= n // 2, 0.1, 0.001))  # no layer table: the raise alone
        assert f.evidence["lr_raise"] == pytest.approx(100.0) and f.evidence["lr_raise_step"] == n // 2
        assert f.evidence["loss_peak_step"] >= n // 2
        assert f.severity == ("error" if f.evidence["curve"] == "diverged" else "warning")


@pytest.mark.parametrize("n", [300, 3000])
def test_silent_under_a_warmup_or_a_raise_after_the_loss_peaked(n):
    t = np.arange(n)
    warm = 0.001 + (0.1 - 0.001) * np.minimum(1.0, t / (0.6 * n))  # the same 100x, by small increments
    for seed in range(5):
        x = _after_raise(n, seed)
        with pytest.raises(Skip, match="update or weight norms"):  # no step-size evidence: skipped
            _lr_findings(x, warm)
        # a raise that comes after the loss peaked cannot have caused it
        y = x.copy()
        y[int(0.9 * n):] = 0.5
        y[n // 2 + 3] = 50.0
        with pytest.raises(Skip, match="update or weight norms"):
            _lr_findings(y, np.where(t >= int(0.9 * n), 0.1, 0.001))
