"""Round 17, from the third thread set's misses (a development set since its one grading): a short log
whose last points sit at ln K to the printed digits, whatever came before; a held-out loss at ln K at
every evaluation; a log that starts at the start of training and never falls; a loss that swings by
an order of magnitude up and down. Each firing case has silent twins: the same numbers where the
reading does not hold (a level off ln K, a log that begins mid-run or in rows, a single jump)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from loss_synth import make_run

from runlens import analyze
from runlens.detectors.curve import classify


def _run(train, *, first=1, every=1, val=None, index="epoch", val_every=None):
    x = np.asarray(train, dtype=float)
    steps = np.arange(first, first + every * x.size, every)
    meta = {"name": "paste", "config": {"index_kind": index}}
    if val is None:
        return make_run(x, steps=steps, meta=meta)
    v = np.asarray(val, dtype=float)
    return make_run(x, steps=steps, val_loss=v, val_steps=steps[:v.size], meta=meta)


# allennlp r2c's four epochs: 1.356 after the first, then ln 4 = 1.38629 to the fifth digit.
R2C = [1.356284, 1.386393, 1.386381, 1.386379, 1.386330]


def test_a_loss_ending_at_ln_k_to_the_printed_digits_is_stuck_at_chance():
    run = _run(R2C, first=0)
    v = classify(run)
    assert v.label == "underfitting" and v.evidence["kind"] == "short_chance_tail"
    assert v.evidence["chance_classes"] == 4 and v.evidence["level_coincidence_p"] < 0.01
    assert "loss_at_chance" in {f.code for f in analyze(run).findings}


@pytest.mark.parametrize("tail", [
    [1.3700, 1.3690, 1.3695, 1.3688],      # flat, but 0.017 off ln 4: a coincidence test fails it
    [1.3900, 1.3700, 1.3500, 1.3300],      # passing through ln 4 on its way down
])
def test_silent_twin_a_tail_near_but_not_at_ln_k_is_not_chance(tail):
    v = classify(_run([1.45, *tail], first=0))
    assert v.evidence.get("kind") != "short_chance_tail" and "chance_classes" not in v.evidence


# Lasagne's MNIST example: the training loss falls toward 2.31, the validation loss never leaves ln 10.
LASAGNE_TRAIN = [2.471961, 2.366910, 2.332428, 2.319300, 2.313726, 2.310590]
LASAGNE_VAL = [2.303229, 2.303151, 2.301815, 2.301806, 2.301416, 2.301775]


def test_a_held_out_loss_at_ln_k_at_every_evaluation_is_underfitting():
    run = _run(LASAGNE_TRAIN, val=LASAGNE_VAL, index="row", first=0)
    v = classify(run)
    assert v.label == "underfitting" and v.evidence["kind"] == "short_validation_at_chance"
    assert v.evidence["chance_classes"] == 10 and v.evidence["evaluations"] == 6
    # The headline names the held-out loss, not the training loss that fell toward it.
    assert "the validation loss sits at ln(10)" in analyze(run).headline


@pytest.mark.parametrize("val", [
    [2.30, 1.90, 1.20, 0.80, 0.55, 0.40],                         # it learns from the first epoch on
    [2.2990, 2.2985, 2.2995],                                     # three, 0.0036 off ln 10: may be a coincidence
    [2.2630, 2.2620, 2.2640, 2.2610, 2.2625, 2.2615],             # flat, off ln 10 by 0.04
])
def test_silent_twin_a_held_out_loss_that_leaves_or_misses_ln_k(val):
    v = classify(_run(LASAGNE_TRAIN, val=val, index="row", first=0))
    assert v.evidence.get("kind") != "short_validation_at_chance"


# text2vec's CSV: ten evaluations from the first epoch's end (step 654), the loss 2.91 -> 2.85.
TEXT2VEC = [2.90996, 2.89890, 2.88251, 2.90830, 2.87316, 2.89475, 2.89139, 2.88878, 2.85856, 2.85335]


def test_a_log_from_the_start_of_training_that_never_falls_made_no_progress():
    v = classify(_run(TEXT2VEC, first=654, every=654, index="step"))
    assert v.label == "underfitting" and v.evidence["kind"] == "short_no_progress"
    assert abs(v.evidence["relative_drop"]) < 0.1 and v.evidence["span"] == 6540


@pytest.mark.parametrize("kw", [
    {"first": 150 * 654, "every": 654, "index": "step"},    # begins mid-run: a plateau may be healthy
    {"first": 0, "every": 1, "index": "row"},                # rows: where the log begins is unknown
    {"first": 10, "every": 10, "index": "step"},             # 100 steps from the start: inside a warmup
])
def test_silent_twin_the_same_numbers_mid_run_in_rows_or_within_a_warmup(kw):
    assert classify(_run(TEXT2VEC, **kw)).evidence.get("kind") != "short_no_progress"


def test_silent_twin_a_held_out_loss_that_fell_is_progress():
    val = [3.0, 2.7, 2.5, 2.3, 2.2, 2.1]
    v = classify(_run(TEXT2VEC, first=654, every=654, index="step", val=val))
    assert v.evidence.get("kind") != "short_no_progress"


def test_silent_twin_a_fall_from_the_first_epoch_is_progress():
    falling = [2.9 * math.exp(-0.15 * i) for i in range(10)]
    assert classify(_run(falling, first=1)).evidence.get("kind") != "short_no_progress"


# A Keras run's eight epochs from epoch 0 (round 18, the fourth thread set: "normal"): 8.3% down in
# all, each epoch below the one before.
KERAS_STEADY = [0.8586, 0.8168, 0.8095, 0.8032, 0.8001, 0.7941, 0.7898, 0.7872]


def test_silent_twin_a_small_fall_too_steady_for_noise_is_progress():
    v = classify(_run(KERAS_STEADY, first=0, val=[0.8122, 0.8112, 0.8107, 0.8102, 0.8069, 0.8022, 0.7992, 0.8005]))
    assert v.evidence.get("kind") != "short_no_progress" and v.label != "underfitting"


# DeepGLR's epochs 73-89: up and down by orders of magnitude, no downward trend.
DEEPGLR = [5547.6, 9985.5, 4113.4, 9297.8, 27624.5, 107140111.5, 337765.6, 44800.2, 4164.3, 1494.2,
           42806.4, 179602.2, 4865134.1, 2172.9, 1393.8, 36531.2, 3347.6]


def test_a_loss_swinging_tenfold_up_and_down_again_and_again_is_unstable():
    v = classify(_run(DEEPGLR, first=73))
    assert v.label == "unstable" and v.evidence["kind"] == "short_swings"
    assert v.evidence["swings_up"] >= 2 and v.evidence["swings_down"] >= 2


def test_three_tenfold_moves_both_ways_in_five_points_are_unstable():
    # BiSeNet on one class, iterations 100-500: never NaN, never settling, orders of magnitude apart.
    v = classify(_run([132873553.87, 46347.60, 307194.54, 20168.81, 148601438.12], first=1))
    assert v.label == "unstable" and v.evidence["kind"] == "short_swings"


@pytest.mark.parametrize("x", [
    [5.0, 4.8, 4.7, 470.0, 4.5, 4.4, 4.3, 4.2, 4.1],                 # one spike: up once, down once
    [0.5, 6.0, 60.0, 700.0, 800.0],                                  # up three times, never back: no swing
    [5.0, 12.0, 4.0, 11.0, 3.5, 9.0, 3.0, 8.0, 2.5, 7.0],            # swings under tenfold
])
def test_silent_twin_one_spike_or_smaller_swings_are_not_short_swings(x):
    assert classify(_run(x, first=73)).evidence.get("kind") != "short_swings"


# nanoGPT fine-tuning gpt2-xl on Shakespeare: two evaluations, the training loss down a third, the
# validation loss up, at four to six times the training loss.
NANO_ITERS = [1.2052, 1.1750, 1.0942, 1.9608, 0.6159, 0.9267, 2.4209, 1.0178, 0.6466, 0.9795, 1.1173, 0.2788,
              0.3390, 0.6703]
NANO_STEPS = [791, 792, 793, 794, 795, 796, 797, 798, 799, 800, 997, 998, 999, 1000]


def _nano(val, val_steps=(800, 1000)):
    return make_run(np.asarray(NANO_ITERS), steps=np.asarray(NANO_STEPS), val_loss=np.asarray(val, dtype=float),
                    val_steps=np.asarray(val_steps), meta={"name": "paste", "config": {"index_kind": "step"}})


def test_a_gap_that_widens_over_two_evaluations_is_overfitting():
    v = classify(_nano([3.7535, 3.8986]))
    assert v.label == "overfitting" and v.evidence["kind"] == "gap_widens" and v.evidence["few_evals"]
    assert v.evidence["gap_ratio"] >= 2 and v.evidence["train_fall"] >= 0.1


@pytest.mark.parametrize("val", [
    [3.8986, 3.7535],        # the validation loss fell: learning carries over
    [1.10, 1.20],            # rose, but within twice the training loss
])
def test_silent_twin_a_falling_or_close_validation_loss_is_no_widening_gap(val):
    assert classify(_nano(val)).evidence.get("kind") != "gap_widens"


def test_silent_twin_a_training_loss_that_did_not_fall_between_the_evaluations():
    flat = make_run(np.full(14, 1.0) + 0.01 * (np.arange(14) % 2), steps=np.asarray(NANO_STEPS),
                    val_loss=np.asarray([3.7535, 3.8986]), val_steps=np.asarray([800, 1000]))
    assert classify(flat).evidence.get("kind") != "gap_widens"


# Round 18 (the fourth thread set): Keras' CSVLogger, six epochs; the training loss 0.41 -> 0.012, the
# validation loss noisy around 6 (its tau happens to be negative: no trend, not a rise).
CSV_TRAIN = [0.408623725504, 0.0300159885314, 0.0168089184037, 0.0153266232897, 0.0151334269571, 0.0122128902211]
CSV_VAL = [6.83833348285, 8.60203889262, 5.12557166382, 6.72021339459, 5.99330695598, 6.25637885545]


def test_a_noisy_flat_validation_loss_far_above_a_falling_training_loss_is_a_widening_gap():
    v = classify(_run(CSV_TRAIN, first=0, val=CSV_VAL))
    assert v.label == "overfitting" and v.evidence["kind"] == "gap_widens"
    assert v.evidence["val_trend"]["tau"] < 0 and v.evidence["val_p"] >= 0.05 and v.evidence["val_fall"] < 0.1


@pytest.mark.parametrize("val", [
    [6.84, 6.10, 5.60, 5.15, 4.70, 4.30],     # falls along a trend: it learns, however far above
    [6.84, 8.60, 5.13, 5.20, 4.90, 5.00],     # no trend, but a fall of more than a tenth
])
def test_silent_twin_a_validation_loss_that_made_progress_is_no_widening_gap(val):
    assert classify(_run(CSV_TRAIN, first=0, val=val)).evidence.get("kind") != "gap_widens"
