"""plateau: flat, then a real fall; silent on converged tails and schedule drops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from loss_synth import healthy, ln, make_run, noise, random_walk, saddle

from runlens import analyze
from runlens.detectors import Context
from runlens.detectors.curve import classify
from runlens.detectors.plateau import Plateau


def findings(x, det=None, **kw):
    run = make_run(x, **kw)
    return (det or Plateau()).check(run, Context(curve=classify(run)))


def stuck_then_falls(n: int, seed: int, *, frac: float = 0.4, level: float = math.log(4),
                     sd: float = 0.02) -> np.ndarray:
    """Flat at chance for ``frac`` of the run (a saddle, or lr too low), then learns."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    base = np.where(t < frac, level, 0.3 + (level - 0.3) * np.exp(-8 * (t - frac) / (1 - frac)))
    return base * np.exp(sd * rng.standard_normal(n))


@pytest.mark.parametrize("n", [100, 600, 5000, 100_000])
def test_fires_when_stuck_at_the_start_then_falls(n):
    found = [f for seed in range(10) for f in findings(stuck_then_falls(n, seed))]
    # 100 steps of 2% noise leave the flatness of a 40-step stretch barely
    # provable; longer runs must all fire.
    assert len(found) >= (9 if n <= 100 else 10)
    for f in found:
        # No rate logged: nothing says it was too low to learn; the run recovered (info).
        assert f.code == "plateau" and f.severity == "info" and f.evidence["lr_raised"] is None
        assert f.evidence["start_step"] <= 0.1 * n
        assert 0.3 * n <= f.evidence["end_step"] <= 0.45 * n
        assert f.evidence["fall_relative"] > 0.8


@pytest.mark.parametrize("n", [300, 5000])
def test_fires_on_a_saddle_after_progress(n):
    for seed in range(10):
        (f,) = findings(saddle(n, seed))
        assert 0.15 * n <= f.evidence["start_step"] <= 0.3 * n
        assert abs(f.evidence["level"] - 1.0) < 0.05


def test_fires_when_the_learning_rate_rises_after_the_plateau():
    n = 600
    lr = np.where(np.arange(n) < 0.4 * n, 1e-5, 1e-3)
    assert len(findings(stuck_then_falls(n, 0), lr=lr)) == 1


@pytest.mark.parametrize("n", [300, 3000])
def test_silent_when_the_flat_stretch_is_a_warmup_and_fires_on_its_step_twin(n):
    # Twins with the same loss: the rate climbs linearly over the flat stretch and the loss
    # falls once it is high enough (a warmup doing its job), vs held at the low rate and
    # raised in one step where the fall begins (stuck at a rate that could not learn).
    t = np.arange(n)
    warm = np.minimum(1e-3, 1e-5 + (1e-3 - 1e-5) * t / (0.4 * n))
    step = np.where(t < 0.4 * n, 1e-5, 1e-3)
    for seed in range(5):
        x = stuck_then_falls(n, seed)
        assert findings(x, lr=warm) == [], seed
        assert len(findings(x, lr=step)) == 1, seed


def test_silent_when_a_step_schedule_cut_the_learning_rate_after_convergence():
    # Fell, converged at this rate (the saddle's level), cut at the end of it, fell again.
    n = 600
    lr = np.where(np.arange(n) < 0.5 * n, 0.1, 0.01)
    for seed in range(10):
        assert findings(saddle(n, seed), lr=lr) == []


@pytest.mark.parametrize("n", [200, 1000])
def test_fires_when_flat_from_the_start_until_any_schedule_change(n):
    # Stuck from the start: whatever change of the rate ended it (a raise:
    # it was too low; a cut: too high to learn), the steps were wasted.
    for lr in (np.where(np.arange(n) < 0.4 * n, 0.1, 0.01), np.where(np.arange(n) < 0.4 * n, 1e-5, 1e-3)):
        for seed in range(10):
            (f,) = findings(stuck_then_falls(n, seed, sd=0.05), lr=lr)
            assert f.evidence["start_step"] <= 0.1 * n and 0.3 * n <= f.evidence["end_step"] <= 0.45 * n


@pytest.mark.parametrize("n", [50, 300, 3000])
def test_healthy_twin_is_silent(n):
    for seed in range(100):
        x = healthy(n, seed, noise=(0.02, 0.1, 0.3)[seed % 3], schedule=("none", "step", "cosine")[seed % 3],
                    warmup=seed % 2 == 0, scale=10.0 ** (seed % 7 - 3))
        assert findings(x) == [], seed


def test_converged_tail_flat_to_the_end_is_not_a_plateau():
    for seed in range(20):
        assert findings(healthy(5000, seed, rate=40)) == []


def test_flat_from_start_to_end_is_not_a_plateau():
    for seed in range(20):
        assert findings(noise(2000, seed)) == []


def test_slow_start_that_keeps_accelerating_is_not_a_plateau():
    t = np.linspace(0, 1, 250)
    for seed in range(20):
        x = (0.5 + 0.9 / (1 + np.exp((t - 0.3) * 12))) * np.exp(0.01 * np.random.default_rng(seed).standard_normal(250))
        assert findings(x) == []


def test_mostly_silent_on_random_walks():
    hits = sum(bool(findings(random_walk(3000, seed, sd=0.003))) for seed in range(20))
    assert hits <= 3


def test_silent_on_unstable_and_diverged_curves():
    x = stuck_then_falls(600, 0)
    x[500] = np.nan
    assert findings(x) == []


def test_parameters_are_stored_and_used():
    det = Plateau(min_length=0.6)
    assert det.min_length == 0.6
    assert findings(stuck_then_falls(600, 0), det) == []


def _plateau_then_fall(n: int, seed: int, *, flat: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    after = np.clip(t - flat, 0, None)
    return (0.05 + (ln(4) - 0.05) * np.exp(-12 * after)) * np.exp(0.01 * rng.standard_normal(n))


@pytest.mark.parametrize(("lr", "severity", "raised"), [
    ("constant", "info", False), ("raised", "warning", True), (None, "info", None)])
def test_a_plateau_is_a_warning_only_when_the_rate_was_raised(lr, severity, raised):
    # Round 21: with no rate logged, as on a console paste that prints only the loss (Equinox's RNN
    # example, flat at ln 2 for 75 of 200 steps, then down to 0.002), nothing says the rate could not
    # learn; the run recovered, an info. Round 20 and before called it a warning.
    n = 1000
    rate = {"constant": np.full(n, 1e-3), "raised": np.where(np.arange(n) < 300, 1e-6, 1e-3), None: None}[lr]
    d = analyze(make_run(_plateau_then_fall(n, 0), lr=rate))
    (f,) = [f for f in d.findings if f.code == "plateau"]
    assert f.severity == severity and f.evidence["lr_raised"] is raised, f


def _phased_layers(n: int, backbone_moves, every: int = 10):
    """A layers table of a backbone of two modules and a head: the backbone's update norm is 1e-2 on
    the records where ``backbone_moves(steps)`` holds and 0 elsewhere; the head always moves."""
    from runlens.testing import format_table

    steps = np.arange(0, n, every, dtype=np.int64)
    names = ["backbone0.weight", "backbone1.weight", "head.weight"]
    body = np.where(backbone_moves(steps), 1e-2, 0.0)
    upd = np.stack([body, body, np.full(steps.size, 1e-2)], axis=1)
    table = format_table("layers", {"step": np.repeat(steps, 3), "layer": names * steps.size,
                                    "grad_norm": np.ones(3 * steps.size), "weight_norm": np.full(3 * steps.size, 5.0),
                                    "update_norm": upd.ravel()})
    meta = [{"name": nm, "index": i, "module": nm.split(".")[0], "kind": "Linear", "shape": [8, 8], "numel": 64}
            for i, nm in enumerate(names)]
    return table, {"name": "phased", "layers": meta}


@pytest.mark.parametrize("seed", range(5))
def test_silent_when_the_fall_came_with_unfreezing_a_backbone(seed):
    n = 2000
    x = stuck_then_falls(n, seed)  # flat for 40% of the run, then learns
    table, meta = _phased_layers(n, lambda s: s >= 0.4 * n)
    assert findings(x, layers=table, meta=meta) == []


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("moves", [lambda s: s >= 0, lambda s: s < 0], ids=["all-along", "frozen-for-good"])
def test_fires_when_the_backbone_moved_all_along_or_never(seed, moves):
    # Twins of the unfrozen run: every module moving from the start (a real plateau), and a backbone
    # frozen for good (it did not end the plateau).
    n = 2000
    table, meta = _phased_layers(n, moves)
    [f] = findings(stuck_then_falls(n, seed), layers=table, meta=meta)
    assert f.code == "plateau"
