"""Round 37, from the development sets' stuck pastes read as too short: a trainer of several heads prints
each part of its loss, and one part printed alike to its last digit at each of its last lines, most of
the total, is a head whose outputs no longer depend on the batch (CenterNet's ``hm_loss 9.208497`` at
six epochs while the total sits at 11.5). Silent twins: a part that moves, a frozen part that is a small
share of the total, and a part printed coarsely (``0.50`` repeats by rounding)."""

from __future__ import annotations

from runlens import analyze
from tests.importers.logmaker import write_lines


def _centernet(tmp_path, hm, wh=(21.8, 21.3, 20.7, 20.9, 20.8, 20.5, 20.8), off=0.25):
    lines = []
    for e, (h, w) in enumerate(zip(hm, wh, strict=True), 1):
        total = h + 0.1 * w + off
        lines.append(f"epoch: {e} |loss {total:.6f} | hm_loss {h:.6f} | wh_loss {w:.6f} | off_loss {off:.6f} | "
                     f"time 3.78 |")
    return write_lines(tmp_path, lines, "log.txt")


def test_a_part_of_the_loss_frozen_at_its_last_lines_is_underfitting(tmp_path):
    d = analyze(_centernet(tmp_path, [10.560472] + [9.208497] * 6))
    assert d.curve.label == "underfitting" and d.curve.evidence["kind"] == "short_frozen_part", d.curve
    assert d.curve.evidence["part"] == "hm_loss" and d.curve.evidence["frozen_points"] == 6
    assert 0.5 <= d.curve.evidence["share_of_loss"] <= 1


def test_silent_twin_a_part_that_moves(tmp_path):
    d = analyze(_centernet(tmp_path, [10.56, 9.21, 8.72, 8.15, 7.64, 7.12, 6.80]))
    assert d.curve.evidence.get("kind") != "short_frozen_part"


def test_silent_twin_a_frozen_part_that_is_a_small_share_of_the_loss(tmp_path):
    d = analyze(_centernet(tmp_path, [10.56, 9.21, 8.72, 8.15, 7.64, 7.12, 6.80], off=0.253117))
    assert d.curve.evidence.get("kind") != "short_frozen_part"


def test_silent_twin_a_part_printed_coarsely_repeats_by_rounding(tmp_path):
    d = analyze(_centernet(tmp_path, [10.56] + [9.5] * 6))
    assert d.curve.evidence.get("kind") != "short_frozen_part"


def test_silent_twin_a_weight_decay_term_does_not_depend_on_the_batch_by_design(tmp_path):
    # facenet's "Loss 3.418 RegLoss 2.291" over the last steps of an epoch: the regulariser moves slowly
    lines = [f"Epoch: [250][{i}/1000]\tTime 0.4\tLoss {v}\tRegLoss 2.291" for i, v in
             zip(range(997, 1001), (3.418, 3.269, 3.221, 3.422), strict=True)]
    assert analyze(write_lines(tmp_path, lines, "log.txt")).curve.evidence.get("kind") != "short_frozen_part"
