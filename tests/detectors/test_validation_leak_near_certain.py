"""validation_leak, near-certain held-out predictions: the target copied into the inputs of training
and held-out data alike makes both losses vanish together, so the ratio of the two shows nothing; a
K-class held-out loss that ends below 1/200 of ln K (the right class at 0.99 or more) is said, as
information.

Found on recorded runs (the third generator's ``leak-sepconv``: the label added to every input, both
losses about 1e-4 x ln K) that every draw confirming the leak missed. Each case has a twin: the same
scenario without the leak (held-out loss at 0.2 x ln K), the same curve on another scale, or a task
whose class count is not stated.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gradients_synth import check
from loss_synth import make_run

from runlens import analyze
from runlens.io.loader import load_run

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "third" / "target_leak-sepconv"


def test_recorded_leak_is_said_first_as_information():
    truth = json.loads((FIX / "truth.json").read_text())
    assert truth["bug"] == "target_leak" and truth["confirmed"]
    d = analyze(load_run(FIX / "fault"))
    assert d.findings and d.findings[0].code == "validation_leak", d.findings
    f = d.findings[0]
    assert f.severity == "info" and f.evidence["kind"] == "near_certain"
    assert f.evidence["val_over_chance"] < 5e-3 and f.evidence["chance_classes"] == 4
    assert "ln 4" in f.title and "check for a leak" in f.title
    assert f.advice.startswith("If the task is not known to be this easy")


def test_recorded_twin_without_the_leak_is_silent():
    d = analyze(load_run(FIX / "twin"))
    assert "validation_leak" not in [f.code for f in d.findings]


def _vanishing(n: int, seed: int, *, end: float, k: int) -> np.ndarray:
    """From ln K down to ``end`` x ln K, log-linearly, with multiplicative noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    return np.log(k) * np.exp(np.log(end) * np.minimum(1.0, 1.6 * t)) * np.exp(0.1 * rng.standard_normal(n))


def _run(end: float, *, k: int | None = 4, scale: float = 1.0, seed: int = 0, n: int = 600, evals: int = 20,
         dip_at: int | None = None):
    train = scale * _vanishing(n, seed, end=end, k=k or 4)
    vs = np.linspace(n / evals, n - 1, evals).astype(int)
    val = scale * _vanishing(n, seed + 100, end=end, k=k or 4)[vs]
    if dip_at is not None:
        val[dip_at:] = 1e-6
    run = make_run(train, val_loss=val, val_steps=vs)
    if k is not None:
        run.meta["config"] = {"num_classes": k}
    return run


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [2, 10, 1000])
@pytest.mark.parametrize("end", [1e-4, 2e-3])
def test_both_losses_vanishing_fires(seed, k, end):
    [f] = check("validation_leak", _run(end, k=k, seed=seed))
    assert f.severity == "info" and f.evidence["kind"] == "near_certain"
    assert f.evidence["val_over_chance"] < 5e-3


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("end", [0.2, 0.02, 1e-2])
def test_a_held_out_loss_that_ends_above_a_two_hundredth_of_ln_k_is_silent(seed, end):
    assert check("validation_leak", _run(end, seed=seed)) == []


def test_without_a_stated_class_count_nothing_is_said():
    # A regression's mean squared error can fall as far on a noiseless task: no yardstick, no finding.
    assert check("validation_leak", _run(1e-4, k=None)) == []


def test_a_training_loss_that_never_was_on_the_scale_of_ln_k_is_silent():
    # The same curve a hundred times smaller: not a K-class cross-entropy (a loss divided by a
    # constant, another quantity), so ln K says nothing about it.
    assert check("validation_leak", _run(1e-4, scale=0.01)) == []


@pytest.mark.parametrize("last", [1, 2])
def test_near_zero_on_only_the_last_evaluations_is_silent(last):
    # The last third's median is read: one or two evaluations at the end do not make a run near-certain;
    # seven do.
    assert check("validation_leak", _run(0.1, dip_at=20 - last)) == []
    [f] = check("validation_leak", _run(0.1, dip_at=13))
    assert f.evidence["first_leak_step"] == int(np.linspace(30, 599, 20).astype(int)[13])
