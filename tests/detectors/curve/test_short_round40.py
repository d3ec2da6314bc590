"""Round 40's short-log readings, from the twenty-sixth thread set's misses (a development set since its
one grading in round 39):

- a loss that rose at every line is no divergence while a training accuracy printed beside it holds
  (PaddleClas's running average settling from its first batch), and a top-1 accuracy (``top1``,
  ``Acc@1``) is the training accuracy;
- the last six values or more printed alike to five significant digits are a stopped loss whatever came
  before (scikit-learn's t-SNE ``error = 0.2076470`` six reports running), and three values within a
  hundred-thousandth of their level, printed finer, are one value;
- a divergence (``KL divergence``) is the objective of a log that names no loss;
- a per-step accuracy at 0 beside a loss with a downward Kendall trend is no model that learns nothing.

Each has a silent twin.
"""

from __future__ import annotations

import pytest

from runlens import analyze
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines


def _ppcls(loss, top1):
    return [f"[2024/07/31 20:24:{30 + i}] ppcls INFO: [Train][Epoch 24/120][Iter: {10 * i}/304]lr(PiecewiseDecay): "
            f"0.00100000, top1: {a:.5f}, CELoss: {v:.5f}, loss: {v:.5f}, batch_cost: 0.61280s, "
            "ips: 26.10981 samples/s" for i, (v, a) in enumerate(zip(loss, top1, strict=True))]


RISING = [0.01757, 0.05098, 0.05253, 0.06434, 0.06668]


def test_a_loss_rising_at_every_line_while_the_accuracy_holds_is_no_divergence(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _ppcls(RISING, [1.0, 0.97159, 0.97619, 0.97379, 0.96951]))))
    assert d.curve.label != "diverged", d.curve
    assert not any(f.code == "diverged" for f in d.findings)


def test_silent_twin_the_same_rise_while_the_accuracy_falls_diverged(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _ppcls(RISING, [1.0, 0.91, 0.82, 0.74, 0.66]))))
    assert d.curve.label == "diverged" and d.curve.evidence["kind"] == "short_rose_throughout", d.curve


def test_silent_twin_the_same_rise_with_no_accuracy_diverged(tmp_path):
    lines = [line.replace(", top1: ", ", lr2: ") for line in _ppcls(RISING, [0.5] * 5)]
    d = analyze(load_run(write_lines(tmp_path, lines)))
    assert d.curve.label == "diverged", d.curve


@pytest.mark.parametrize("name", ["top1", "Acc@1", "train_top1"])
def test_a_top1_accuracy_is_the_training_accuracy(tmp_path, name):
    lines = [f"step {10 * i} loss {v:.5f} {name} {a:.4f}" for i, (v, a) in
             enumerate(zip(RISING, [1.0, 0.972, 0.976, 0.974, 0.970], strict=True))]
    assert analyze(load_run(write_lines(tmp_path, lines))).curve.label != "diverged"


@pytest.mark.parametrize("name", ["top5", "Acc@5"])
def test_silent_twin_a_top5_accuracy_is_not(tmp_path, name):
    lines = [f"step {10 * i} loss {v:.5f} {name} {a:.4f}" for i, (v, a) in
             enumerate(zip(RISING, [1.0, 0.972, 0.976, 0.974, 0.970], strict=True))]
    assert analyze(load_run(write_lines(tmp_path, lines))).curve.label == "diverged"


def _tsne(errors):
    return ["[t-SNE] Computed conditional probabilities in 5.937s"] + [
        f"[t-SNE] Iteration {50 * (i + 1)}: error = {e}, gradient norm = {0.0012 / (i + 1):.7f} "
        f"(50 iterations in 109.420s)" for i, e in enumerate(errors)]


def test_six_last_values_alike_to_the_seventh_digit_are_a_stopped_loss(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _tsne(["20.6228523"] * 5 + ["0.2076470"] * 6))))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_stuck_tail", d.curve
    assert d.curve.evidence["exact_tail"] == 6


@pytest.mark.parametrize("why, tail", [
    ("a loss still falling in its fourth digit", ["0.2076470", "0.2071311", "0.2069822", "0.2061904", "0.2058113",
                                                  "0.2051010"]),
    ("five alike are too few after a fall", ["0.2076470"] * 5),
    ("a coarse print repeats by rounding alone", ["0.21"] * 6),
])
def test_silent_twins_of_a_stopped_tail(tmp_path, why, tail):
    head = ["20.62"] * 5 if tail[0] == "0.21" else ["20.6228523"] * 5  # a log prints all its values alike
    d = analyze(load_run(write_lines(tmp_path, _tsne(head + tail))))
    assert d.curve.evidence.get("kind") != "short_stuck_tail", why


def _paddlenlp(losses):
    out = []
    for i, v in enumerate(losses):
        out += [f"epoch: {8 + i // 2} - global_step: {700 + 50 * i}/940 - loss:{v}",
                "evalution result: accuracy:0.59000 F1: 0.74214"]
    return out


def test_three_values_within_a_hundred_thousandth_are_one_value(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _paddlenlp(["1535.619873", "1535.619629", "1535.633667"]))))
    assert d.curve.label == "underfitting", d.curve


@pytest.mark.parametrize("losses", [["1535.619873", "1534.119629", "1532.633667"],  # a thousandth: moving
                                    ["1535.6", "1535.6", "1535.7"]])  # printed too coarsely to say
def test_silent_twin_three_values_that_move_or_are_printed_coarsely(tmp_path, losses):
    d = analyze(load_run(write_lines(tmp_path, _paddlenlp(losses))))
    assert d.curve.label == "insufficient_data", d.curve


OPENTSNE = ["Iteration   50, KL divergence  7.5186, 50 iterations in 2.1725 sec",
            "Iteration  100, KL divergence  7.4820, 50 iterations in 2.1296 sec",
            "Iteration  150, KL divergence  6.4166, 50 iterations in 2.1392 sec",
            "Iteration  200, KL divergence  6.0529, 50 iterations in 2.1661 sec",
            "Iteration  250, KL divergence  5.8980, 50 iterations in 2.1653 sec"]


def test_a_divergence_is_the_objective_of_a_log_that_names_no_loss(tmp_path):
    run = load_run(write_lines(tmp_path, OPENTSNE))
    assert list(run.column("scalars", "loss")) == pytest.approx([7.5186, 7.4820, 6.4166, 6.0529, 5.8980])


def test_silent_twin_beside_a_named_loss_a_divergence_is_a_part(tmp_path):
    lines = [line.replace("Iteration", "Iteration").replace(", 50 iterations", f", loss {1.0 + i:.3f}, 50 iterations")
             for i, line in enumerate(OPENTSNE)]
    run = load_run(write_lines(tmp_path, lines))
    assert list(run.column("scalars", "loss")) == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0])


def _videoswin(losses, top1):
    return [f"[09/08 20:28:{10 + i}] epoch:[  1/30 ] train step:{280 + 20 * i}  loss: {v:.5f} lr: 0.000007 "
            f"top1: {a:.5f} top5: 1.00000 batch_cost: 0.72883 sec" for i, (v, a) in
            enumerate(zip(losses, top1, strict=True))]


def test_an_accuracy_at_zero_beside_a_loss_falling_at_nearly_every_print_is_progress(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _videoswin([2.20183, 2.07850, 1.99434, 1.93598, 1.99859, 1.74624],
                                                          [0.0] * 6))))
    assert d.curve.evidence.get("kind") != "short_accuracy_near_zero", d.curve


def test_silent_twin_an_accuracy_at_zero_beside_a_flat_loss_is_no_learning(tmp_path):
    d = analyze(load_run(write_lines(tmp_path, _videoswin([2.20, 2.05, 2.21, 2.12, 2.19, 2.08], [0.0] * 6))))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_accuracy_near_zero", d.curve
