"""lr_schedule_collapse: the rate falls by decades in the first epochs and stays there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gradients_synth import check
from loss_synth import healthy, make_run

from runlens.analysis import analyze

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "bugs"


def test_real_run_names_the_bug_first_and_leads_lr_too_low():
    diag = analyze(FIX / "lr_schedule_collapse-bn_cnn")
    f = diag.findings[0]
    assert f.code == "lr_schedule_collapse"
    assert f.evidence["scheduler_per_optimizer_step"] == pytest.approx(1.0)
    assert f.evidence["collapse_step"] < 2 * f.evidence["steps_per_epoch"]
    low = [x for x in diag.findings if x.code == "learning_rate_too_low"]
    assert all("lr_schedule_collapse" in x.evidence["caused_by"] for x in low)
    assert "lr_schedule_collapse" in diag.curve.reason or diag.curve.label == "healthy"


def test_real_fixed_twin_is_silent():
    diag = analyze(FIX / "lr_schedule_collapse-bn_cnn-fixed")
    assert "lr_schedule_collapse" not in {f.code for f in diag.findings}


def _run(lr, n=600):
    return make_run(healthy(n, 0), lr=lr, scalars={"epoch": np.arange(n) // 30})


def test_per_batch_step_decay_fires():
    n = 600
    [f] = check("lr_schedule_collapse", _run(0.05 * 0.8 ** np.arange(n)))
    assert f.evidence["decades"] > 10


@pytest.mark.parametrize("kind", ["cosine", "step_per_epoch", "warm_restarts", "warmup_then_constant", "plateau"])
def test_healthy_schedules_are_silent(kind):
    n = 600
    t = np.arange(n)
    lr = {"cosine": 0.05 * 0.5 * (1 + np.cos(np.pi * t / n)),
          "step_per_epoch": 0.05 * 0.8 ** (t // 30),
          "warm_restarts": 0.05 * 0.5 * (1 + np.cos(np.pi * (t % 100) / 100)) + 1e-6,
          "warmup_then_constant": np.minimum(1e-6 + t / 50, 1.0) * 0.05,
          "plateau": 0.05 * 0.1 ** (t // 200)}[kind]
    assert check("lr_schedule_collapse", _run(lr)) == []


def test_plateau_drops_within_a_quarter_of_the_run_but_after_two_epochs_are_silent():
    """ReduceLROnPlateau with a short patience: three 10x drops by a quarter of the run, epochs of 10 steps."""
    n = 600
    t = np.arange(n)
    lr = 0.05 * 0.1 ** np.minimum(t // 40, 3)
    run = make_run(healthy(n, 0), lr=lr, scalars={"epoch": t // 10})
    assert check("lr_schedule_collapse", run) == []


@pytest.mark.parametrize("control", ["control-warm_restarts-lstm", "control-one_cycle-decoder"])
def test_real_per_batch_schedules_that_are_meant_are_silent(control):
    """Warm restarts touch ~0 at every cycle's end; one-cycle ends 1e5 below its peak: both on purpose."""
    diag = analyze(FIX / control)
    assert "lr_schedule_collapse" not in {f.code for f in diag.findings}


def test_a_linear_decay_to_zero_over_a_two_epoch_fine_tune_is_silent():
    n = 600
    t = np.arange(n)
    run = make_run(healthy(n, 0), lr=5e-5 * (1 - t / n), scalars={"epoch": t // 300})
    assert check("lr_schedule_collapse", run) == []
