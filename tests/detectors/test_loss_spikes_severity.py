"""Round 19, from healthy recorder runs of a development set (third-fresh18) warned of a loss spike: a
spike that is one batch's loss (one logged step, logged every step around it, back at the next step,
under 2x its level) left the weights where they were, since a step's loss is measured before its update:
info, not a warning. So is a spike under 10x at the first two updates of a log that starts with
training (Adam's first steps). Silent twins (a warning still): the same spike lasting three steps, logged
every tenth step, at 3x its level, or at step 1 of a log pasted from the middle of a run."""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import make_run

from runlens.detectors import Context
from runlens.detectors.curve import classify
from runlens.detectors.loss_spikes import FIRST_RATIO, ONE_BATCH_RATIO, LossSpikes


def _spike(x, steps=None):
    run = make_run(x, steps=steps)
    found = LossSpikes().check(run, Context(curve=classify(run)))
    assert len(found) == 1, found
    return found[0]


def _noisy(n, seed=3):
    # A loss that falls and settles, with 3% multiplicative minibatch noise per step.
    rng = np.random.default_rng(seed)
    return (2.0 * np.exp(-np.arange(n) / 150) + 0.5) * np.exp(rng.normal(0, 0.03, n))


@pytest.mark.parametrize("seed", range(5))
def test_one_batch_under_twice_its_level_is_info(seed):
    x = _noisy(750, seed)
    x[557] *= 1.5  # under 2x the running level, far beyond 3% noise
    f = _spike(x)
    assert f.severity == "info" and f.evidence["one_batch"] is True and 557 in f.evidence["steps"]
    assert "one batch" in f.title


@pytest.mark.parametrize("why", ["three steps", "logged every tenth step", "three times its level"])
def test_silent_twins_stay_warnings(why):
    x = _noisy(750, 1)
    steps = None
    if why == "three steps":
        x[557:560] *= 1.5
    elif why == "logged every tenth step":
        x[557] *= 1.5
        steps = np.arange(750) * 10
    else:
        x[557] *= 1.5 * ONE_BATCH_RATIO
    f = _spike(x, steps)
    assert f.severity == "warning", why
    assert not f.evidence.get("one_batch")


def _start(first_step, mult):
    rng = np.random.default_rng(0)
    x = 0.8 * np.exp(-np.arange(40) / 30) * np.exp(rng.normal(0, 0.08, 40))
    x[1] = mult * float(np.median(x[:4]))
    return _spike(x, np.arange(40) + first_step)


def test_a_spike_at_the_first_updates_of_training_is_info():
    f = _start(0, 4.0)
    assert f.severity == "info" and f.evidence["first_updates"] is True and f.step == 1


@pytest.mark.parametrize("first_step, mult", [(500, 4.0), (0, 1.5 * FIRST_RATIO)])
def test_silent_twin_mid_run_or_tenfold_at_the_start(first_step, mult):
    f = _start(first_step, mult)
    assert f.severity == "warning" and not f.evidence.get("first_updates")
