"""Round 23: five readings of a short log, each found on a paste of the ninth thread set (a development
set since its one grading), each with silent twins. The series are made up here.

- ``short_leap`` from 5 points on: the loss left its first value tenfold at the next line and never
  came back (a traffic model's train loss 11.5 at iteration 0, then 350-430 for the rest of its epoch);
  the median of the first three, the start of ``short_grown``, took the jump in;
- ``short_ended_high`` from the point where every later loss is a hundred times every earlier one (a
  detector's 11.7, 8.8, 8713, 15806), not only the last;
- ``short_climbed``: 3 or 4 losses that rose at every line to a hundredfold their first (found by
  probing made-up shapes beside the others, not on a paste);
- ``gap_widens`` from 2 evaluations when the held-out loss rose by ``min_val_rise`` and its ratio to
  the training loss grew twice or more (a retrieval model's train 5.10 -> 0.82 while test 4.85 -> 6.21);
- ``beyond_any_vocabulary``: a perplexity above 10^7 (OpenNMT's exp(100), its cap).
"""

from __future__ import annotations

import pytest
from loss_synth import analyze_lines


def _analyzed(tmp_path, lines):
    return analyze_lines(tmp_path, lines)


def _per_step(tmp_path, values, every=50):
    return _analyzed(tmp_path, [f"Iter: {every * i:03d}, Train Loss: {v:.4f}, Train MAPE: 0.3" for i, v in enumerate(values)])


LEAPT = [11.53, 377.55, 352.27, 376.28, 415.73, 427.45, 403.13, 421.10]


def test_a_loss_that_left_its_start_tenfold_and_stayed_diverged(tmp_path):
    diag = _per_step(tmp_path, LEAPT)
    assert diag.curve.label == "diverged", diag.curve.reason
    assert diag.curve.evidence["kind"] == "short_leap" and diag.curve.evidence["step"] == 50


@pytest.mark.parametrize("why, values", [
    ("one high line that came back is a spike", [11.53, 377.55, 12.1, 11.0, 10.7, 10.2, 9.9, 9.6]),
    ("a rise of less than tenfold is no leap", [11.53, 90.0, 85.0, 88.0, 80.0, 84.0, 83.0, 82.0]),
    ("a first value of zero leaves nothing to multiply", [0.0, 3.1, 2.9, 2.8, 2.6, 2.5, 2.4, 2.3]),
    ("a first print far below a rest that falls (a sum divided before its interval filled)",
     [0.01, 0.5, 0.45, 0.4, 0.38, 0.35]),
])
def test_silent_twins_of_a_leap(tmp_path, why, values):
    diag = _per_step(tmp_path, values)
    assert diag.curve.evidence.get("kind") != "short_leap", (why, diag.curve.reason)


def test_a_first_print_far_below_a_falling_rest_is_no_lack_of_progress(tmp_path):
    # Round 22's "no loss after the first was below it" asks the rest not to have fallen on its own.
    diag = _per_step(tmp_path, [0.01, 0.5, 0.45, 0.4, 0.38, 0.35], every=100)
    assert diag.curve.evidence.get("kind") != "short_no_progress", diag.curve.reason
    # A rest that stays where it jumped to is no fall: the leap reads it (an order of magnitude up, kept).
    diag = _per_step(tmp_path, [0.01, 0.5, 0.52, 0.49, 0.51, 0.5], every=100)
    assert diag.curve.evidence.get("kind") == "short_leap", diag.curve.reason


def test_the_last_losses_a_hundred_times_every_earlier_one_ended_high(tmp_path):
    diag = _per_step(tmp_path, [11.67, 8.85, 8712.59, 15806.38], every=100)
    assert diag.curve.label == "diverged", diag.curve.reason
    ev = diag.curve.evidence
    assert ev["kind"] == "short_ended_high" and ev["step"] == 200 and "each of the last 2" in diag.curve.reason


@pytest.mark.parametrize("why, values", [
    ("a hundredfold line that came back down is a spike", [11.67, 8.85, 8712.59, 9.1]),
    ("fiftyfold is not a hundredfold", [11.67, 8.85, 580.0, 600.0]),
])
def test_silent_twins_of_ending_high(tmp_path, why, values):
    diag = _per_step(tmp_path, values, every=100)
    assert diag.curve.evidence.get("kind") != "short_ended_high", (why, diag.curve.reason)


def _two_epochs(train, test):
    out = []
    for e, (tr, te) in enumerate(zip(train, test, strict=True), start=1):
        out += [f"Epoch [{e}/5] - Train Loss: {tr}", f"Epoch [{e}/5] - Test Metrics:", f"loss: {te}",
                "ndcg@10: 0.0254", ""]
    return out


def test_a_gap_that_widened_between_two_evaluations_is_overfitting(tmp_path):
    diag = _analyzed(tmp_path, _two_epochs([5.1010, 0.8231], [4.8458, 6.2107]))
    assert diag.curve.label == "overfitting", diag.curve.reason
    assert diag.curve.evidence["kind"] == "gap_widens" and diag.curve.evidence["gap_grew"] >= 2


@pytest.mark.parametrize("why, train, test", [
    ("a held-out rise under min_val_rise is an evaluation's noise", [5.1010, 0.8231], [4.8458, 5.0]),
    ("a training fall that leaves the ratio under twice its start", [5.1010, 3.9], [4.8458, 5.9]),
    ("a held-out loss that fell is no gap", [5.1010, 0.8231], [4.8458, 1.2]),
])
def test_silent_twins_of_a_gap_from_two_evaluations(tmp_path, why, train, test):
    diag = _analyzed(tmp_path, _two_epochs(train, test))
    assert diag.curve.label != "overfitting", (why, diag.curve.reason)


def _ppl(values):
    return [f"Epoch  1, {50 * (i + 1):5d}/21692; acc:   0.41; ppl: {v:.2f}; 3324 src tok/s" for i, v in enumerate(values)]


def test_a_perplexity_above_any_vocabulary_diverged(tmp_path):
    diag = _analyzed(tmp_path, _ppl([2.6881171418161356e43] * 5))
    assert diag.curve.label == "diverged", diag.curve.reason
    assert diag.curve.evidence["kind"] == "beyond_any_vocabulary" and diag.curve.evidence["perplexity_loss"] == pytest.approx(100)


@pytest.mark.parametrize("why, lines", [
    ("an untrained model's perplexity is about its vocabulary's size", _ppl([32000, 31000, 30500, 29800, 29000])),
    ("a perplexity that came back under the bound", _ppl([2.4e9, 1.7e8, 2.3e6, 5.6e5, 3.1e4, 2.0e4])),
    ("a loss of 100 that is no perplexity's log (a summed loss)",
     [f"step {i} loss {100 + 0.001 * i:.3f}" for i in range(6)]),
])
def test_silent_twins_of_a_perplexity_beyond_any_vocabulary(tmp_path, why, lines):
    diag = _analyzed(tmp_path, lines)
    assert diag.curve.evidence.get("kind") != "beyond_any_vocabulary", (why, diag.curve.reason)


@pytest.mark.parametrize("values", [[1.2, 3.5, 40.0, 700.0], [1.2, 3.5, 20.0, 60.0], [161.7, 1412.5, 3225.5]])
def test_three_or_four_losses_that_rose_at_each_line_tenfold_or_more_diverged(tmp_path, values):
    diag = _per_step(tmp_path, values)
    assert diag.curve.label == "diverged", diag.curve.reason
    assert diag.curve.evidence["kind"] == "short_climbed"


@pytest.mark.parametrize("why, values", [
    ("a rise that paused is no climb at every line", [1.2, 40.0, 35.0, 700.0]),
    ("ninefold is not tenfold", [1.2, 3.5, 6.0, 10.8]),
])
def test_silent_twins_of_a_climb(tmp_path, why, values):
    diag = _per_step(tmp_path, values)
    assert diag.curve.evidence.get("kind") != "short_climbed", (why, diag.curve.reason)
