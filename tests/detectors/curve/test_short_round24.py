"""Round 24: three readings of a short log, each with silent twins. The series are made up here.

- ``short_no_progress`` took any nearly monotone fall for progress, however small. A fall from the
  start so slow that ten times the span logged would not take the loss down ``min_drop`` (a language
  model's 9.158 -> 9.083 over ten epochs, at the log of its vocabulary) is no progress: the loss barely
  moved from the start, which is the curve's ``underfitting``. Found on the tenth thread set (a
  development set since its one grading).
- ``short_blew_up_signed``: a loss that takes negative values has no ratio to its level, but its
  magnitude growing at every line to 10^4 times the largest before is a blow-up (a numpy regression's
  3.49, -3.1e4, -3.3e12, -5.8e28). Found on the eleventh thread set after its one grading.
- ``short_stuck`` at ln K with minibatch noise: the median at ln K and every point within the stuck
  band of it (an AlexNet's cost 6.898..6.920 about ln 1000 at error rate 1.0), where every point
  within ln K's own tolerance was needed. Found on the eleventh thread set after its one grading.
"""

from __future__ import annotations

import pytest
from loss_synth import analyze_lines


def _csv(tmp_path, values, first=0):
    path = tmp_path / "log.csv"
    path.write_text("epoch,loss,accuracy\n" + "".join(f"{first + i},{v:.5f},{0.1 * i:.3f}\n" for i, v in enumerate(values)))
    from runlens import analyze

    return analyze(path)


CRAWL = [9.1576, 9.1499, 9.1391, 9.1300, 9.1222, 9.1149, 9.1075, 9.0996, 9.0913, 9.0827]


def test_a_steady_crawl_from_the_start_is_no_progress(tmp_path):
    diag = _csv(tmp_path, CRAWL)
    assert diag.curve.label == "underfitting", diag.curve.reason
    ev = diag.curve.evidence
    assert ev["kind"] == "short_no_progress" and ev["crawl"] is True and 0 < ev["relative_drop"] < 0.01
    assert "ten times the span" in diag.curve.reason


@pytest.mark.parametrize("why, values, first", [
    ("a steady fall of a few percent is slow progress, not none", [0.859, 0.840, 0.830, 0.817, 0.810, 0.800, 0.795, 0.787], 0),
    ("a crawl that begins mid-run may be a converged tail", CRAWL, 40),
    ("a loss falling by half is progress", [2.3 * 0.9 ** i for i in range(10)], 0),
])
def test_silent_twins_of_a_crawl(tmp_path, why, values, first):
    diag = _csv(tmp_path, values, first)
    assert diag.curve.evidence.get("crawl") is not True, (why, diag.curve.reason)
    assert diag.curve.label != "underfitting", (why, diag.curve.reason)


def test_a_crawl_in_a_console_paste_reads_alike(tmp_path):
    diag = analyze_lines(tmp_path, [f"epoch {i}: loss {v:.4f}" for i, v in enumerate(CRAWL)])
    assert diag.curve.label == "underfitting", diag.curve.reason


def _lines(tmp_path, values):
    return analyze_lines(tmp_path, [f"loss {v!r}" for v in values])


def test_a_signed_loss_whose_magnitude_blew_up_diverged(tmp_path):
    diag = _lines(tmp_path, [3.485080512494127, -30525.316587393125, -3293457250652.145, -5.777133209515429e+28])
    assert diag.curve.label == "diverged", diag.curve.reason
    assert diag.curve.evidence["kind"] == "short_blew_up_signed" and diag.curve.evidence["orders_of_magnitude"] > 4


@pytest.mark.parametrize("why, values", [
    ("a signed loss that left zero is near 0 once, not blown up", [-0.002, 0.5, 0.6, 0.7, 0.65]),
    ("a signed loss that swings and comes back", [-20.1, -38.9, -39.6, -12.3, 43.2, 739.2, -39.7, -35.6]),
    ("growth by less than four orders of magnitude", [-1.0, -3.0, -9.0, -27.0]),
])
def test_silent_twins_of_a_signed_blow_up(tmp_path, why, values):
    diag = _lines(tmp_path, values)
    assert diag.curve.evidence.get("kind") != "short_blew_up_signed", (why, diag.curve.reason)


def test_minibatch_noise_about_ln_k_is_stuck_at_chance(tmp_path):
    # An ImageNet model's cost at ln 1000 = 6.908, each minibatch within a few hundredths of it.
    values = [6.9201, 6.9059, 6.9157, 6.9151, 6.9073, 6.9100, 6.8984, 6.9006, 6.9025]
    diag = _lines(tmp_path, values)
    assert diag.curve.label == "underfitting", diag.curve.reason
    assert diag.curve.evidence.get("chance_classes") == 1000


@pytest.mark.parametrize("why, values", [
    ("a level beside ln K is no chance level", [6.9501, 6.9359, 6.9457, 6.9451, 6.9373, 6.9400, 6.9284, 6.9306]),
    ("noise beyond the stuck band about ln K", [6.99, 6.83, 6.95, 6.86, 6.91, 6.97, 6.84, 6.90]),
])
def test_silent_twins_of_noise_about_ln_k(tmp_path, why, values):
    diag = _lines(tmp_path, values)
    assert diag.curve.evidence.get("chance_classes") is None, (why, diag.curve.reason)
