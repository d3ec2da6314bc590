"""Round 28, from the fourteenth thread set's misses (a development set since its one grading in round
27): each reading on a synthetic log in a shape of its own, with a silent twin.

- a training loss higher at every line than at the one before, over the whole of a short log (exact
  p = 1/n!), by a tenth of its largest magnitude or more, signed or not: diverged;
- a loss at 1e30 or beyond in magnitude: an overflow on its way, from one line;
- a run the training code stopped saying its loss blew up (``Exception: Loss exploded``), even when
  another exception was printed after it: diverged, with the message as evidence.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.detectors.curve import CurveClassifier
from runlens.detectors.curve.short_high import near_overflow, rose_throughout


def _print_log(tmp_path, losses, name="loss"):
    path = tmp_path / "train.log"
    path.write_text("".join(f"epoch {e}, {name} {v:.6g}, lr 0.001\n" for e, v in enumerate(losses, start=20)))
    return path


@pytest.mark.parametrize("losses", [
    [13.41, 13.84, 14.25, 14.69, 15.07],
    [-0.128, 0.175, 0.193, 0.220, 0.240, 0.256, 0.270],  # a signed loss: its range has a size
])
def test_a_loss_that_rose_at_every_line_diverged(tmp_path, losses):
    diag = analyze(_print_log(tmp_path, losses))
    assert diag.curve.label == "diverged" and diag.curve.evidence["kind"] == "short_rose_throughout", diag.curve
    assert diag.curve.evidence["p_value"] == pytest.approx(1 / np.prod(np.arange(1, len(losses) + 1)))


@pytest.mark.parametrize("why, losses", [
    ("four lines: p = 1/24 is no evidence at 0.01", [13.41, 13.84, 14.25, 14.69]),
    ("a rise of 1% of the level is noise around a plateau", [13.41, 13.42, 13.44, 13.47, 13.50]),
    ("one line lower breaks the order", [13.41, 13.84, 13.80, 14.69, 15.07]),
])
def test_silent_twins_of_a_rise_at_every_line(why, losses):
    steps = np.arange(len(losses))
    x = np.asarray(losses)
    assert rose_throughout(CurveClassifier(), steps, x, {}) is None, why


def test_a_loss_beyond_1e30_is_an_overflow_on_its_way(tmp_path):
    path = tmp_path / "gd.log"
    path.write_text("m -5.08e+35, b -1.04e+34, cost 4.58e+74 iteration 997\n"
                    "m 5.51e+35, b 1.13e+34, cost 5.39e+74 iteration 998\n"
                    "m -5.98e+35, b -1.22e+34, cost 6.34e+74 iteration 999\n")
    diag = analyze(path)
    assert diag.curve.label == "diverged" and diag.curve.evidence["kind"] == "short_near_overflow", diag.curve


def test_silent_twin_a_large_but_ordinary_loss():
    # A sum over a large data set (a reconstruction summed over pixels) is large, not overflowing.
    x = np.array([4.2e9, 3.1e9, 2.6e9])
    assert near_overflow(np.arange(3), x, {}) is None


EXPLODED = """Step   67456 [1.078 sec/step, loss=6.73029, avg_loss=6.65925]
Step   67457 [1.071 sec/step, loss=6.70211, avg_loss=6.65911]
Step   67458 [1.080 sec/step, loss=6.69802, avg_loss=6.65897]
Loss exploded to 378655.87500 at step 67459
Exiting due to exception: Loss exploded
Traceback (most recent call last):
  File "train.py", line 313, in train
    raise Exception('Loss exploded')
Exception: Loss exploded
Traceback (most recent call last):
  File "train.py", line 138, in <module>
    main()
TypeError: exceptions must derive from BaseException
"""


def test_a_run_stopped_by_its_own_loss_guard_diverged(tmp_path):
    path = tmp_path / "wavenet.log"
    path.write_text(EXPLODED)
    diag = analyze(path)
    assert diag.curve.label == "diverged" and diag.curve.evidence["kind"] == "stated_by_the_loop", diag.curve
    assert "Loss exploded" in diag.curve.evidence["message"]


def test_silent_twin_a_run_that_died_of_something_else(tmp_path):
    path = tmp_path / "wavenet.log"
    path.write_text(EXPLODED.replace("Loss exploded to 378655.87500 at step 67459\n", "")
                    .replace("Loss exploded", "Input queue is empty"))
    diag = analyze(path)
    assert diag.curve.label != "diverged", diag.curve


def _trainer_log(tmp_path, losses, lrs, start=3200):
    import json

    path = tmp_path / "trainer_log.jsonl"
    path.write_text("".join(json.dumps({"current_steps": start + 10 * i, "total_steps": start + 35, "loss": v,
                                        "learning_rate": lr, "epoch": 0.99}) + "\n"
                            for i, (v, lr) in enumerate(zip(losses, lrs, strict=True))))
    return path


def test_a_band_while_the_rate_anneals_to_its_end_is_not_stuck(tmp_path):
    diag = analyze(_trainer_log(tmp_path, [4.4671, 4.4577, 4.4458, 4.4598], [1.4e-8, 7.4e-9, 2.7e-9, 2.9e-10]))
    assert diag.curve.label == "insufficient_data", diag.curve


def test_silent_twin_the_same_band_at_a_constant_rate_is_stuck(tmp_path):
    diag = analyze(_trainer_log(tmp_path, [4.4671, 4.4577, 4.4458, 4.4598], [2e-5] * 4))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_stuck", diag.curve


@pytest.mark.parametrize("losses", [
    [0.006403] + [0.0] * 10,  # a cluster run whose cost is 0 at each pass after the first
    [12.18, 1.787e-06, 0.0],  # a language model's cross entropy at its first three steps
])
def test_a_loss_that_collapsed_to_nothing_in_one_interval_is_no_learning(tmp_path, losses):
    diag = analyze(_print_log(tmp_path, losses, name="cost"))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_collapsed", diag.curve


@pytest.mark.parametrize("why, losses", [
    ("a fall to near 0 over several lines is training", [0.69, 0.21, 0.05, 0.011, 0.002, 0.0004, 0.0001]),
    ("one low line that comes back is noise", [2.3, 0.001, 2.1, 2.0, 1.9]),
])
def test_silent_twins_of_a_collapse(tmp_path, why, losses):
    diag = analyze(_print_log(tmp_path, losses))
    assert diag.curve.evidence.get("kind") != "short_collapsed", why


def test_silent_twin_a_rate_printed_to_two_decimals_that_reads_0_is_no_collapse(tmp_path):
    # "0.00" is any value under 0.005: 0.97 -> 0.00 is a fall of 200x at most, not three orders.
    diag = analyze(_print_log(tmp_path, [0.97, 0.97, 0.00, 0.00, 0.00], name="cost"))
    assert diag.curve.evidence.get("kind") != "short_collapsed", diag.curve


def test_silent_twin_a_classifier_that_memorized_is_no_collapse(tmp_path):
    path = tmp_path / "cls.log"
    rows = [(0, 3.7, 3.1), (100, 2.7e-05, 23.0), (200, 9.7e-08, 24.0), (300, 4.6e-06, 36.0), (400, 1e-4, 23.0)]
    path.write_text("".join(f"Iter: {i}, Train Loss: {t:.2g}, Val Loss: {v:.2g}\n" for i, t, v in rows))
    diag = analyze(path)
    assert diag.curve.evidence.get("kind") != "short_collapsed", diag.curve


def _speedometer(tmp_path, rows):
    path = tmp_path / "mx.log"
    path.write_text("".join(f"INFO:root:Epoch[0] Batch [{20 * i}-{20 * i + 20}]\tSpeed: 0.96 samples/sec\t"
                            f"acc={a:.6f}\tlossvalue={v:.6f}\n" for i, (a, v) in enumerate(rows)))
    return path


# No trend, and a band wider than the stuck band (4% of the level): only the accuracy says it.
FLAT = [6.24, 6.05, 6.31, 6.12, 6.28, 6.10, 6.22, 6.33, 6.08, 6.25, 6.15, 6.20]


def test_an_accuracy_near_zero_beside_a_loss_that_does_not_fall_is_no_learning(tmp_path):
    acc = [0.006, 0.0, 0.0, 0.006, 0.006, 0.006, 0.0, 0.0, 0.0, 0.0125, 0.0, 0.006]
    diag = analyze(_speedometer(tmp_path, list(zip(acc, FLAT, strict=True))))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_accuracy_near_zero", diag.curve


@pytest.mark.parametrize("why, acc, loss", [
    ("an accuracy rising from zero: the first iterations of a thousand-class run",
     [0.001 * (i + 1) for i in range(12)], FLAT),
    ("a loss that falls is progress, however low the accuracy", [0.003] * 12, [7.76 - 0.12 * i for i in range(12)]),
    ("an accuracy above 5%", [0.3] * 12, FLAT),
])
def test_silent_twins_of_an_accuracy_near_zero(tmp_path, why, acc, loss):
    diag = analyze(_speedometer(tmp_path, list(zip(acc, loss, strict=True))))
    assert diag.curve.evidence.get("kind") != "short_accuracy_near_zero", why


def test_silent_twin_the_first_four_logs_of_a_run_at_accuracy_zero(tmp_path):
    # A face-recognition run's first steps read 0.000 as they should ("wait for more iterations").
    diag = analyze(_speedometer(tmp_path, list(zip([0.0] * 4, FLAT[:4], strict=True))))
    assert diag.curve.evidence.get("kind") != "short_accuracy_near_zero", diag.curve


NEURALTALK = """253/15000 batch done in 5.037s. at epoch 0.84. loss cost = 37.447347, reg cost = 0.000001
254/15000 batch done in 5.082s. at epoch 0.85. loss cost = 39.408169, reg cost = 0.000001
255/15000 batch done in 4.914s. at epoch 0.85. loss cost = 40.730310, reg cost = 0.000001
Aborting, cost seems to be exploding. Run gradcheck? Lower the learning rate?
"""


def test_the_loops_own_words_on_the_last_line_say_diverged(tmp_path):
    path = tmp_path / "neuraltalk.log"
    path.write_text(NEURALTALK)
    diag = analyze(path)
    assert diag.curve.label == "diverged" and diag.curve.evidence["kind"] == "stated_by_the_loop", diag.curve


def test_silent_twin_the_words_then_training_goes_on(tmp_path):
    path = tmp_path / "neuraltalk.log"
    more = "".join(f"{s}/15000 batch done in 5.0s. at epoch 0.86. loss cost = {40.0 - (s - 255) * 0.5:.4f}, "
                   "reg cost = 0.000001\n" for s in range(256, 262))
    path.write_text(NEURALTALK.replace("Aborting, ", "Warning: ") + more)
    diag = analyze(path)
    assert diag.curve.evidence.get("kind") != "stated_by_the_loop", diag.curve



def test_a_recorded_run_that_crashed_on_its_own_loss_guard_diverged():
    from crash_cases import crashed

    diag = analyze(crashed("Loss exploded to 3.1e6 at step 120"))
    assert diag.curve.label == "diverged" and diag.curve.evidence["kind"] == "stated_by_the_loop", diag.curve


def test_silent_twin_a_recorded_run_that_crashed_of_something_else():
    from crash_cases import crashed

    assert analyze(crashed("CUDA error: an illegal memory access was encountered")).curve.label != "diverged"


def _hf_lines(tmp_path, grad):
    path = tmp_path / "trainer.log"
    path.write_text("".join(f"{{'loss': {v}, 'grad_norm': {grad}, 'learning_rate': 9.77e-06, 'epoch': 0.53}}\n"
                            for v in (0.2051, 0.0, 0.0)))
    return path


def test_a_collapse_to_zero_with_a_nonfinite_gradient_norm_is_a_masked_nan(tmp_path):
    diag = analyze(_hf_lines(tmp_path, "nan"))
    assert diag.curve.label == "diverged" and diag.curve.evidence["kind"] == "short_collapsed", diag.curve


def test_silent_twin_the_same_collapse_with_finite_gradients_is_no_learning(tmp_path):
    diag = analyze(_hf_lines(tmp_path, "0.5"))
    assert diag.curve.label == "underfitting" and diag.curve.evidence["kind"] == "short_collapsed", diag.curve
