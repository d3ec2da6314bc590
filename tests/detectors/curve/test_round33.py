"""Round 33's curve and gradient readings, from the nineteenth thread set's misses (a development set since
its one grading in round 32) and the development sets', each with a silent twin:

- no progress is not judged while the logged learning rate is still warming up;
- a loss printed alike too coarsely to resolve a learning model's change (epoch means of 0.0030 counted in
  rows) is a band, stuck only where a band is;
- a held-out loss that stands at twice its minimum or more at each of the 2 evaluations or more after it,
  while the training loss kept falling, overfit, by effect size where a rank test has no power;
- a held-out accuracy named with how it was pooled (``Eval Acc (total)``) is the held-out accuracy;
- a run that ends inside a new gradient-norm surge (each of its last points a decade and 6 robust sd above
  the norms before) has exploding gradients.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from tests.detectors.loss_synth import make_run

# SPML-LAC's first epoch: the loss rises from its first print, then falls, while the rate warms up.
WARMING = [4.002, 5.981, 5.771, 5.678, 5.609, 5.530, 5.502, 5.456, 5.440]
STEPS = np.array([0, 99, 199, 299, 399, 499, 599, 699, 799])


def test_no_progress_is_not_judged_while_the_rate_warms_up():
    d = analyze(make_run(np.array(WARMING), steps=STEPS, lr=np.linspace(4.0e-6, 4.56e-6, STEPS.size)))
    assert d.curve.label != "underfitting", d.curve


def test_silent_twin_a_constant_rate_leaves_no_progress_judged():
    d = analyze(make_run(np.array(WARMING), steps=STEPS, lr=np.full(STEPS.size, 4.0e-6)))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_no_progress", d.curve


def _rows(loss, index="row", n=8):
    return make_run(np.full(n, loss), steps=np.arange(n), meta={"name": "synthetic", "config": {"index_kind": index}})


def test_epoch_means_alike_at_a_coarse_print_counted_in_rows_are_not_stuck():
    assert analyze(_rows(0.003)).curve.label != "underfitting"


@pytest.mark.parametrize("why, loss, index", [
    ("resolved to a thousandth of the level", 2.3456, "row"),
    ("a minibatch's loss step after step", 0.003, "step"),
])
def test_silent_twins_values_printed_alike_are_stuck(why, loss, index):
    d = analyze(_rows(loss, index))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_stuck", why


# investibot's four epochs: the held-out loss triples after its minimum while the training loss falls 25x.
TRAIN = np.array([0.02803, 0.01816, 0.00525, 0.00074])
EPOCHS = np.array([0, 2, 4, 6])


def test_a_held_out_loss_at_twice_its_minimum_after_it_overfit():
    d = analyze(make_run(TRAIN, steps=EPOCHS, val_loss=np.array([0.03099, 0.02076, 0.05875, 0.06544]),
                         val_steps=EPOCHS))
    assert d.curve.label == "overfitting" and d.curve.evidence["kind"] == "short_overfitting_manyfold", d.curve
    assert d.curve.evidence["least_ratio_after_min"] > 2.8


@pytest.mark.parametrize("why, val", [
    ("under twice its minimum", [0.031, 0.021, 0.035, 0.038]),
    ("one evaluation after the minimum", [0.031, 0.025, 0.021, 0.065]),
    ("a swing, not a rise: it jumped before its minimum too", [0.031, 0.090, 0.021, 0.059, 0.065]),
])
def test_silent_twins_of_a_manyfold_rise(why, val):
    n = len(val)
    steps = np.arange(n) * 2
    d = analyze(make_run(np.geomspace(0.028, 0.0007, n), steps=steps, val_loss=np.array(val), val_steps=steps))
    assert d.curve.evidence.get("kind") != "short_overfitting_manyfold", why


def test_silent_twin_a_manyfold_rise_while_the_training_loss_rose_too():
    d = analyze(make_run(np.array([0.028, 0.018, 0.020, 0.030]), steps=EPOCHS,
                         val_loss=np.array([0.03099, 0.02076, 0.05875, 0.06544]), val_steps=EPOCHS))
    assert d.curve.evidence.get("kind") != "short_overfitting_manyfold", d.curve


def _segmentation(tmp_path, held):
    lines = []
    rng = np.random.default_rng(1)
    for e in range(1, 7):
        lines += [f"epoch: {e:2d}/10 batch {b:3d}/23 Train loss: {0.7 * np.exp(-(23 * e + b) / 60) * (1 + 0.2 * rng.standard_normal()):.6f}, "
                  f"Acc: {0.8 + 0.1 * rng.random():.6f}" for b in range(1, 24)]
        lines.append(f"{held}: {0.8812751913070679:.16f}")
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_held_out_accuracy_named_with_its_pooling_is_read_frozen(tmp_path):
    d = analyze(_segmentation(tmp_path, "Eval Acc (total)"))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "frozen_accuracy", d.curve


def test_silent_twin_an_accuracy_named_with_other_words_is_not_the_held_out_one(tmp_path):
    d = analyze(_segmentation(tmp_path, "Eval Acc (road class)"))
    assert d.curve.evidence.get("kind") != "frozen_accuracy", d.curve


# fairseq's last lines: the gradient norm 0.788 six times, then 11.5 and 13.5 where the log ends.
NORMS = [0.788, 0.788, 0.787, 0.788, 0.794, 0.795, 11.481, 13.519]


def _surge(norms):
    loss = np.linspace(10.093, 9.979, len(norms))
    return analyze(make_run(loss, steps=np.arange(371, 371 + 10 * len(norms), 10), scalars={"grad_norm": norms}))


def test_a_run_that_ends_inside_a_new_gradient_surge_explodes():
    found = [f for f in _surge(NORMS).findings if f.code == "exploding_gradients"]
    assert found and found[0].evidence["kind"] == "held_surge" and found[0].evidence["points_in_surge"] == 2


@pytest.mark.parametrize("why, norms", [
    ("under a decade", NORMS[:6] + [5.1, 6.0]),
    ("one point is a spike's", NORMS[:7] + [0.79]),
    ("its own noise makes such jumps", [0.3, 4.1, 0.2, 6.0, 0.5, 3.9, 9.5, 8.8]),
    ("held since earlier in the log", NORMS[:3] + [11.2, 12.0, 11.7, 11.5, 13.5]),
])
def test_silent_twins_of_a_held_surge(why, norms):
    found = [f for f in _surge(norms).findings if f.code == "exploding_gradients"]
    assert not any(f.evidence.get("kind") == "held_surge" for f in found), why
