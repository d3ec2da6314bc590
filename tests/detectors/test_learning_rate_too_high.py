"""learning_rate_too_high: unstable or diverged loss with large updates, and its twins."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from gradients_synth import check as check_code
from gradients_synth import falling_loss, healthy_net
from gradients_synth import make_run as net_run
from loss_synth import diverging, healthy, layers_table, make_run, oscillating

from runlens.detectors import Context, Skip
from runlens.detectors.curve import classify
from runlens.detectors.learning_rate_too_high import LearningRateTooHigh
from runlens.testing import build_run


def run_with(x, ratio=None, *, grad_norm=None):
    n = x.size
    layers, meta = layers_table(n, ratio) if ratio is not None else (None, [])
    run = make_run(x, layers=layers, meta={"layers": meta})
    if grad_norm is not None:
        run = build_run(tables={"scalars": run.scalars.append_column("grad_norm", pa.array(grad_norm)),
                                "layers": run.layers}, meta=run.meta, name="x")
    return run


def check(run, det=None):
    return (det or LearningRateTooHigh()).check(run, Context(
        curve=classify(run), first_nonfinite_step=_first_bad(run)))


def _first_bad(run):
    loss = run.column("scalars", "loss")
    bad = ~np.isfinite(loss)
    return int(run.steps("scalars")[bad.argmax()]) if bad.any() else None


def test_fires_on_unstable_loss_with_large_updates():
    for seed in range(10):
        (f,) = check(run_with(oscillating(2000, seed), 0.05))
        assert f.code == "learning_rate_too_high" and f.severity == "warning"
        assert f.evidence["median_update_ratio"] == pytest.approx(0.05, rel=0.1)
        assert f.evidence["curve"] == "unstable"
        assert len(f.layers) == 3


def test_fires_as_error_on_divergence_with_large_updates():
    (f,) = check(run_with(diverging(2000, 0), 0.2))
    assert f.severity == "error" and f.evidence["curve"] == "diverged"


def test_silent_when_updates_are_ordinary():
    assert check(run_with(oscillating(2000, 0), 1e-3)) == []


def test_healthy_twin_is_silent_even_with_large_updates():
    for seed in range(20):
        assert check(run_with(healthy(2000, seed), 0.05)) == []


def test_numerical_nan_with_steady_gradients_is_not_a_learning_rate():
    x = healthy(1000, 0)
    x[700:] = np.nan
    assert check(run_with(x, 0.05, grad_norm=np.ones(1000))) == []


def test_nan_after_exploding_gradients_fires():
    x = healthy(1000, 0)
    x[700:] = np.nan
    g = np.ones(1000)
    g[690:700] = np.geomspace(10, 1e6, 10)
    (f,) = check(run_with(x, 0.05, grad_norm=g))
    assert f.severity == "error"


def test_without_layer_data_there_is_no_step_size_evidence_so_it_skips():
    # issue 11: never raised without update-size evidence, unstable or diverged
    for x in (oscillating(2000, 0), diverging(2000, 0)):
        with pytest.raises(Skip, match="step size"):
            check(run_with(x))


def test_parameters_are_stored_and_used():
    det = LearningRateTooHigh(min_update_ratio=0.5)
    assert det.min_update_ratio == 0.5
    assert check(run_with(oscillating(2000, 0), 0.05), det) == []


def _one_layer_run(x, head_ratio):
    """Three weight matrices: two at the 1e-3 rule of thumb, the last at ``head_ratio``."""
    layers, meta = layers_table(x.size, 1e-3)
    names = layers.column("layer").to_pylist()
    w = layers.column("weight_norm").to_numpy()
    u = layers.column("update_norm").to_numpy().copy()
    head = np.array([n == "2.weight" for n in names])
    u[head] = w[head] * head_ratio
    layers = layers.set_column(layers.schema.get_field_index("update_norm"), "update_norm",
                               pa.array(u, pa.float32()))
    return make_run(x, layers=layers, meta={"layers": meta})


@pytest.mark.parametrize("seed", range(5))
def test_fires_when_one_layer_moves_a_tenth_of_its_weights_every_step(seed):
    (f,) = check(_one_layer_run(oscillating(2000, seed), 0.15))
    assert f.evidence["median_update_ratio"] < 0.01 and f.layers == ("2.weight",), f
    assert "of module 2 by 15.0%" in f.title


@pytest.mark.parametrize("seed", range(5))
def test_one_layer_at_a_few_percent_is_not_enough_on_its_own(seed):
    assert check(_one_layer_run(oscillating(2000, seed), 0.03)) == []


def _unstable(n, ratio, *, with_update=True, seed=0):
    g, w, u = healthy_net(seed, n=n, m=4, ratio=ratio)
    if not with_update:
        # weights that move by `ratio` of their norm each step, in alternating directions
        w = w * (1 + ratio * np.where(np.arange(n) % 2 == 0, 1, -1))[:, None]
        u = None
    return net_run(g, w, u, loss=falling_loss(seed, n))


def test_unstable_with_updates_above_the_weight_norm_fires():
    [f] = check_code("learning_rate_too_high", _unstable(300, 2.0), curve="unstable")
    assert f.evidence["median_update_ratio"] > 1 and f.evidence["update_source"] == "update_norm"


def test_unstable_with_ordinary_updates_is_silent():
    assert check_code("learning_rate_too_high", _unstable(300, 1e-3), curve="unstable") == []


def test_without_update_norm_the_weight_norm_change_is_the_evidence():
    [f] = check_code("learning_rate_too_high", _unstable(300, 0.3, with_update=False), curve="unstable")
    assert f.evidence["update_source"] == "weight_norm_change"
    assert check_code("learning_rate_too_high", _unstable(300, 1e-4, with_update=False), curve="unstable") == []


def test_never_raised_without_update_size_evidence():
    run = build_run(tables={"scalars": {"step": np.arange(300), "loss": falling_loss(0, 300)}}, meta={}, name="x")
    with pytest.raises(Skip, match="step size"):
        check_code("learning_rate_too_high", run, curve="unstable")


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
