"""Four evaluations whose held-out loss rises at each one after the first while the training loss
falls: overfitting, at the trend's level (exact p = 1/24 over every order of four; the permutation
test's 1% level is out of reach below five evaluations). Found by probing with pastes of
fine-tunes evaluated once per epoch ("eval loss goes up after epoch 1"). Each firing case has its
twin that keeps the old reading."""

from __future__ import annotations

import math

import numpy as np
import pytest
from loss_synth import make_run

from runlens import analyze
from runlens.detectors.curve import classify
from runlens.stats.evals import overfit_test


def _run(train: np.ndarray, val: list[float]):
    steps = np.arange(1, train.size + 1)
    val_steps = np.linspace(steps[0] + (steps.size // 4) - 1, steps[-1], 4).astype(int)
    return make_run(train, steps=steps, val_loss=np.array(val), val_steps=val_steps)


RISING = [1.9, 2.2, 2.6, 3.1]


@pytest.mark.parametrize("n", [4, 12, 200])
def test_four_rising_evaluations_with_a_falling_training_loss_overfit(n):
    train = 2.1 * np.exp(-np.linspace(0, 1, n))
    verdict = classify(_run(train, RISING))
    assert verdict.label == "overfitting"
    assert verdict.evidence["few_evals"] == 4
    assert math.isclose(verdict.evidence["val_perm_p"], 1 / 24)
    assert "exact p=0.042" in verdict.reason


def test_the_exact_p_counts_every_order():
    o = overfit_test(np.arange(4), np.array(RISING))
    assert o is not None and math.isclose(o["val_perm_p"], 1 / 24)


@pytest.mark.parametrize("val", [[1.9, 2.2, 2.1, 3.1], [2.2, 1.9, 2.6, 3.1], [1.9, 1.95, 2.6, 2.6]])
def test_silent_twin_four_evaluations_not_rising_at_each(val):
    train = 2.1 * np.exp(-np.linspace(0, 1, 12))
    verdict = classify(_run(train, val))
    if val == [2.2, 1.9, 2.6, 3.1]:
        # Not this reading's (it does not rise at each), but since round 20 an undone fall's: the gap to
        # the falling training loss widened at each of the four (exact 1/24) and the held-out loss rose
        # at both evaluations after its minimum to end 41% above its first.
        assert verdict.label == "overfitting" and verdict.evidence["kind"] == "short_val_undone"
        return
    assert verdict.label != "overfitting"


def test_three_evaluations_overfit_when_the_gap_doubled():
    # Since round 23: the held-out loss rose at each evaluation, 37% in all, while its ratio to the
    # halved training loss tripled (``gap_widens`` from 2 to 4 evaluations, by effect size).
    train = 2.1 * np.exp(-np.linspace(0, 1, 12))
    steps = np.arange(1, 13)
    run = make_run(train, steps=steps, val_loss=np.array(RISING[:3]), val_steps=np.array([4, 8, 12]))
    verdict = classify(run)
    assert verdict.label == "overfitting" and verdict.evidence["kind"] == "gap_widens"


def test_silent_twin_three_evaluations_say_nothing_while_the_gap_grew_less_than_twice():
    train = 2.1 * np.exp(-0.3 * np.linspace(0, 1, 12))
    steps = np.arange(1, 13)
    run = make_run(train, steps=steps, val_loss=np.array(RISING[:3]), val_steps=np.array([4, 8, 12]))
    assert classify(run).label != "overfitting"


def test_silent_twin_a_rise_below_a_tenth_of_the_minimum():
    train = 2.1 * np.exp(-np.linspace(0, 1, 12))
    assert classify(_run(train, [1.90, 1.93, 1.96, 2.0])).label != "overfitting"


def test_silent_twin_the_training_loss_rose_too():
    train = 1.0 * np.exp(np.linspace(0, 1, 12))
    assert classify(_run(train, RISING)).label != "overfitting"


def test_hugging_face_dict_lines_of_four_epochs(tmp_path):
    lines = []
    for e, (t, v) in enumerate(zip([2.1, 1.7, 1.2, 0.8], RISING, strict=True), 1):
        lines.append(f"{{'loss': {t}, 'learning_rate': {4e-5 / e:.1e}, 'epoch': {e - 0.5}}}")
        lines.append(f"{{'eval_loss': {v}, 'eval_runtime': 3.2, 'epoch': {float(e)}}}")
    path = tmp_path / "trainer.log"
    path.write_text("\n".join(lines) + "\n")
    d = analyze(path)
    assert d.curve.label == "overfitting"
    assert "overfitting" in [f.code for f in d.findings]


def _evals12(tail):
    # 12 evaluations: a fall to a minimum at the 8th, then the four given.
    return [2.0, 1.7, 1.45, 1.25, 1.1, 1.0, 0.95, 0.9, *tail]


@pytest.mark.parametrize("n", [12, 200])
def test_a_rise_at_each_of_four_evaluations_after_the_minimum_overfits(n):
    train = 2.1 * np.exp(-np.linspace(0, 2, n))
    steps = np.arange(1, n + 1)
    run = make_run(train, steps=steps, val_loss=np.array(_evals12([1.0, 1.1, 1.2, 1.3])),
                   val_steps=np.linspace(1, n, 12).astype(int))
    verdict = classify(run)
    assert verdict.label == "overfitting" and verdict.evidence["strict_rise_after_min"] == 4
    assert verdict.evidence["val_perm_p"] <= 1 / 24


@pytest.mark.parametrize("tail", [[1.0, 1.1, 1.05, 1.3], [0.91, 0.92, 0.93, 0.94]])
def test_silent_twin_four_after_the_minimum_not_rising_at_each_or_by_too_little(tail):
    train = 2.1 * np.exp(-np.linspace(0, 2, 12))
    run = make_run(train, steps=np.arange(1, 13), val_loss=np.array(_evals12(tail)),
                   val_steps=np.arange(1, 13))
    assert classify(run).label != "overfitting"
