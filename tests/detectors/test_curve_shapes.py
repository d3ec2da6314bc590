"""The reworked curve classifier, one failure class of issue 11 at a time: a firing
test and its silent twin, each over many seeds (statistical, not one lucky series)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from loss_synth import (
    blows_up,
    healthy,
    jump_no_recovery,
    make_run,
    noisy_overfit_val,
    to_chance,
    to_near_zero,
)
from scipy import stats

from runlens import analyze
from runlens.detectors.curve import CurveClassifier, classify

SEEDS = 40


def labels(make, seeds=SEEDS) -> list[str]:
    return [classify(make(seed)).label for seed in range(seeds)]


def at_most(k: int, n: int, level: float) -> bool:
    """k firings in n are compatible with a false-alarm rate of ``level`` (binomial, p >= 1e-3)."""
    return k == 0 or stats.binom.sf(k - 1, n, level) >= 1e-3


# -- chance level ---------------------------------------------------------------------------

@pytest.mark.parametrize("k", [2, 3, 4, 10])
def test_a_loss_that_falls_to_ln_k_and_sits_is_at_chance_not_healthy(k):
    for seed in range(SEEDS):
        # K from the config: any K; the level must be within 2% of ln K
        run = make_run(to_chance(800, seed, k=k, start=3 * math.log(k)), meta={"config": {"num_classes": k}})
        d = analyze(run)
        assert d.curve.label == "underfitting", (seed, d.curve.reason)
        (f,) = [f for f in d.findings if f.code == "loss_at_chance"]
        assert f.evidence["chance_classes"] == k and f.evidence["chance_source"] == "config.num_classes"
        assert f.evidence["relative_drop"] > 0.5  # it fell a long way: a drop alone would say healthy


def test_chance_from_the_loss_level_alone_says_so():
    for seed in range(SEEDS):
        v = classify(make_run(to_chance(800, seed, k=2)))
        assert v.label == "underfitting" and v.evidence["chance_classes"] == 2
        assert v.evidence["chance_source"].startswith("the loss level")


def test_chance_from_a_label_column():
    n = 800
    labels_col = np.random.default_rng(0).integers(0, 3, n)
    v = classify(make_run(to_chance(n, 0, k=3), scalars={"label": labels_col}))
    assert v.evidence["chance_classes"] == 3 and "label" in v.evidence["chance_source"]


@pytest.mark.parametrize("k", [2, 4, 10])
def test_silent_twin_a_loss_that_falls_below_ln_k_or_passes_through_it(k):
    for seed in range(SEEDS):
        cfg = {"config": {"num_classes": k}}
        # learns: settles at a third of ln K
        below = to_chance(800, seed, k=k, start=3 * math.log(k)) / 3
        assert classify(make_run(below, meta=cfg)).label == "healthy"
        # still falling through ln K at the end of the run
        t = np.arange(800) / 800
        through = math.log(k) * (1.6 - 0.6 * t) * np.exp(0.01 * np.random.default_rng(seed).standard_normal(800))
        assert "chance_classes" not in classify(make_run(through, meta=cfg)).evidence


# -- noisy validation: overfitting from the trend, not unstable from jumps -------------------

@pytest.mark.parametrize(("sd", "power"), [(0.05, 1.0), (0.15, 0.95), (0.3, 0.5)])
def test_noisy_validation_that_rises_after_its_minimum_is_overfitting(sd, power):
    # 40 evaluations, +-5% to +-30% noise each: the trend decides, so it is never "unstable";
    # at 30% noise per evaluation the test still finds most rises (its power, not a constant)
    got = labels(lambda s: make_run(healthy(2000, s, floor=0.05), val_steps=noisy_overfit_val(2000, s, sd=sd)[0],
                                    val_loss=noisy_overfit_val(2000, s, sd=sd)[1]))
    assert got.count("overfitting") >= power * SEEDS - 1, got
    assert "unstable" not in got


@pytest.mark.parametrize("sd", [0.05, 0.15, 0.3])
def test_silent_twin_noisy_flat_validation_on_a_smooth_training_loss(sd):
    # the same evaluation noise around a flat level: overfitting at most at its documented level
    got = labels(lambda s: make_run(healthy(2000, s, floor=0.05), val_steps=noisy_overfit_val(2000, s, sd=sd)[0],
                                    val_loss=noisy_overfit_val(2000, s, sd=sd, rise=0.0)[1]), seeds=100)
    assert "unstable" not in got
    assert at_most(got.count("overfitting"), 100, CurveClassifier().alpha_val), got.count("overfitting")


# -- scale: a loss that falls 99.9% to near zero --------------------------------------------

@pytest.mark.parametrize("jitter", [0.3, 0.8])
def test_a_loss_that_falls_to_near_zero_is_not_unstable_for_its_relative_jitter(jitter):
    got = labels(lambda s: make_run(to_near_zero(3000, s, jitter=jitter)))
    assert got == ["healthy"] * SEEDS


def test_twin_of_the_scale_test_noise_as_large_as_the_progress_is_unstable():
    # the same fall, but fluctuations of the size of the whole fall: judged against progress, unstable
    def make(s):
        rng = np.random.default_rng(s)
        t = np.arange(3000) / 3000
        return make_run(2.3 * np.exp(-10 * t) + 1e-4 + 3.0 * rng.random(3000) * (t > 0.3))
    got = labels(make)
    assert got.count("unstable") >= SEEDS - 1, got


# -- segment view: a jump that never recovers ------------------------------------------------

@pytest.mark.parametrize("n", [300, 3000])
def test_a_jump_up_that_never_recovers_is_unstable_not_underfitting(n):
    got = [classify(make_run(jump_no_recovery(n, s))) for s in range(SEEDS)]
    assert sum(v.label == "unstable" for v in got) >= SEEDS - 2, [v.label for v in got]
    assert not [v for v in got if v.label == "underfitting"]
    for v in got:
        if v.label == "unstable":
            assert v.evidence["kind"] == "level_shift" and 0.55 * n <= v.evidence["shift_step"] <= 0.65 * n


@pytest.mark.parametrize("schedule", ["none", "step", "cosine"])
def test_silent_twin_healthy_curves_have_no_level_shift(schedule):
    got = labels(lambda s: make_run(healthy(3000, s, noise=(0.02, 0.1, 0.3)[s % 3], schedule=schedule,
                                            warmup=s % 2 == 0)))
    assert got == ["healthy"] * SEEDS


def test_silent_twin_a_jump_that_recovers_is_not_a_level_shift():
    def make(s):
        x = jump_no_recovery(3000, s)
        x[2100:] = healthy(3000, s)[2100:]  # back to the old level within a tenth of the run
        return make_run(x)
    assert "unstable" not in labels(make)


# -- divergence by magnitude -----------------------------------------------------------------

@pytest.mark.parametrize("orders", [3, 30])
def test_growth_by_orders_of_magnitude_without_nan_is_diverged(orders):
    got = [classify(make_run(blows_up(1000, s, orders=orders))) for s in range(SEEDS)]
    assert [v.label for v in got] == ["diverged"] * SEEDS
    assert min(v.evidence["orders_of_magnitude"] for v in got) > orders - 1


def test_silent_twin_a_final_spike_is_not_divergence():
    def make(s):
        x = healthy(1000, s)
        x[-1] *= 50  # one bad batch on the last step
        return make_run(x)
    assert labels(make) == ["healthy"] * SEEDS
