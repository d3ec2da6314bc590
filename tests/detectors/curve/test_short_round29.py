"""Round 29, from the fifteenth thread set's misses (a development set since its one grading in round
28) and third-fresh28's overfitting miss: each reading on a synthetic log in a shape of its own, with a
silent twin.

- a log that prints only held-out values, the same at five evaluations or more, learnt nothing;
- a training loss exactly 0 at every line from the start never carried a signal;
- a loss near ln K beside an accuracy near 1/K, the same K, predicts the prior;
- a held-out loss within a thousandth of its level from the first evaluation on, while the training
  loss does not fall, learnt nothing;
- a tail held to the finest digit the print shows anywhere in the log (a printer that trims zeros) is
  stuck;
- a validation rise that levelled off (a rate annealed after the turn) is measured to where it settled.
"""

from __future__ import annotations

import numpy as np
import pytest
from loss_synth import healthy, make_run

from runlens import analyze, load_run
from runlens.detectors.curve import classify
from runlens.detectors.curve.short_stuck import FROZEN_EVALS, evaluations_frozen
from runlens.stats.evals import overfit_test


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


# -- held-out values only, the same at every evaluation -------------------------------------------

def test_held_out_values_only_the_same_at_every_evaluation_is_no_learning(tmp_path):
    diag = analyze(_write(tmp_path, [f"Epoch {e}: Test loss 0.887" for e in range(10)]))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_frozen_evaluations", diag.curve
    assert diag.curve.evidence["evaluations"] == 10 and diag.curve.evidence["training_loss_logged"] is False


@pytest.mark.parametrize("why, values", [
    ("the held-out loss moves", [0.887, 0.851, 0.802, 0.774, 0.760, 0.741]),
    ("four evaluations alike may be one model evaluated again", [0.887] * (FROZEN_EVALS - 1)),
    ("a print of one digit repeats by rounding alone", [0.9] * 8),
])
def test_silent_twins_of_frozen_held_out_values(tmp_path, why, values):
    diag = analyze(_write(tmp_path, [f"Epoch {e}: Test loss {v}" for e, v in enumerate(values)]))
    assert diag.curve.evidence.get("kind") != "short_frozen_evaluations", why


def test_frozen_evaluations_read_each_set_at_distinct_steps():
    same_step = {"val_loss": (np.zeros(6, dtype=np.int64), np.full(6, 0.823))}
    assert evaluations_frozen(same_step) is None  # one evaluation printed six times
    spread = {"val_loss": (np.arange(6), np.full(6, 0.823))}
    assert evaluations_frozen(spread) is not None


# -- a loss exactly 0 from the start ---------------------------------------------------------------

@pytest.mark.parametrize("steps", [(0, 10, 20), (0, 10)])
def test_a_loss_exactly_zero_from_the_start_never_carried_a_signal(tmp_path, steps):
    # Two epochs' averages of exactly 0 from epoch 0 are as telling as three: no model starts at a perfect fit.
    lines = [f"Step [{s}]  train Loss : 0.000000, training accuracy :  1" for s in steps]
    diag = analyze(_write(tmp_path, lines))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_zero_from_start", diag.curve


@pytest.mark.parametrize("why, steps, losses", [
    ("a loss that fell to 0 had a signal first", (0, 10, 20), (0.693, 0.0, 0.0)),
    ("a log that begins mid-run does not show the start", (5000, 5010, 5020), (0.0, 0.0, 0.0)),
    ("one line is too few", (0,), (0.0,)),
    ("two lines, the second a fall to 0", (0, 10), (0.693, 0.0)),
])
def test_silent_twins_of_a_zero_loss_from_the_start(tmp_path, why, steps, losses):
    lines = [f"Step [{s}]  train Loss : {v:.6f}, training accuracy :  1" for s, v in zip(steps, losses, strict=True)]
    assert analyze(_write(tmp_path, lines)).curve.evidence.get("kind") != "short_zero_from_start", why


# -- a loss at ln K beside an accuracy at 1/K --------------------------------------------------------

def _keras(tmp_path, losses, val_losses, val_acc):
    lines = []
    for e, (loss, vl, va) in enumerate(zip(losses, val_losses, val_acc, strict=True), start=1):
        lines += [f"Epoch {e}/30", f"1563/1563 [==============================] - 9s - loss: {loss:.4f} - accuracy: "
                  f"{min(0.99, va + 0.01):.4f} - val_loss: {vl:.4f} - val_accuracy: {va:.4f}"]
    return _write(tmp_path, lines, "fit.log")


LOSSES = [2.95, 2.36, 2.33, 2.28, 2.31, 2.29]  # settles about ln 10 = 2.3026, too noisy for the level alone
VAL_LOSSES = [2.40, 2.33, 2.27, 2.34, 2.28, 2.35]


def test_a_loss_at_ln_k_beside_an_accuracy_at_one_in_k_is_the_prior(tmp_path):
    diag = analyze(_keras(tmp_path, LOSSES, VAL_LOSSES, [0.10, 0.11, 0.09, 0.10, 0.10, 0.11]))
    ev = diag.curve.evidence
    assert diag.curve.label == "underfitting" and ev["kind"] == "short_chance_by_accuracy", diag.curve
    assert ev["chance_classes"] == 10 and ev["accuracy_set"] == "validation"


@pytest.mark.parametrize("why, val_acc", [
    ("an accuracy far above 1/K learnt something", [0.31, 0.38, 0.42, 0.45, 0.47, 0.49]),
    ("an accuracy far below 1/K is no prior's", [0.01, 0.02, 0.01, 0.02, 0.01, 0.02]),
])
def test_silent_twins_of_chance_by_accuracy(tmp_path, why, val_acc):
    diag = analyze(_keras(tmp_path, LOSSES, VAL_LOSSES, val_acc))
    assert diag.curve.evidence.get("kind") != "short_chance_by_accuracy", why


def test_chance_by_accuracy_needs_the_loss_near_ln_k(tmp_path):
    far = [2.95, 2.10, 2.02, 1.95, 1.97, 1.92]  # 15% under ln 10
    assert analyze(_keras(tmp_path, far, VAL_LOSSES, [0.10] * 6)).curve.evidence.get("kind") != "short_chance_by_accuracy"


# -- a held-out loss alike from the start ------------------------------------------------------------

def _epochs(tmp_path, rows):
    return _write(tmp_path, [f"epoch {e} | train loss {tl:.4f} | val loss {vl:.4f}" for e, tl, vl in rows])


FLAT_VAL = [1.2345, 1.2341, 1.2349, 1.2344, 1.2347, 1.2343, 1.2346]
NOISY_TRAIN = [1.31, 1.05, 1.52, 1.18, 1.44, 1.09, 1.36]  # no fall, too rough for a band of its own


def test_a_held_out_loss_alike_from_the_start_learnt_nothing(tmp_path):
    diag = analyze(_epochs(tmp_path, list(zip(range(7), NOISY_TRAIN, FLAT_VAL, strict=True))))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_validation_alike", diag.curve
    assert diag.curve.evidence["evaluations"] == 7


@pytest.mark.parametrize("why, rows", [
    ("evaluated mid-run: a converged model holds still too", list(zip(range(40, 47), NOISY_TRAIN, FLAT_VAL, strict=True))),
    ("the training loss fell by a third", list(zip(range(7), [1.31, 1.20, 1.10, 1.02, 0.95, 0.90, 0.86], FLAT_VAL, strict=True))),
    ("the held-out loss moves by a percent", list(zip(range(7), NOISY_TRAIN, [1.2345, 1.2290, 1.2401, 1.2210, 1.2377,
                                                                             1.2260, 1.2330], strict=True))),
])
def test_silent_twins_of_a_held_out_loss_alike_from_the_start(tmp_path, why, rows):
    assert analyze(_epochs(tmp_path, rows)).curve.evidence.get("kind") != "short_validation_alike", why


# -- a tail held to the print's finest digit ---------------------------------------------------------

def test_a_tail_held_to_the_finest_printed_digit_is_stuck(tmp_path):
    errors = [0.321375] + [0.5] * 9  # R prints 0.5, not 0.500000
    diag = analyze(_write(tmp_path, [f"Iteration: {i}, error: {v:g}, num trees: 1" for i, v in enumerate(errors, 1)]))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck_tail", diag.curve


def test_a_tail_printed_coarsely_everywhere_is_not_read_as_stuck(tmp_path):
    errors = [0.3] + [0.5] * 9  # one digit throughout: a thousandth is not resolved anywhere
    diag = analyze(_write(tmp_path, [f"Iteration: {i}, error: {v:g}, num trees: 1" for i, v in enumerate(errors, 1)]))
    assert diag.curve.evidence.get("kind") != "short_stuck_tail"


# -- a validation rise that levelled off ---------------------------------------------------------------

def _levelled(rise: float) -> tuple[np.ndarray, np.ndarray]:
    """A held-out loss that falls to 0.254, rises by ``rise`` of it over six evaluations, then holds to the
    fourth digit (a plateau scheduler annealed the rate to nothing), as third-fresh28's run did."""
    vs = np.arange(52, 1100, 53)
    up = 0.254 * (1 + rise * (1 - np.exp(-np.arange(1, vs.size - 2) / 2.0)))
    vl = np.concatenate([[0.33, 0.26, 0.254], up])
    return vs, np.round(vl, 4)


def test_a_rise_that_levelled_off_is_measured_to_its_level():
    vs, vl = _levelled(0.19)
    o = overfit_test(vs, vl)
    assert o is not None and o["val_rise"] >= 0.15 * 0.254
    assert classify(make_run(healthy(1100, 0, floor=0.05), val_loss=vl, val_steps=vs)).label == "overfitting"


def test_a_small_levelled_rise_stays_healthy():
    vs, vl = _levelled(0.04)  # 4% above the minimum: under min_val_rise
    assert classify(make_run(healthy(1100, 0, floor=0.05), val_loss=vl, val_steps=vs)).label == "healthy"


# -- a counter opening a line before a bracketed section label -------------------------------------

def test_a_counter_before_a_bracketed_section_label_is_the_step(tmp_path):
    lines = [f"{i}: [G] loss {v:.6f} reg 0.032323:  [D] real 0.1 fake 0.2" for i, v in
             zip(range(1290, 1300), np.linspace(5.1, 3.2, 10), strict=True)]
    run = load_run(_write(tmp_path, lines))
    assert list(run.column("scalars", "step")) == list(range(1290, 1300))


def test_a_counter_before_a_bracketed_list_is_no_section_label():
    from runlens.io.importers._roundline import LEADING
    assert LEADING.match("12: [G] loss 1.0") and not LEADING.match("12: [0.5, 0.3]")


# -- training gains that do not carry over -----------------------------------------------------------

def _fit_log(tmp_path, train, val):
    return _write(tmp_path, [f"Epoch {e}/40\n250/250 - 3s - loss: {t:.4f} - val_loss: {v:.4f}"
                             for e, (t, v) in enumerate(zip(train, val, strict=True), start=1)], "fit.log")


def test_a_held_out_loss_at_twice_the_training_loss_falling_a_little_is_overfitting(tmp_path):
    train = [1.2076, 1.1592, 1.1143, 1.0686, 1.0251, 0.9824, 0.9417, 0.9000, 0.8584]
    val = [3.0905, 3.0318, 3.0511, 3.0169, 3.0173, 3.0013, 2.9909, 3.0269, 3.0011]  # 3% down on a trend
    diag = analyze(_fit_log(tmp_path, train, val))
    assert diag.curve.label == "overfitting" and diag.curve.evidence["kind"] == "gap_widens", diag.curve


def test_a_flat_held_out_loss_below_the_training_loss_while_it_falls_is_overfitting(tmp_path):
    train = [55.80, 53.37, 51.05, 48.83, 46.71, 44.67, 42.73]  # dropout: the held-out loss is the lower
    val = [26.45, 26.30, 26.21, 26.17, 26.18, 26.23, 26.32]
    diag = analyze(_fit_log(tmp_path, train, val))
    assert diag.curve.label == "overfitting" and diag.curve.evidence["kind"] == "gap_widens", diag.curve


@pytest.mark.parametrize("why, train, val", [
    ("the held-out loss falls a third as fast as the training loss",
     [55.80, 53.37, 51.05, 48.83, 46.71, 44.67, 42.73], [26.45, 26.10, 25.71, 25.38, 25.02, 24.70, 24.31]),
    ("at twice the training loss, but down by a tenth", [1.2, 1.15, 1.1, 1.05, 1.0, 0.95, 0.9],
     [3.10, 2.98, 2.86, 2.75, 2.65, 2.55, 2.46]),
])
def test_silent_twins_of_gains_that_do_not_carry_over(tmp_path, why, train, val):
    assert analyze(_fit_log(tmp_path, train, val)).curve.label != "overfitting", why


# -- a first spike is no collapse; a logger's file and line is no field -------------------------------

def _steps_log(tmp_path, losses):
    return _write(tmp_path, [f"Epoch: 2, Step: {s}, accuracy: 0.97, all_loss: {v}, lr:0.01"
                             for s, v in zip(range(2200, 2200 + 200 * len(losses), 200), losses, strict=True)])


def test_a_loss_that_still_halves_after_a_thousandfold_fall_is_no_collapse(tmp_path):
    diag = analyze(_steps_log(tmp_path, [25545.7, 16.06, 10.78, 6.70, 5.02, 5.57, 5.13]))
    assert diag.curve.evidence.get("kind") != "short_collapsed", diag.curve


def test_a_loss_that_fell_a_thousandfold_and_stayed_is_a_collapse(tmp_path):
    diag = analyze(_steps_log(tmp_path, [2.5457, 0.0016, 0.0011, 0.0013, 0.0012, 0.0014, 0.0012]))
    assert diag.curve.evidence.get("kind") == "short_collapsed", diag.curve


def test_a_logger_s_file_and_line_is_no_field():
    from runlens.io.importers._textline import read_fields
    line = "VLOG[1](train-ctc-parallel:ctc-loss.cc:182) After 201933 sequences: Obj(log[Pzx]) = -41.6014"
    assert all(not k.endswith(".cc") for k, _ in read_fields(line))
    assert ("loss", 0.5) in read_fields("loss: 0.5 file: 3")


# -- a creep inside a thousandth ------------------------------------------------------------------------

CREEP = [2.977, 2.977, 2.976, 2.976, 2.975, 2.975, 2.976, 2.976, 2.975, 2.975, 2.975, 2.975, 2.975, 2.975, 2.974]


def test_a_creep_inside_a_thousandth_of_the_level_is_stuck(tmp_path):
    lines = [f"Epoch: [3][{i}/2512]   Time 0.556 (946.500)    Loss {v:.3f}" for i, v in
             zip(range(1700, 1700 + 50 * len(CREEP), 50), CREEP, strict=True)]
    diag = analyze(_write(tmp_path, lines))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] in ("short_stuck", "short_stuck_tail")


def test_the_same_creep_while_the_rate_anneals_is_not_read_as_stuck_tail():
    from runlens.detectors.curve.short_stuck import alike_tail
    x = np.array([3.9, 3.5, 3.2] + CREEP)
    steps = np.arange(x.size) * 50
    assert alike_tail(0.05, steps, x, annealing=False) is not None
    assert alike_tail(0.05, steps, x, annealing=True) is None  # the creep is a trend: a schedule's end


def test_chance_by_accuracy_takes_a_stated_class_count_and_none_for_a_proxy():
    from runlens.detectors.curve.short_stuck import chance_by_accuracy
    from runlens.stats.chance import NO_CHANCE
    steps, x = np.arange(6), np.array(LOSSES)
    acc = (None, (np.arange(6), np.array([0.10, 0.11, 0.09, 0.10, 0.10, 0.11])))
    assert chance_by_accuracy(steps, x, acc).evidence["chance_classes"] == 10
    assert chance_by_accuracy(steps, x, acc, 10).evidence["chance_classes"] == 10
    assert chance_by_accuracy(steps, x, acc, 7) is None  # the run says 7 classes: 0.10 is no 1/7
    assert chance_by_accuracy(steps, x, acc, NO_CHANCE) is None  # a loss read through a proxy has no ln K


def test_a_row_numbered_log_does_not_say_it_starts_at_the_start():
    from runlens.detectors.curve.short_stuck import zero_from_start
    assert zero_from_start(np.arange(3), np.zeros(3), "step") is not None
    assert zero_from_start(np.arange(3), np.zeros(3), "row") is None
