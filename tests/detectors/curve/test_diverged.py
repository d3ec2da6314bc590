"""diverged: the curve label (runlens/detectors/curve/diverged.py) and its finding
(runlens/detectors/diverged.py): a non-finite loss, a NaN masked as 0, a blow-up, unbounded growth;
firing cases with their silent twins."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from curve_cases import SEEDS, label, labels
from loss_synth import (
    blows_up,
    diverging,
    healthy,
    jump_no_recovery,
    make_run,
)

from runlens import analyze
from runlens.detectors.curve import classify
from runlens.testing import build_run


def test_a_short_run_that_explodes_is_diverged_not_insufficient():
    x = 1.5 * np.geomspace(1, 1e8, 13) * np.exp(0.05 * np.random.default_rng(0).standard_normal(13))
    v = classify(make_run(x))
    assert v.label == "diverged" and v.evidence["points"] == 13
    assert label(np.linspace(2, 1, 13)) == "insufficient_data"


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
    run = build_run(tables={"scalars": run.scalars.append_column("step_skipped", pa.array(skipped))}, meta={},
                    name="x")
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


def nan_run(seed: int = 0, grad_norm: bool = True):
    x = healthy(500, seed)
    x[400:] = np.nan
    gn = np.exp(0.1 * np.random.default_rng(seed).standard_normal(500))
    gn[395:] = np.geomspace(1, 1e12, 105)
    return make_run(x, scalars={"grad_norm": gn} if grad_norm else None)


def test_diverged_names_its_proximate_signals():
    d = analyze(nan_run())
    (f,) = [f for f in d.findings if f.code == "diverged"]
    assert f.evidence["signals"]["grad_norm_growth"] > 1e6
    assert "grad_norm" not in f.evidence.get("signals_missing", [])
    assert "no gradient norms" not in f.title


def test_diverged_without_gradient_norms_says_what_the_log_lacks():
    d = analyze(nan_run(grad_norm=False))
    (f,) = [f for f in d.findings if f.code == "diverged"]
    assert {"grad_norm", "update_ratio"} <= set(f.evidence["signals_missing"])
    assert "the log has no gradient norms" in f.title


def test_a_loss_blown_up_to_thousands_and_flat_there_is_classified_without_overflow():
    # lr=10: the loss jumps from 0.7 to about 4,000 on the first step and sits there;
    # the chance-level guess must not take exp(4000) (OverflowError) and leave the run unlabeled.
    rng = np.random.default_rng(0)
    loss = np.concatenate([[0.7], 4000 * (1 + 0.01 * rng.standard_normal(199))])
    label = classify(make_run(loss)).label
    assert label != "insufficient_data"
    assert label == "diverged"


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


def test_a_short_log_that_gave_back_all_its_progress_and_stayed_there_diverged():
    # An LLM fine-tune pasted into an issue: 1.59, 1.41, then up to 6.4 and never back.
    x = np.array([1.593, 1.406, 3.316, 6.437, 5.478, 4.857, 4.874, 4.604])
    d = analyze(make_run(x, steps=np.arange(1, 9) * 25))
    assert d.curve.label == "diverged" and d.curve.evidence["kind"] == "short_given_back", d.curve


def test_a_short_log_back_at_a_level_it_swung_to_before_its_minimum_is_no_divergence():
    # A GAN's two players summed: 4.3, 17.7, 3.5, 5.5, 13.8, 14.4. The last points are high, but the loss
    # had been higher before its minimum: it swings, it did not move away.
    x = np.array([4.3012, 17.6706, 3.4870, 5.4896, 13.7534, 14.4293])
    assert analyze(make_run(x, steps=np.arange(6))).curve.label != "diverged"


def test_one_high_last_point_is_not_a_short_divergence():
    x = np.array([1.593, 1.406, 1.35, 1.33, 1.31, 1.30, 1.29, 4.6])
    assert analyze(make_run(x, steps=np.arange(1, 9) * 25)).curve.label != "diverged"


BLOWUP_SEEDS = 10


@pytest.mark.parametrize("n", [300, 3000])
def test_a_jump_that_lands_above_the_start_is_diverged_and_one_below_it_unstable(n):
    above = [classify(make_run(jump_no_recovery(n, s, to=3.5))) for s in range(BLOWUP_SEEDS)]
    below = [classify(make_run(jump_no_recovery(n, s, to=1.45))) for s in range(BLOWUP_SEEDS)]
    assert sum(v.label == "diverged" for v in above) >= BLOWUP_SEEDS - 1, [v.label for v in above]
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
    for seed in range(BLOWUP_SEEDS):
        x, g = _ends_on(n, seed, last=1e11, grad_up=1e12)
        v = classify(make_run(x, scalars={"grad_norm": g}))
        assert v.label == "diverged" and v.evidence["kind"] == "ended_exploding", (seed, v.label, v.reason)
        assert v.evidence["step"] == n - 1 and v.evidence["orders_of_magnitude"] > 9


@pytest.mark.parametrize("n", [100, 2000])
def test_a_final_loss_spike_with_an_ordinary_gradient_is_not_diverged(n):
    for seed in range(BLOWUP_SEEDS):
        x, g = _ends_on(n, seed, last=1e11, grad_up=2.0)  # the gradient norm stays within its scale
        assert classify(make_run(x, scalars={"grad_norm": g})).label != "diverged", seed
        x, _ = _ends_on(n, seed, last=1e11, grad_up=1.0)
        assert classify(make_run(x)).evidence.get("kind") != "ended_exploding", seed  # no gradient: no claim


@pytest.mark.parametrize("n", [12, 300])
def test_a_loss_collapsing_to_zero_while_gradients_go_nan_is_a_masked_nan(n):
    for seed in range(10):
        x = healthy(n, seed)
        gn = np.exp(0.1 * np.random.default_rng(seed).standard_normal(n))
        x[n - 4:] = 0.0
        gn[n - 4:] = np.nan
        d = analyze(make_run(x, scalars={"grad_norm": gn}))
        (f,) = [f for f in d.findings if f.code == "nonfinite_loss"]
        assert f.evidence["cause"] == "masked" and f.step == n - 4
        assert d.curve.label == "diverged"


def test_silent_twin_a_loss_reaching_zero_with_finite_gradients_is_not_masked():
    # a perfectly fit training set: loss exactly 0, gradients exactly 0 (finite), reached as a fit
    # reaches 0, by orders of magnitude (a loss that drops from its working level straight to exactly
    # 0 with the gradient, and stays there, is a collapse: test_paste_verdicts has it)
    for n in (12, 300):
        x = healthy(n, 0)
        x[n - 7:n - 4] = x[n - 8] * np.array([1e-1, 1e-2, 1e-3])
        x[n - 4:] = 0.0
        gn = np.ones(n)
        gn[n - 4:] = 0.0
        d = analyze(make_run(x, scalars={"grad_norm": gn}))
        assert "nonfinite_loss" not in [f.code for f in d.findings]
        assert d.curve.label != "diverged"
