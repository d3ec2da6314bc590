"""Round 31's curve readings, from the thirtieth recorder draw's and the seventeenth thread set's misses
(development sets since their one grading in round 30), each with a silent twin:

- a held-out loss that gave back a third or more of its fall, along a significant rise, while the training
  loss kept falling, overfit, however small the rise is next to the loss's level;
- a binary model's loss at ln 2 beside a ROC AUC at 0.5 is stuck at chance, from one evaluation;
- a loss that fell to exactly 0 on its last line (an average of losses that all carried nothing) collapsed.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from tests.detectors.loss_synth import analyze_lines, make_run

# The held-out loss of a mixer trained with warm restarts (third-fresh30's restarts-mixer): 0.350 down to
# 0.297 at the 13th of 21 evaluations, then up to 0.325 at every evaluation but one: +9% of the minimum,
# 52% of the fall.
VAL = [0.3504, 0.3234, 0.3201, 0.3159, 0.3166, 0.3288, 0.3090, 0.3069, 0.3041, 0.3042, 0.3078, 0.3016, 0.2968,
       0.3021, 0.3015, 0.3018, 0.3183, 0.3220, 0.3228, 0.3245, 0.3245]


def _run(val, n=1116, seed=0):
    rng = np.random.default_rng(seed)
    steps = np.arange(n)
    loss = (0.11 + 0.7 * np.exp(-steps / 60) + 0.1 * (1 - steps / n)) * np.exp(0.08 * rng.standard_normal(n))
    vs = np.linspace(54, n - 1, len(val)).astype(np.int64)
    return make_run(loss, steps=steps, val_loss=np.asarray(val), val_steps=vs)


def test_a_held_out_loss_that_gave_back_half_its_fall_overfit():
    d = analyze(_run(VAL))
    assert d.curve.label == "overfitting", d.curve
    ev = d.curve.evidence
    assert ev["val_rise"] < 0.1 * ev["val_min"]  # under min_val_rise of the level: the share of the fall says it


@pytest.mark.parametrize("why, val", [
    ("a fifth of the fall given back is no third", VAL[:16] + [0.3040, 0.3045, 0.3050, 0.3052, 0.3055]),
    ("a fall of 4% is no gain to give back", [0.310, 0.305, 0.303, 0.300, 0.2985, 0.298, 0.297, 0.2968, 0.2969, 0.2972,
                                             0.2975, 0.298, 0.2985, 0.299, 0.2995, 0.300, 0.3005, 0.301, 0.3015, 0.302,
                                             0.3025]),
    ("no trend after the minimum", VAL[:13] + [0.3100, 0.2990, 0.3110, 0.2980, 0.3120, 0.2985, 0.3115, 0.2990]),
])
def test_silent_twins_of_a_fall_given_back(why, val):
    assert analyze(_run(val)).curve.label != "overfitting", why


# -- ln 2 beside an AUC of one half -----------------------------------------------------------------------

def _ctr(tmp_path, loss, auc):
    return analyze_lines(tmp_path, [f"[HUGECTR][INFO]: Iter: 100000 Time(10000 iters): 4.38s Loss: {loss} lr:0.000100",
                                    f"[HUGECTR][INFO]: Evaluation, AUC: {auc}",
                                    "Finish 100001 iterations with batchsize: 128 in 44.44s"])


def test_a_loss_at_ln2_beside_an_auc_at_one_half_is_stuck_at_chance(tmp_path):
    d = _ctr(tmp_path, 0.689904, 0.488332)
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_chance_by_auc", d.curve


@pytest.mark.parametrize("why, loss, auc", [
    ("an AUC of 0.75 ranks", 0.689904, 0.75),
    ("a loss of 0.45 is below the coin's", 0.45, 0.50),
])
def test_silent_twins_of_binary_chance(tmp_path, why, loss, auc):
    assert _ctr(tmp_path, loss, auc).curve.evidence.get("kind") != "short_chance_by_auc", why


def test_silent_twin_a_pr_auc_has_no_chance_level(tmp_path):
    d = analyze_lines(tmp_path, ["Iter: 100 Loss: 0.6921", "Evaluation, PR_AUC: 0.5003"])
    assert d.curve.evidence.get("kind") != "short_chance_by_auc"


# -- a last line of exactly 0 -----------------------------------------------------------------------------

def test_a_loss_that_fell_to_exactly_0_on_its_last_line_collapsed(tmp_path):
    d = analyze_lines(tmp_path, ["{'loss': 2.0412, 'learning_rate': 4e-05, 'epoch': 0.01}",
                                 "{'loss': 0.0, 'learning_rate': 8e-05, 'epoch': 0.03}"])
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_collapsed", d.curve
    assert "its last point, exactly 0" in d.curve.reason


def test_silent_twin_one_low_last_line_above_0_is_no_collapse(tmp_path):
    d = analyze_lines(tmp_path, ["{'loss': 2.0412, 'learning_rate': 4e-05, 'epoch': 0.01}",
                                 "{'loss': 0.0004, 'learning_rate': 8e-05, 'epoch': 0.03}"])
    assert d.curve.evidence.get("kind") != "short_collapsed"
