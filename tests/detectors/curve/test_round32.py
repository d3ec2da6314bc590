"""Round 32's curve readings, from the eighteenth thread set's misses (a development set since its one
grading in round 31), each with a silent twin:

- a loss that blew up three orders of magnitude or more at two points in a row and never came back to the
  range it trained in diverged, whatever it did after (a reset to chance, a slow fall from 1e11);
- a flat loss in a log that begins further into the run than it lasts is not judged: the plateau after
  progress looks the same as a run that never learned.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.detectors.curve.diverged import blew_up_for_good
from tests.detectors.loss_synth import make_run

# A CIFAR-10 classifier's batch losses (a blog's paste): epoch 10 normal, epoch 11 blows up to 5.7e11,
# epoch 23 comes down to ln 10 and stays there.
BLOWN = [0.8201, 0.6077, 0.5478, 0.6671, 0.8261, 0.6085, 0.7012, 0.8093, 0.6038, 0.5619, 0.6357, 0.6428,
         4.37e7, 4.07e9, 4.96e11, 5.71e11, 3.24e11, 2.68e11, 2.318, 2.236, 2.163, 2.136, 2.363]


@pytest.mark.parametrize("n_head", [0, 10])
def test_a_loss_that_blew_up_and_never_came_back_diverged(n_head):
    # Short (23 points) and long (33: ten more before the blow-up) logs alike.
    rng = np.random.default_rng(0)
    loss = np.asarray([0.7 + 0.1 * rng.standard_normal() for _ in range(n_head)] + BLOWN)
    d = analyze(make_run(loss))
    assert d.curve.label == "diverged", d.curve
    assert d.curve.evidence["kind"] == "blew_up_for_good"


@pytest.mark.parametrize("why, tail", [
    ("back within the range it trained in", [0.81, 0.74, 0.69, 0.66, 0.64]),
    ("one high point is a spike", None),
])
def test_silent_twins_of_a_blow_up_for_good(why, tail):
    x = np.asarray(BLOWN[:12] + [4.37e7] + [0.62, 0.60, 0.61, 0.59, 0.58, 0.60, 0.57] if tail is None
                   else BLOWN[:16] + tail)
    assert blew_up_for_good(x) is None, why
    assert analyze(make_run(x)).curve.label != "diverged", why


# A VAE's per-batch losses in epochs 7-8 (a pull request's paste showing the example works): flat at ~107.
FLAT = [107.73, 108.00, 106.27, 106.20, 110.81, 106.74, 106.27, 109.93, 105.29, 106.51, 107.42, 104.28, 108.21,
        108.05, 108.98, 103.24, 106.01, 103.60, 109.26, 109.69, 106.39, 106.33, 109.01, 106.75]


def _flat(first_step, every=1280):
    return make_run(np.asarray(FLAT), steps=first_step + every * np.arange(len(FLAT)))


def test_a_flat_loss_cut_from_the_middle_of_a_run_is_not_judged():
    c = analyze(_flat(406_079)).curve
    assert c.label == "insufficient_data" and c.evidence["kind"] == "began_mid_run", c


@pytest.mark.parametrize("why, first", [
    ("from the start of training", 0),
    ("a few intervals in: most of the run is in the log", 5 * 1280),
])
def test_silent_twins_a_flat_loss_that_shows_its_start_made_no_progress(why, first):
    assert analyze(_flat(first)).curve.label == "underfitting", why
