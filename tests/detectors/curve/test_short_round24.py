"""Round 24: a short log's crawl from the start of training, found on a paste of the tenth thread set (a
development set since its one grading). The series are made up here.

- ``short_no_progress`` took any nearly monotone fall for progress, however small. A fall from the
  start so slow that ten times the span logged would not take the loss down ``min_drop`` (a language
  model's 9.158 -> 9.083 over ten epochs, at the log of its vocabulary) is no progress: the loss barely
  moved from the start, which is the curve's ``underfitting``.
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
