"""Round 20: a group of names printed again later on the same line, with no field naming a set, is the
evaluation's record appended to the epoch's line (CenterNet's logger), not a second training point
at the same step (which read as a 3x loss spike). Each with silent twins."""

from __future__ import annotations

import numpy as np

from runlens import analyze
from runlens.io.importers._textline import read_fields

TRAIN = "epoch: {e} |loss {l:.6f} | hm_loss {h:.6f} | wh_loss {w:.6f} | off_loss 0.249568 | time 3.766667 | "
VAL = "loss 35.187737 | hm_loss 9.208498 | wh_loss 257.274403 | off_loss 0.251798 | time 0.233333 | "


def test_a_repeated_group_is_the_evaluations_record():
    names = [k for k, _ in read_fields(TRAIN.format(e=5, l=11.54, h=9.2, w=20.8) + VAL)]
    assert names == ["epoch", "loss", "hm_loss", "wh_loss", "off_loss", "time",
                     "val loss", "val hm_loss", "val wh_loss", "val off_loss", "val time"]


def test_the_appended_record_is_no_loss_spike(tmp_path):
    lines = [TRAIN.format(e=e, l=11.6 - 0.01 * e, h=9.2, w=20.9 - 0.05 * e) + (VAL if e % 5 == 0 else "")
             for e in range(1, 11)]
    path = tmp_path / "log.txt"
    path.write_text("\n".join(lines) + "\n")
    diag = analyze(path)
    assert "loss_spikes" not in [f.code for f in diag.findings]
    from runlens.io.loader import load_run
    run = load_run(path)
    assert np.asarray(run.column("evals", "val_loss")).tolist() == [35.187737, 35.187737]
    assert len(run.column("scalars", "loss")) == 10


def test_silent_twin_one_name_repeated_alone_stays_as_printed():
    assert [k for k, _ in read_fields("step 3 loss 0.5 acc 0.8 loss 0.6")] == ["step", "loss", "acc", "loss"]


def test_silent_twin_a_repeated_group_after_a_set_name_takes_that_set():
    names = [k for k, _ in read_fields("train loss 0.5 acc 0.8 | valid loss 0.6 acc 0.7")]
    assert names == ["train loss", "train acc", "valid loss", "valid acc"]
