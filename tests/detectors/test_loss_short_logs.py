"""Short-log mode: a dozen lines pasted into an issue still get their point findings;
``insufficient_data`` is about the curve's shape only. And a log without training loss."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, make_run

from runlens import analyze

SEEDS = 50


def short(n: int, seed: int) -> np.ndarray:
    """The first ``n`` losses of a healthy run: falling, with minibatch noise."""
    return healthy(10 * n, seed, noise=0.05)[::10]


def loud(d) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in d.findings if f.severity != "info"]


@pytest.mark.parametrize("n", [8, 12, 19])
def test_silent_twin_a_clean_short_log_of_a_whole_healthy_curve_is_healthy_and_nothing_louder(n):
    # A whole healthy curve seen at n points: it falls nearly monotonically and slows down,
    # the one shape a short log can show (a dozen minibatch steps cannot: test_curve_short_logs).
    for seed in range(SEEDS):
        d = analyze(make_run(short(n, seed)))
        assert d.curve.label == "healthy" and d.curve.evidence["kind"] == "short_settled", d.curve
        assert f"in {n} points" in d.curve.reason
        assert loud(d) == [], seed


@pytest.mark.parametrize("n", [8, 12, 19])
def test_a_nan_in_a_short_log_is_a_nonfinite_loss(n):
    for seed in range(SEEDS):
        x = short(n, seed)
        x[n - 3] = np.nan
        d = analyze(make_run(x))
        (f,) = [f for f in d.findings if f.code == "nonfinite_loss"]
        assert f.step == n - 3 and f.evidence["points_before"] == n - 3
        assert d.curve.label == "diverged"


@pytest.mark.parametrize("ratio", [10, 1000])
def test_a_spike_in_a_short_log_is_found_by_its_robust_ratio(ratio):
    for seed in range(SEEDS):
        x = short(12, seed)
        x[6] *= ratio
        d = analyze(make_run(x))
        (f,) = [f for f in d.findings if f.code == "loss_spikes"]
        assert f.step == 6 and f.evidence["short_log"] is True and f.evidence["points"] == 12
        assert d.curve.label in ("insufficient_data", "healthy")


def test_silent_twin_a_short_log_with_a_two_fold_bump_is_no_spike():
    # below the short-log ratio (3x): minibatch noise of a small batch can do that
    for seed in range(SEEDS):
        x = short(12, seed)
        x[6] *= 1.8
        assert "loss_spikes" not in [f.code for f in analyze(make_run(x)).findings]


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
    # a perfectly fit training set: loss exactly 0, gradients exactly 0 (finite)
    for n in (12, 300):
        x = healthy(n, 0)
        x[n - 4:] = 0.0
        gn = np.ones(n)
        gn[n - 4:] = 0.0
        d = analyze(make_run(x, scalars={"grad_norm": gn}))
        assert "nonfinite_loss" not in [f.code for f in d.findings]
        assert d.curve.label != "diverged"


def test_a_log_without_training_loss_is_insufficient_data_with_a_reason_and_the_rest_is_analysed():
    n = 300
    gn = np.exp(0.1 * np.random.default_rng(0).standard_normal(n))
    gn[200:] = np.inf
    vs = np.arange(0, n, 20)
    d = analyze(make_run(None, scalars={"grad_norm": gn}, val_loss=np.linspace(2, 1, vs.size), val_steps=vs))
    assert d.curve.label == "insufficient_data" and "no training loss" in d.curve.reason
    assert d.curve.evidence["training_loss_logged"] is False
    outcomes = {o.code: o.state for o in d.outcomes}
    assert outcomes["no_validation"] == "ran" and "no_validation" not in [f.code for f in d.findings]
    assert outcomes["loss_spikes"] == "skipped"
    assert "nonfinite_gradient" in [f.code for f in d.findings]  # the gradient norms are still judged
    assert not [o for o in d.outcomes if o.state == "crashed"]


def test_silent_twin_a_short_log_reaching_exactly_zero_has_no_spike_from_its_ripples():
    # Train loss of a fine-tune that memorizes: a 1.2x ripple, then exactly 0 (printed 0.0000).
    x = np.array([0.166, 0.167, 0.170, 0.113, 0.128, 0.122, 0.120, 0.078, 0.029, 0.008, 0.004, 0.0035,
                  0.0007, 0.0001, 0.0001, 0.0001, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert "loss_spikes" not in [f.code for f in analyze(make_run(x)).findings]
    x[5] = 0.9  # a real spike among positive neighbours: 7x
    (f,) = [f for f in analyze(make_run(x)).findings if f.code == "loss_spikes"]
    assert f.step == 5
