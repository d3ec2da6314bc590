"""A loss that is still falling through its last third is progress, not instability: the late
spread is read around the late trend (runlens/detectors/curve/unstable.py ``late_noise``).

Found on a recorded run (third-fresh10 ``unfreeze-sepconv``, a healthy two-phase fine-tune whose
body is unfrozen at 40% of the run): the loss sits at ln 4 until then, falls faster and faster to
the end, and its noise grows with its gradients. The spread of its last third was the fall itself
(0.15 against a drop of 0.30), so it was called unstable. Each case has its twin: the same values
with the late third's order shuffled keep every value and lose only the fall, and are unstable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from curve_cases import SEEDS, labels
from loss_synth import make_run

from runlens import analyze
from runlens.detectors.curve import classify
from runlens.io.loader import load_run

RUN = Path(__file__).resolve().parents[2] / "fixtures" / "third" / "unfreeze-sepconv" / "run"


def late_unfreeze(seed: int, n: int = 500, k: int = 4, fall: float = 0.5) -> np.ndarray:
    """At ln k with minibatch noise until 62% of the run, then an accelerating fall whose noise grows."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    after = np.clip((t - 0.62) / 0.38, 0, 1)
    return np.log(k) - fall * after ** 1.6 + rng.normal(0, 0.01 + 0.06 * after, n)


def shuffled_late(x: np.ndarray, seed: int) -> np.ndarray:
    """The same values, the last third in a random order: its spread kept, its fall gone."""
    y = x.copy()
    third = max(3, x.size // 3)
    y[-third:] = np.random.default_rng(seed).permutation(y[-third:])
    return y


def test_a_loss_still_falling_fast_at_the_end_is_not_unstable():
    got = [classify(make_run(late_unfreeze(s))) for s in range(SEEDS)]
    assert all(v.label == "healthy" for v in got), [(v.label, v.reason) for v in got if v.label != "healthy"]
    assert all("still falling at the end" in v.reason for v in got)


def test_twin_the_same_late_values_without_their_fall_are_unstable():
    got = labels(lambda s: make_run(shuffled_late(late_unfreeze(s), s)))
    assert got.count("unstable") >= SEEDS - 2, got


def test_the_recorded_late_unfreeze_is_healthy_with_no_warning():
    diag = analyze(RUN)
    assert diag.curve.label == "healthy", diag.curve.reason
    assert "still falling at the end" in diag.curve.reason
    assert not [f.code for f in diag.findings if f.severity in ("warning", "error")]


@pytest.mark.parametrize("seed", range(5))
def test_twin_the_recorded_losses_with_the_late_third_shuffled_are_unstable(seed):
    run = load_run(RUN)
    steps, x = np.asarray(run.scalars["step"]), np.asarray(run.scalars["loss"], float)
    v = classify(make_run(shuffled_late(x, seed), steps=steps))
    assert v.label == "unstable", v.reason
    assert not v.evidence["late_still_falling"]


def test_a_settled_curve_still_says_settled():
    rng = np.random.default_rng(0)
    t = np.arange(2000) / 2000
    v = classify(make_run(0.2 + 2.0 * np.exp(-12 * t) + rng.normal(0, 0.02, 2000)))
    assert v.label == "healthy" and v.reason.endswith("and settled")
