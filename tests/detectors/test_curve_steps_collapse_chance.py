"""Synthetic series for round 3 of the curve: validation jumps explained by the step sizes,
plateaus left at an unchanged rate, a loss above ln K, weights collapsed toward zero.

Each behaviour has a firing series and a silent twin; the real recorded runs of the same
classes are in ``test_heldout_runs.py``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from loss_synth import healthy, layers_table, ln, make_run, to_chance

from runlens import analyze
from runlens.detectors._causes import causes_of
from runlens.diagnosis import Finding


def _jumpy_val(n: int, seed: int, *, evals: int = 40, jump: float = 0.10) -> tuple[np.ndarray, np.ndarray]:
    """A validation loss that falls and settles, jumping by ``jump`` of its level between evaluations."""
    rng = np.random.default_rng(seed + 100)
    vs = np.linspace(n // evals, n - 1, evals).astype(np.int64)
    t = vs / n
    return vs, (0.5 + 1.5 * np.exp(-5 * t)) * (1 + jump * rng.standard_normal(evals))


def _run(seed: int, ratio: float, jump: float):
    n = 1500
    table, meta = layers_table(n, ratio, seed=seed)
    vs, vl = _jumpy_val(n, seed, jump=jump)
    return make_run(healthy(n, seed), val_loss=vl, val_steps=vs, layers=table,
                    meta={"name": "synthetic", "layers": meta})


@pytest.mark.parametrize("seed", range(5))
def test_validation_jumps_with_steps_above_a_percent_of_the_weights_are_unstable(seed):
    d = analyze(_run(seed, ratio=0.03, jump=0.10))
    assert d.curve.label == "unstable", d.curve
    codes = [f.code for f in d.findings]
    assert codes[0] == "learning_rate_too_high" and "unstable" in codes, codes
    ev = next(f for f in d.findings if f.code == "unstable").evidence
    assert ev["kind"] == "val_jumps" and ev["late_update_ratio"] == pytest.approx(0.03, rel=0.2), ev


@pytest.mark.parametrize("seed", range(5))
def test_the_same_validation_jumps_with_ordinary_steps_are_evaluation_noise(seed):
    d = analyze(_run(seed, ratio=1e-3, jump=0.10))
    assert d.curve.label == "healthy", d.curve
    assert not [f.code for f in d.findings if f.severity != "info"], d.findings


@pytest.mark.parametrize("seed", range(5))
def test_large_steps_with_a_quiet_validation_loss_are_not_unstable(seed):
    d = analyze(_run(seed, ratio=0.03, jump=0.005))
    assert d.curve.label == "healthy", d.curve


def _plateau_then_fall(n: int, seed: int, *, flat: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    after = np.clip(t - flat, 0, None)
    return (0.05 + (ln(4) - 0.05) * np.exp(-12 * after)) * np.exp(0.01 * rng.standard_normal(n))


@pytest.mark.parametrize(("lr", "severity", "raised"), [
    ("constant", "info", False), ("raised", "warning", True), (None, "warning", None)])
def test_a_plateau_is_a_warning_only_when_the_rate_was_raised_or_is_unknown(lr, severity, raised):
    n = 1000
    rate = {"constant": np.full(n, 1e-3), "raised": np.where(np.arange(n) < 300, 1e-6, 1e-3), None: None}[lr]
    d = analyze(make_run(_plateau_then_fall(n, 0), lr=rate))
    (f,) = [f for f in d.findings if f.code == "plateau"]
    assert f.severity == severity and f.evidence["lr_raised"] is raised, f


def _with_classes(loss: np.ndarray, k: int):
    return make_run(loss, meta={"name": "synthetic", "config": {"num_classes": k}})


@pytest.mark.parametrize("seed", range(4))
def test_a_flat_loss_a_little_above_ln_k_is_no_better_than_chance(seed):
    # 2.5% above ln 4: outside the symmetric 2% band, closer to ln 4 than to ln 5.
    loss = to_chance(800, seed, k=4) * 1.025
    d = analyze(_with_classes(loss, 4))
    assert d.curve.label == "underfitting" and "loss_at_chance" in [f.code for f in d.findings], d.curve


@pytest.mark.parametrize("factor", [0.9, 1.12])
def test_a_flat_loss_well_below_ln_k_or_nearer_ln_k_plus_1_is_not_chance(factor):
    # 10% below ln 4 beats the prior; 12% above is past half the gap to ln 5.
    loss = to_chance(800, 0, k=4) * factor
    d = analyze(_with_classes(loss, 4))
    assert "loss_at_chance" not in [f.code for f in d.findings], d.findings


def _finding(code: str, **evidence) -> Finding:
    return Finding(code=code, severity="warning", title=code, evidence=evidence)


def test_collapsed_weights_make_underfitting_the_cause_of_the_starved_gradients():
    under = _finding("underfitting", weight_norm_ratio=1e-3)
    present = {f.code: f for f in (under, _finding("vanishing_gradients"), _finding("dead_layers"),
                                   _finding("loss_at_chance"))}
    assert causes_of(present["vanishing_gradients"], present) == ["underfitting"]
    assert causes_of(present["dead_layers"], present) == ["underfitting"]
    assert "underfitting" in causes_of(present["loss_at_chance"], present)
    assert causes_of(under, present) == []


def test_intact_weights_keep_the_starved_gradients_as_the_cause():
    under = _finding("underfitting", weight_norm_ratio=0.8)
    present = {f.code: f for f in (under, _finding("vanishing_gradients"), _finding("loss_at_chance"))}
    assert causes_of(under, present) == ["vanishing_gradients", "loss_at_chance"]
    assert causes_of(present["vanishing_gradients"], present) == []


def _decaying_weights_run(shrink: float):
    n = 400
    table, meta = layers_table(n, 1e-3)
    steps = table.column("step").to_numpy()
    w = 10.0 * shrink ** (steps / steps.max())
    table = table.set_column(table.schema.get_field_index("weight_norm"), "weight_norm", pa.array(w, pa.float32()))
    loss = ln(3) * np.exp(0.002 * np.random.default_rng(0).standard_normal(n))
    return make_run(loss, layers=table, meta={"name": "synthetic", "layers": meta,
                                              "config": {"weight_decay": 50.0, "num_classes": 3}})


def test_the_underfitting_verdict_measures_a_weight_collapse_and_says_so():
    d = analyze(_decaying_weights_run(1e-4))
    (f,) = [f for f in d.findings if f.code == "underfitting"]
    assert f.evidence["weight_norm_ratio"] == pytest.approx(1e-4, rel=0.05)
    assert "pinned near zero (weight_decay 50 in the config)" in f.title
    intact = next(f for f in analyze(_decaying_weights_run(0.9)).findings if f.code == "underfitting")
    assert intact.evidence["weight_norm_ratio"] == pytest.approx(0.9, rel=0.05)
    assert "pinned" not in intact.title


def _one_layer_jumpy(seed: int, head_ratio: float):
    n = 1500
    table, meta = layers_table(n, 1e-3, seed=seed)
    names = table.column("layer").to_pylist()
    w = table.column("weight_norm").to_numpy()
    u = table.column("update_norm").to_numpy().copy()
    head = np.array([x == "2.weight" for x in names])
    u[head] = w[head] * head_ratio
    table = table.set_column(table.schema.get_field_index("update_norm"), "update_norm", pa.array(u, pa.float32()))
    vs, vl = _jumpy_val(n, seed, jump=0.10)
    return make_run(healthy(n, seed), val_loss=vl, val_steps=vs, layers=table,
                    meta={"name": "synthetic", "layers": meta})


@pytest.mark.parametrize("seed", range(4))
def test_validation_jumps_with_one_layer_moving_a_tenth_of_its_weights_are_unstable(seed):
    d = analyze(_one_layer_jumpy(seed, 0.15))
    assert d.curve.label == "unstable", d.curve
    ev = next(f for f in d.findings if f.code == "unstable").evidence
    assert ev["late_largest_module"] == "2" and ev["late_largest_module_ratio"] == pytest.approx(0.15, rel=0.01)
    assert [f.code for f in d.findings][0] == "learning_rate_too_high"


@pytest.mark.parametrize("seed", range(4))
def test_one_layer_at_a_few_percent_does_not_explain_validation_jumps(seed):
    assert analyze(_one_layer_jumpy(seed, 0.03)).curve.label == "healthy"
