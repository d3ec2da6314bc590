"""A loss that starts below zero (an ELBO's negative, a log-likelihood with its constant) has no floor at
zero: its progress is its fall against its own noise, not a share of its start (round 42, from a
PLNmodels objective of -289,969 -> -294,022 over 56 iterations, called underfitting for a 1.2% fall)."""

from __future__ import annotations

import math

from runlens import analyze
from runlens.io.loader import load_run
from tests.importers.logmaker import write_lines


def _csv(values):
    return ["step,loss", *(f"{i},{v!r}" for i, v in enumerate(values))]


def _jitter(i: int) -> float:
    return ((i * 7919) % 13 - 6) / 6


def test_a_signed_loss_that_converged_is_healthy(tmp_path):
    x = [-289968.9 - 4000 * (1 - math.exp(-i / 12)) + 3 * _jitter(i) for i in range(60)]
    d = analyze(load_run(write_lines(tmp_path, _csv(x), "train.csv")))
    assert d.curve.label == "healthy", d.curve
    assert "below zero" in d.curve.reason


def test_silent_twin_a_signed_loss_that_only_jitters_made_no_progress(tmp_path):
    x = [-289968.9 + 300 * _jitter(i) for i in range(60)]
    d = analyze(load_run(write_lines(tmp_path, _csv(x), "train.csv")))
    assert d.curve.label == "underfitting", d.curve


def test_silent_twin_a_positive_loss_still_needs_a_share_of_its_start(tmp_path):
    x = [289968.9 - 4000 * (1 - math.exp(-i / 12)) + 3 * _jitter(i) for i in range(60)]
    d = analyze(load_run(write_lines(tmp_path, _csv(x), "train.csv")))
    assert d.curve.label == "underfitting", d.curve
