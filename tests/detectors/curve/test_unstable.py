"""unstable: the curve label (runlens/detectors/curve/unstable.py, validation.py) and its finding
(runlens/detectors/unstable.py): oscillation, wandering, level shifts, validation jumps; each with
its silent twin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from curve_cases import SEEDS, label, labels
from loss_synth import (
    chaotic,
    healthy,
    jump_no_recovery,
    layers_table,
    make_run,
    noise,
    oscillating,
    to_near_zero,
)

from runlens import analyze
from runlens.detectors.curve import classify
from runlens.io.loader import load_run
from runlens.stats.evals import val_jumps


@pytest.mark.parametrize("n", [300, 3000, 50_000])
def test_oscillating_loss_is_unstable(n):
    labels = [label(oscillating(n, seed)) for seed in range(20)]
    assert labels.count("unstable") >= 19, labels


@pytest.mark.parametrize("n", [3000, 50_000])
def test_chaotic_loss_is_unstable(n):
    labels = [label(chaotic(n, seed)) for seed in range(20)]
    assert labels.count("unstable") >= 15, labels


def test_validation_jitter_small_against_its_fall_is_not_unstable():
    # A small validation set jitters by 2-3% of its level, but that is
    # nothing next to how far it fell: healthy.
    rng = np.random.default_rng(0)
    vs = np.arange(0, 2000, 50)
    v = (0.5 + 2.0 * np.exp(-5 * vs / 2000)) * np.exp(0.025 * rng.standard_normal(vs.size))
    assert label(healthy(2000, 0), val_loss=v, val_steps=vs) == "healthy"


def test_validation_jump_right_after_a_training_spike_is_the_spike_not_instability():
    rng = np.random.default_rng(1)
    x = healthy(1200, 1)
    vs = np.arange(24, 1200, 25)
    v = (0.5 + 1.0 * np.exp(-5 * vs / 1200)) * np.exp(0.003 * rng.standard_normal(vs.size))
    for step in (700, 900, 1100):
        x[step] *= 8  # a corrupt batch...
        v[np.searchsorted(vs, step)] *= 1.5  # ...throws the next evaluation off too
    assert label(x, val_loss=v, val_steps=vs) == "healthy"


def test_noisy_validation_on_a_smooth_training_loss_is_not_unstable():
    # Evaluation noise alone (a small eval set) says nothing about the optimization.
    for seed in range(20):
        rng = np.random.default_rng(seed)
        x = healthy(1000, seed)
        vs = np.arange(0, 1000, 40)
        v = 1.0 * np.exp(0.3 * rng.standard_normal(vs.size))
        verdict = classify(make_run(x, val_loss=v, val_steps=vs))
        assert verdict.label == "healthy", (seed, verdict.reason)


def _wandering_train(rng: np.random.Generator, n: int = 1000) -> np.ndarray:
    """Falls, then its level wanders (momentum oscillation) on top of minibatch noise."""
    t = np.arange(n) / n
    return (0.5 + 1.8 * np.exp(-8 * t)) * np.exp(0.15 * np.sin(2 * np.pi * t * 9) * (t > 0.3)
                                                  + 0.05 * rng.standard_normal(n))


def test_validation_that_keeps_jumping_with_a_wandering_training_loss_is_unstable():
    for seed in range(20):
        rng = np.random.default_rng(seed)
        x = _wandering_train(rng)
        vs = np.arange(0, 1000, 40)
        v = 0.8 * np.exp(0.25 * rng.standard_normal(vs.size))
        verdict = classify(make_run(x, val_loss=v, val_steps=vs))
        assert verdict.label == "unstable", (seed, verdict.reason)


def test_unstable_names_its_signals_or_what_is_missing():
    x = oscillating(2000, 0)
    run = make_run(x, lr=np.full(2000, 0.5))
    (f,) = [f for f in analyze(run).findings if f.code == "unstable"]
    assert f.evidence["signals"]["lr"] == 0.5
    assert "grad_norm" in f.evidence["signals_missing"]


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


@pytest.mark.parametrize("seed", range(5))
def test_twin_the_same_jitter_with_steps_large_against_the_weights_is_unstable(seed):
    x = noise(2000, seed, level=1.6, sd=0.2) * np.linspace(1.0, 0.97, 2000)
    table, layers = layers_table(2000, 0.05)
    v = classify(make_run(x, layers=table, meta={"name": "s", "layers": layers}))
    assert v.label == "unstable", (v.label, v.reason)


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


def _near_zero_run(seed: int, val_jitter: float, *, absolute: bool = False, n: int = 20000):
    """A long run whose training loss falls 99.9% (to 1e-3), with a slow wander at that level, and a
    validation loss evaluated 20 times, near zero from the first evaluation on, jittering by
    ``val_jitter`` of its level (``absolute``: by that much in loss units)."""
    rng = np.random.default_rng(seed)
    end = 1e-3
    wander = np.abs(np.repeat(rng.standard_normal(n // 200), 200)) * 0.3 * end
    x = (end + np.exp(-np.arange(n) / 300)) * np.exp(0.05 * rng.standard_normal(n)) + wander
    vs = np.linspace(n // 20, n - 1, 20).astype(np.int64)
    noise = rng.standard_normal(20)
    vl = np.abs(2 * end + val_jitter * noise) if absolute else 2 * end * np.abs(1 + val_jitter * noise)
    return make_run(x, val_loss=vl, val_steps=vs)


@pytest.mark.parametrize("seed", range(5))
def test_validation_jitter_at_a_thousandth_of_the_start_is_not_unstable(seed):
    # 8% of a near-zero level is 1e-4 of where the training loss started: judged against the fall the
    # run made, not the level it fell to.
    d = analyze(_near_zero_run(seed, 0.08))
    assert d.curve.label == "healthy", d.curve.reason


@pytest.mark.parametrize("seed", range(5))
def test_twin_validation_jumping_by_a_tenth_of_the_fall_is_unstable(seed):
    d = analyze(_near_zero_run(seed, 0.1, absolute=True))
    assert d.curve.label == "unstable", d.curve.reason
    assert d.curve.evidence["kind"] == "val_jumps"


def _batch_of_four(seed: int) -> np.ndarray:
    """A batch of 4: the loss falls 30% while each step's loss scatters by a third of its level."""
    rng = np.random.default_rng(seed)
    t = np.arange(N) / N
    return (1.2 + 0.5 * np.exp(-4 * t)) * np.exp(0.35 * rng.standard_normal(N))


@pytest.mark.parametrize("seed", range(5))
def test_minibatch_scatter_with_small_measured_steps_is_not_unstable(seed):
    # Weights moving 5e-4 of their norm per step cannot make the loss jump: the scatter is sampling.
    table, meta = layers_table(N, 5e-4, seed=seed)
    v = classify(make_run(_batch_of_four(seed), layers=table, meta={"name": "synthetic", "layers": meta}))
    assert v.label == "healthy", (v.label, v.reason)


@pytest.mark.parametrize("seed", range(5))
def test_the_same_scatter_with_large_steps_or_no_steps_recorded_stays_unstable(seed):
    # Twins: steps of 3% of the weights, or no step sizes at all, leave the loss's own reading.
    table, meta = layers_table(N, 0.03, seed=seed)
    large = classify(make_run(_batch_of_four(seed), layers=table, meta={"name": "synthetic", "layers": meta}))
    assert large.label == "unstable" and large.evidence["kind"] == "noisy", (large.label, large.reason)
    assert classify(make_run(_batch_of_four(seed))).label == "unstable"


def _late_drop(seed: int, wander: float = 0.0, n: int = 900) -> np.ndarray:
    """A loss on a plateau near ln 4 that drops late, as momentum runs do once they find the
    direction; with ``wander``, its level also moves up and down every 30 steps."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    x = 1.38 - 0.6 / (1 + np.exp(-(t - 0.92 * n) / (0.04 * n))) + 0.006 * rng.standard_normal(n)
    return x + wander * np.repeat(rng.standard_normal(n // 30 + 1), 30)[:n]


def test_a_plateau_ending_in_a_late_drop_is_not_unstable():
    """third-fresh19's healthy momentum tagger: the late third bends as it falls, and around a line
    that bend read as a wandering level."""
    got = [label(_late_drop(seed)) for seed in range(20)]
    assert "unstable" not in got, got


def test_the_same_drop_with_a_level_that_goes_back_up_is_unstable():
    got = [label(_late_drop(seed, wander=0.1)) for seed in range(20)]
    assert got.count("unstable") >= 18, got


THIRD = Path(__file__).resolve().parents[2] / "fixtures" / "third"
LATE_DROP = THIRD / "late_drop-momentum-tagger" / "run"


def _healthy_with_no_warning(run: Path) -> None:
    diag = analyze(run)
    assert diag.curve.label == "healthy", diag.curve.reason
    assert not [f.code for f in diag.findings if f.severity in ("warning", "error")]


def test_the_recorded_momentum_run_with_a_late_drop_is_healthy_with_no_warning():
    _healthy_with_no_warning(LATE_DROP)


def test_twin_the_recorded_losses_with_a_level_that_goes_back_up_are_unstable():
    loss = load_run(LATE_DROP).scalars.column("loss").to_numpy(zero_copy_only=False).astype(float)
    loss = loss[np.isfinite(loss)]
    got = []
    for seed in range(10):
        level = np.repeat(np.random.default_rng(seed).standard_normal(loss.size // 30 + 1), 30)[:loss.size]
        got.append(label(loss + 0.1 * level))
    assert got.count("unstable") >= 9, got


def _spreading_train(rng: np.random.Generator, n: int = 600) -> np.ndarray:
    """A loss that falls and grows noisier as it does (a learning model's per-batch spread: small
    batches, gradient accumulation), without its level wandering."""
    t = np.arange(n) / n
    level = 0.4 + 1.0 / (1 + np.exp(10 * (t - 0.35)))
    return level * np.exp((0.02 + 0.3 * np.clip(t - 0.3, 0, None)) * rng.standard_normal(n))


def _jumping_val(rng: np.random.Generator, falling: bool) -> tuple[np.ndarray, np.ndarray]:
    vs = np.arange(13, 600, 25)
    t = vs / 600
    level = 0.35 + 1.1 * np.exp(-2.5 * t) if falling else np.maximum(0.55, 0.35 + 1.1 * np.exp(-4 * t))
    return vs, level * np.exp(0.12 * rng.standard_normal(vs.size) * (t > 0.3))


# Seeds whose training loss is rough by the classifier's own test (the twin about a level is unstable:
# 24 of seeds 0-29; the falling one is healthy on 21 of those 24, where its trend is significant).
@pytest.mark.parametrize("seed", [0, 1, 3, 5, 7, 8, 9, 10])
def test_validation_jumping_on_its_way_down_to_new_lows_is_not_unstable(seed):
    # A training loss noisier late, not wandering, beside a validation loss that jumps by 12% and still
    # reaches new lows to the end: a model still learning (third-fresh37's healthy run with gradient
    # accumulation was read unstable). The same validation jumps about a level are instability.
    x = _spreading_train(np.random.default_rng(seed))
    vs, level = _jumping_val(np.random.default_rng(seed + 1000), falling=False)
    assert classify(make_run(x, val_loss=level, val_steps=vs)).label == "unstable"
    vs, down = _jumping_val(np.random.default_rng(seed + 1000), falling=True)
    assert classify(make_run(x, val_loss=down, val_steps=vs)).label == "healthy"


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5])  # 28 of seeds 0-29 wander by the classifier's test
def test_silent_twin_a_wandering_training_loss_keeps_falling_jumps_unstable(seed):
    # A level that wanders is instability itself: a validation loss still falling does not excuse it
    # (the held-out generator's 10x-rate ViT, tests/detectors/test_heldout_runs.py).
    rng = np.random.default_rng(seed)
    x = _wandering_train(rng)
    vs = np.arange(0, 1000, 40)
    v = (0.4 + 1.4 * np.exp(-2.5 * vs / 1000)) * np.exp(0.12 * rng.standard_normal(vs.size))
    assert classify(make_run(x, val_loss=v, val_steps=vs)).label == "unstable"


def test_still_falling_needs_the_fall_the_trend_and_the_low_at_the_end():
    from runlens.stats.evals import still_falling

    down = np.array([1.4, 1.4, 1.39, 1.36, 1.33, 1.29, 1.2, 1.1, 0.96, 0.86, 0.76, 0.64, 0.66, 0.98, 0.72, 0.59,
                     0.53, 0.54, 0.50, 0.56, 0.49])
    assert still_falling(down, 0.05, 0.1)
    assert not still_falling(down[::-1], 0.05, 0.1)  # rising
    level = np.concatenate([down[:10], np.full(11, 0.8) * (1 + 0.1 * np.sin(np.arange(11)))])
    assert not still_falling(level, 0.05, 0.1)  # fell, then jumps about a level
    ended_high = down.copy()
    ended_high[-7:] = ended_high[-7:][::-1] + 0.3  # its low not in the last third
    assert not still_falling(ended_high, 0.05, 0.1)


ACCUM = THIRD / "accum_noisy-sepconv" / "run"


def test_the_recorded_accumulation_run_jumping_to_new_lows_is_healthy_with_no_warning():
    _healthy_with_no_warning(ACCUM)


def test_twin_the_recorded_run_with_its_validation_jumping_about_a_level_is_unstable():
    run = load_run(ACCUM)
    x = run.scalars.column("loss").to_numpy(zero_copy_only=False).astype(float)
    steps = run.scalars.column("step").to_numpy(zero_copy_only=False)
    vs = run.evals.column("step").to_numpy(zero_copy_only=False)
    vl = run.evals.column("val_loss").to_numpy(zero_copy_only=False).astype(float)
    flat = vl.copy()
    flat[vl.size // 2:] = float(np.median(vl[vl.size // 2:])) * np.exp(0.15 * np.sin(np.arange(vl.size - vl.size // 2) * 2.1))
    assert classify(make_run(x, steps=steps, val_loss=vl, val_steps=vs)).label == "healthy"
    assert classify(make_run(x, steps=steps, val_loss=flat, val_steps=vs)).label == "unstable"
