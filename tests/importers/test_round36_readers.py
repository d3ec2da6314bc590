"""Round 36's readings, from the twenty-second thread set (a development set since its one grading in
round 35) and the earlier sets' refusals:

- A classifier's print ``correct: 234, N_test: 468 ------>  loss: 58.2, accuracy_val: %50.0`` puts the
  percent sign before the number; the accuracy was not read. It is now. (That it sits at exactly 50.0 at
  each of five epochs is not read as stuck: a value of exactly 1/K printed to two digits of a fraction
  repeats by rounding for a model of more than K classes too, as round 19's twin says.)
- An agent's loop prints ``episode 6264 score -73.42 average score -178.85``: a score below zero is no
  accuracy, F-score or rate, so it is read as a reward (the log was refused: no loss); of one quantity
  printed as its last value and its mean, the mean is read.
- A log that names no loss but prints NaN where a number goes is read for it (``nonfinite_metric``).
- A value alone on its line may follow the loop's own counter (``12:\t0.53``, ``Step: 100 : 0.626``).
- An F-score beside its macro average is one quantity; a GAN's players printed as their named parts
  (``d_real``, ``d_fake``, ``g_adv``, ``g_l1``) are summed as the players are.

Each has a silent twin.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.detectors.curve.memorized import _error_ratio
from runlens.errors import ImportFailedError
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines


def _classifier(acc_text, losses):
    out = []
    for e, loss in enumerate(losses, 1):
        out += [f"Epoch: {e}", f"correct: 234, N_test: 468 ------>  loss: {loss}, accuracy_val: {acc_text}"]
    return out


LOSSES = [58.2041027, 51.47981386, 51.57150275, 39.14232715, 32.23730827]


def test_a_percent_sign_before_the_number_is_read(tmp_path):
    run = load_run(write_lines(tmp_path, _classifier("%50.0", LOSSES)))
    assert run.evals.column("accuracy_val").to_pylist() == [50.0] * 5


def _episodes(scores, averages):
    return [f"episode {6264 + i} score {s:.2f} average score {a:.2f}" for i, (s, a) in enumerate(zip(scores, averages,
                                                                                                      strict=True))]


def test_a_score_below_zero_is_read_as_a_reward(tmp_path):
    rng = np.random.default_rng(0)
    scores = -150 + 60 * rng.standard_normal(20)
    averages = -178 + 0.3 * np.arange(20)
    run = load_run(write_lines(tmp_path, _episodes(scores, averages)))
    loss = run.config["import_roles"]["loss"]
    assert loss["how"] == "negated" and "reward" in loss["why"]
    assert loss["columns"] == ["average score"]  # the mean of one quantity, not its last episode


def test_silent_twin_a_score_in_zero_one_is_no_reward(tmp_path):
    lines = [f"episode {i} score 0.{40 + i:02d} average score 0.{38 + i:02d}" for i in range(20)]
    try:
        run = load_run(write_lines(tmp_path, lines))
    except ImportFailedError:
        return  # refused: what a score in [0, 1] is, --loss must say
    assert (run.config.get("import_roles") or {}).get("loss", {}).get("how") != "negated"


def test_the_memorization_reason_says_no_training_example_was_wrong():
    said = _error_ratio(np.array([1.0, 1.0]), np.array([0.68, 0.66]))
    assert "no training example wrong" in said and "x the training" not in said
    assert _error_ratio(np.array([0.98, 0.99]), np.array([0.7, 0.72])) == "15x the training one or more"


def _gan(last_fake):
    rows = [(0.0029, 0.2467, 5.1365), (0.0502, 0.0221, 4.6196), (0.1681, 1.4960, 10.9195), (3.1730, 0.2484, 4.5510),
            (1.1659, 75.2122, last_fake)]
    return [f"{1293 + i}: [D] real {r:.6f} fake {f:.6f}:  [G] fake {g:.6f}" for i, (r, f, g) in enumerate(rows)]


def test_a_log_that_names_no_loss_but_prints_nan_is_read_for_it(tmp_path):
    # A GAN's own print: no word names a loss, so the log was refused, though its last line is NaN.
    d = analyze(write_lines(tmp_path, [*_gan(float("nan"))]))
    found = {f.code: f for f in d.findings}
    assert "nonfinite_metric" in found and found["nonfinite_metric"].severity == "error"
    assert found["nonfinite_metric"].evidence["training_loss_logged"] is False
    assert "prints no training loss" in found["nonfinite_metric"].title
    assert d.curve.label == "insufficient_data"


def test_silent_twin_a_log_that_names_no_loss_and_stays_finite_is_refused(tmp_path):
    with pytest.raises(ImportFailedError, match="no training loss"):
        load_run(write_lines(tmp_path, _gan(14.65)))


def test_a_value_after_the_loops_own_counter_is_read_alone(tmp_path):
    # print(f"{i}:\t{loss}"): one value per line after a counter and a colon or a tab
    lines = ["exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)", "1:\t30.651899338"] + [
        f"{i}:\tnan" for i in range(2, 8)]
    d = analyze(write_lines(tmp_path, lines))
    assert d.curve.label == "diverged" and "nonfinite_loss" in {f.code for f in d.findings}


def test_silent_twin_a_counter_and_a_value_set_apart_by_a_space_is_not_a_bare_value():
    from runlens.io.importers._evalline import bare_value

    assert bare_value("2020 0.5") is None and bare_value("3:\t7") is None and bare_value("Epoch: 3") is None
    assert bare_value("12: 0.25") == 0.25 and bare_value("Step: 100 : 0.6261083 ") == 0.6261083


def test_a_step_word_and_its_counter_before_a_lone_value(tmp_path):
    # R torch's print: "Step: 100 : 0.6261083"
    values = [1.01752, 0.6261083, 0.2703869, 0.1911, 0.1512, 0.1299]
    run = load_run(write_lines(tmp_path, [f"Step: {max(1, 100 * i)} : {v} " for i, v in enumerate(values)]))
    assert run.scalars.column("loss").to_pylist() == pytest.approx(values)


def _nextgrid(means, lasts):
    out = []
    for i, (m, last) in enumerate(zip(means, lasts, strict=True)):
        out += [f"Episodes: {18180 + 10 * i}", f"Num steps: {20000 * (i + 1)}", f"Mean Episode reward: {m:.2f} ",
                f"Last Episode reward: {last:.2f} ", "=========== NEXTGRID.AI ================"]
    return out


def test_a_last_and_a_mean_of_one_reward_are_one_quantity_the_mean_read(tmp_path):
    run = load_run(write_lines(tmp_path, _nextgrid([-3, 14, -7, -47, -29], [-27.17, -2.79, -82.99, -55.45, 151.57])))
    loss = run.config["import_roles"]["loss"]
    assert loss["how"] == "negated" and loss["columns"] == ["Mean Episode reward"]
    # a negated reward crosses zero: no share of its start is measured, so no "gave back all progress"
    assert analyze(run).curve.evidence.get("kind") != "short_given_back"


def test_an_f_score_beside_its_macro_average_is_one_quantity(tmp_path):
    lines = [f"epoch {e} fscore {0.31 + 0.01 * e:.4f} macro_fscore {0.12 + 0.01 * e:.4f}" for e in range(1, 7)]
    loss = load_run(write_lines(tmp_path, lines)).config["import_roles"]["loss"]
    assert loss["how"] == "complement" and loss["columns"] == ["fscore"]


def test_silent_twin_two_quantities_of_a_loop_still_leave_the_choice(tmp_path):
    lines = [f"epoch {e} precision {0.31 + 0.01 * e:.4f} recall {0.52 - 0.01 * e:.4f}" for e in range(1, 7)]
    with pytest.raises(ImportFailedError):
        load_run(write_lines(tmp_path, lines))


def test_a_gan_players_named_parts_are_its_loss(tmp_path):
    lines = [f"Epoch {e} d_real: {0.7 - 0.01 * e:.4f} d_fake: {0.6 - 0.01 * e:.4f} g_adv: {1.2 + 0.01 * e:.4f} "
             f"g_l1: {25.0 - e:.4f} l1_w: 100" for e in range(1, 8)]
    loss = load_run(write_lines(tmp_path, lines)).config["import_roles"]["loss"]
    assert loss["how"] == "sum" and set(loss["columns"]) == {"d_real", "d_fake", "g_adv", "g_l1"}


def test_silent_twin_a_players_accuracy_is_no_part_of_its_loss():
    from runlens.io.reader.names import adversarial_side, tokens

    assert adversarial_side(tokens("d_fake")) == "d" and adversarial_side(tokens("g_adv")) == "g"
    assert adversarial_side(tokens("d_acc")) is None and adversarial_side(tokens("g_lr")) is None


def test_silent_twin_a_clock_at_inf_is_no_nan_signal(tmp_path):
    # "eta: inf" on a loop's first line is a convention, not a broken quantity: still refused
    lines = [f"{1293 + i}: [D] real 0.{10 + i}0000 fake 0.{20 + i}0000 eta: inf" for i in range(5)]
    with pytest.raises(ImportFailedError, match="no training loss"):
        load_run(write_lines(tmp_path, lines))
