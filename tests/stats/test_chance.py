"""runlens.stats.chance: the chance level ln K of a loss, and K read from the config."""

from __future__ import annotations

import math

from runlens.detectors.curve import chance_level


def test_chance_level_matches_ln_k_only_within_tolerance():
    assert chance_level(math.log(2))["chance_classes"] == 2
    assert chance_level(2.3026)["chance_classes"] == 10
    assert chance_level(0.5) is None
    assert chance_level(-1.0) is None
    assert chance_level(float("nan")) is None
    # Between ln 33 and ln 34: ambiguous without the config, exact with it.
    assert chance_level(3.511) is None
    assert chance_level(3.511, classes=33)["chance_classes"] == 33


def test_a_large_round_k_is_read_from_the_level_within_its_coincidence_distance():
    from runlens.stats.chance import COINCIDENCE_ALPHA, ROUND_DENSITY, level_coincidence

    tol = COINCIDENCE_ALPHA / (2 * ROUND_DENSITY)
    assert chance_level(math.log(65536) - 0.002)["chance_classes"] == 65536  # DINO's default head
    assert chance_level(math.log(1000) + 0.5 * tol)["chance_classes"] == 1000  # ImageNet
    assert chance_level(math.log(1024) - 2 * tol) is None  # near a round K, but not that near
    assert chance_level(math.log(50000)) is None  # not a round count: too many K near any level
    assert chance_level(math.log(3000)) is None
    assert chance_level(1e6) is None  # a blown-up loss: no K, no overflow
    assert chance_level(-math.log(1e-7)) is None  # a sigmoid saturated at Keras's epsilon, not 10^7 classes
    # At the edge of the window a level meets a round count by coincidence with probability alpha.
    assert math.isclose(level_coincidence(math.log(65536) + tol, 65536), COINCIDENCE_ALPHA)


def test_a_short_log_creeping_at_a_large_round_ln_k_is_stuck_at_chance(tmp_path):
    from runlens import analyze

    def log(levels):
        path = tmp_path / "log.txt"
        path.write_text("".join(f'{{"train_loss": {v!r}, "epoch": {e}}}\n' for e, v in enumerate(levels, 51)))
        return analyze(path)

    creeping = [math.log(65536) - 0.0007 - 0.00018 * i for i in range(11)]  # significant, and nothing
    diag = log(creeping)
    assert diag.curve.label == "underfitting" and diag.curve.evidence["chance_classes"] == 65536
    assert "loss_at_chance" in [f.code for f in diag.findings]
    # Silent twin: the same creep a hundredth below ln 65536 is a loss that merely moves slowly.
    twin = log([v - 0.01 for v in creeping])
    assert "loss_at_chance" not in [f.code for f in twin.findings]
    assert twin.curve.evidence.get("chance_classes") is None


def test_a_recorded_run_flat_at_ln_1024_is_at_chance_and_its_twin_off_the_level_is_not(tmp_path):
    import numpy as np

    from runlens import analyze
    from runlens.testing import build_run
    from tests.runs import write_run

    rng = np.random.default_rng(0)
    fall = np.r_[np.linspace(8.5, math.log(1024), 60), np.full(340, math.log(1024))]
    at_chance = fall + rng.normal(0, 0.0003, fall.size)  # a prior predicted: no batch noise to speak of
    diag = analyze(write_run(tmp_path / "a", build_run(loss=at_chance.tolist())))
    assert "loss_at_chance" in [f.code for f in diag.findings]
    assert diag.curve.label == "underfitting"
    off = at_chance - 0.05  # a plateau a twentieth of a nat below ln 1024: no round K that near
    twin = analyze(write_run(tmp_path / "b", build_run(loss=off.tolist())))
    assert "loss_at_chance" not in [f.code for f in twin.findings]
