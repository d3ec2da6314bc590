"""One bump of the validation loss is an event, not instability: the curve's validation-jump test
must hold without the evaluation of the largest excursion (third set: a healthy run with one bump
late in training was called unstable)."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, layers_table, make_run

from runlens import analyze
from runlens.stats.evals import val_jumps

N = 1500


def _smooth_val(seed: int, evals: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + 100)
    vs = np.linspace(N // evals, N - 1, evals).astype(np.int64)
    return vs, (0.5 + 1.5 * np.exp(-5 * vs / N)) * (1 + 0.002 * rng.standard_normal(evals))


def _analyze(vs: np.ndarray, vl: np.ndarray, seed: int, ratio: float = 0.03):
    table, meta = layers_table(N, ratio, seed=seed)
    return analyze(make_run(healthy(N, seed), val_loss=vl, val_steps=vs, layers=table,
                            meta={"name": "synthetic", "layers": meta}))


def test_one_excursion_carries_the_whole_rms_and_none_is_left_without_it():
    vl = np.linspace(2.0, 1.0, 20)
    vl[15] *= 1.25
    j = val_jumps(vl)
    assert j["rms"] > 0.03 * j["level"]
    assert j["rms_without_largest"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_a_single_bump_of_a_quarter_with_large_steps_is_not_unstable(seed):
    vs, vl = _smooth_val(seed)
    vl[30] *= 1.25  # one evaluation late in the run, a quarter above its neighbours
    d = _analyze(vs, vl, seed)
    assert d.curve.label == "healthy", d.curve
    assert "unstable" not in [f.code for f in d.findings], d.findings


@pytest.mark.parametrize("seed", range(5))
def test_bumps_on_many_evaluations_with_large_steps_are_unstable(seed):
    vs, vl = _smooth_val(seed)
    rng = np.random.default_rng(seed)
    late = np.arange(20, 40)
    vl[late] *= 1 + 0.10 * rng.standard_normal(late.size)  # jumps of the same size on every late evaluation
    d = _analyze(vs, vl, seed)
    assert d.curve.label == "unstable", d.curve
    ev = next(f for f in d.findings if f.code == "unstable").evidence
    assert ev["kind"] == "val_jumps", ev


def _first_eval_far_above(seed: int, jump: float) -> tuple[np.ndarray, np.ndarray]:
    """Settled validation losses jumping by ``jump`` of their level, after a first evaluation straight
    from initialization twenty times above the rest (a VAE's KL term at the start)."""
    rng = np.random.default_rng(seed + 200)
    vs = np.linspace(N // 24, N - 1, 24).astype(np.int64)
    vl = 4.0 * (1 + 0.5 * np.exp(-8 * vs / N)) * (1 + jump * rng.standard_normal(vs.size))
    vl[0] = 80.0
    return vs, vl


@pytest.mark.parametrize("seed", range(5))
def test_jumps_with_large_steps_after_a_first_evaluation_far_above_are_unstable(seed):
    d = _analyze(*_first_eval_far_above(seed, 0.08), seed)
    assert d.curve.label == "unstable", d.curve


@pytest.mark.parametrize("seed", range(5))
def test_silent_twin_the_same_start_with_a_quiet_validation_loss(seed):
    d = _analyze(*_first_eval_far_above(seed, 0.003), seed)
    assert d.curve.label == "healthy", d.curve
