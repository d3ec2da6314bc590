"""benchmarks/accuracy.py's scoring, on a hand-made table whose figures are worked out by hand."""

from __future__ import annotations

import math

import pytest

from benchmarks._accuracy.scoring import Graded, Rate, per_code, summarize, wilson

CODES = ["dead_layers", "loss_spikes", "plateau"]


def G(name, must=(), may=(), got=(), sev=None, curve_ok=("healthy",), curve="healthy", first=(), healthy=False,
      status="finished", got_status="finished"):
    return Graded(name=name, group="g", must=tuple(must), may=tuple(may), curve_ok=curve_ok, first=tuple(first),
                  status=status, healthy=healthy, got_codes=tuple(got),
                  got_severities=tuple(sev or ["warning"] * len(got)), got_curve=curve, got_status=got_status)


TABLE = [
    # four runs labeled dead_layers: three found (one of them first), one missed
    G("d1", must=["dead_layers"], got=["dead_layers"], first=["dead_layers"]),
    G("d2", must=["dead_layers"], got=["loss_spikes", "dead_layers"], first=["dead_layers"]),
    G("d3", must=["dead_layers"], got=["dead_layers"], first=["dead_layers"], curve="underfitting"),
    G("d4", must=["dead_layers"], got=[], first=["dead_layers"]),
    # a plateau run where loss_spikes is allowed: its spike is neither TP nor FP
    G("p1", must=["plateau"], may=["loss_spikes"], got=["plateau", "loss_spikes"], first=["plateau"]),
    # healthy runs: one with a plateau false alarm (info only), one with a warning
    G("h1", healthy=True, got=["plateau"], sev=["info"]),
    G("h2", healthy=True, got=["dead_layers"], sev=["warning"]),
    G("h3", healthy=True),
    # a crashed run whose curve is not graded
    G("c1", curve_ok=None, curve="insufficient_data", status="crashed", got_status="crashed"),
]


def test_wilson_matches_the_textbook_values():
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson(10, 10)
    assert hi == pytest.approx(1.0) and lo == pytest.approx(0.7225, abs=1e-4)
    assert all(math.isnan(x) for x in wilson(0, 0))


def test_rate_text_and_empty():
    assert Rate(3, 4).text().startswith("0.75 [") and Rate(3, 4).text().endswith("(3/4)")
    assert Rate(0, 0).text() == "n/a"


def test_per_code_counts_on_the_hand_made_table():
    s = per_code(TABLE, CODES)
    dead = s["dead_layers"]
    assert (dead.tp, dead.fn, dead.fp) == (3, 1, 1)          # h2 is the false positive
    assert dead.tn == 4                                        # p1, h1, h3, c1
    assert dead.recall.value == pytest.approx(0.75) and dead.precision.value == pytest.approx(0.75)
    assert dead.missed == ["d4"] and dead.alarms == ["h2"]
    assert (dead.healthy_fp, dead.healthy_n) == (1, 3)
    spikes = s["loss_spikes"]
    assert (spikes.tp, spikes.fn, spikes.fp) == (0, 0, 1)      # d2's spike is a false alarm; p1's is allowed
    assert spikes.precision.value == 0.0 and math.isnan(spikes.recall.value)
    plateau = s["plateau"]
    assert (plateau.tp, plateau.fp, plateau.healthy_fp) == (1, 1, 1)


def test_summary_rates_on_the_hand_made_table():
    m = summarize(TABLE, CODES)
    assert (m.curve.k, m.curve.n) == (7, 8)                  # d3's curve is wrong, c1 is not graded
    assert (m.first.k, m.first.n) == (3, 5)                  # d1, d3, p1 lead with their fault; d2, d4 do not
    assert (m.healthy_loud.k, m.healthy_loud.n) == (1, 3)    # h1's finding is only info
    assert (m.crash_on_finished.k, m.crash_on_finished.n) == (0, 8)
    assert (m.recall_all.k, m.recall_all.n) == (4, 5)
    assert (m.precision_all.k, m.precision_all.n) == (4, 7)
    assert m.fully_right.k == 4                              # d1, p1, h3, c1
