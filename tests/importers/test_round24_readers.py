"""Round 24: readings found missing on pastes of the tenth thread set (a development set since its one
grading). Each shape is made up here in the spelling of a kind of loop, not copied from a paste, and
each has a silent twin.

- a loss word run into its part's number (``loss1u``, ``loss2``) names a loss part;
- an inner counter that restarts right after an epoch's summary line counts that epoch's batches
  (one run), where one that restarts with no summary between is a new run;
- a banner epoch header (``[ Epoch 0 ]``, ``===== Epoch 3 =====``) heads the lines under it, and a
  perplexity under it, beside a side in parentheses (``- (Training) ppl: ...``), is read;
- argparse's ``Namespace(..., step=10)`` dump is settings, not a training step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from logmaker import column as _col
from logmaker import read_paste as _run

from runlens.io.reader.names import tokens


def test_a_loss_word_run_into_its_number_is_a_loss_part():
    assert tokens("loss1u") == ("loss", "1u") and tokens("loss2") == ("loss", "2")


def test_silent_twin_other_words_keep_their_digits():
    assert tokens("top1") == ("top1",) and tokens("conv3") == ("conv3",) and tokens("lossy") == ("lossy",)


def _parts(a, b):
    return "".join(f"train: epoch 1, iter:{10 * i}, loss1u: {x}, loss2u: {y}, lr: 0.001\n"
                   for i, (x, y) in enumerate(zip(a, b, strict=True)))


def test_numbered_loss_parts_are_summed(tmp_path):
    run = _run(tmp_path, _parts([0.9, 0.7, 0.6, 0.5], [0.8, 0.6, 0.5, 0.4]))
    assert _col(run, "scalars", "loss") == pytest.approx([1.7, 1.3, 1.1, 0.9])


def test_numbered_loss_parts_all_nan_are_a_nonfinite_loss(tmp_path):
    from runlens import analyze

    path = tmp_path / "log.txt"
    path.write_text(_parts(["nan"] * 5, ["nan"] * 5))
    diag = analyze(path)
    assert diag.curve.label == "diverged" and "nonfinite_loss" in {f.code for f in diag.findings}


def _epochs(losses, summary=True):
    out = []
    for e, row in enumerate(losses, start=1):
        for i, v in enumerate(row):
            out.append(f"Iter: {50 * i:03d}, Train Loss: {v:.4f}, Train RMSE: {v * 1.2:.4f}")
        if summary:
            out.append(f"Epoch: {e:03d}, Train Loss: {float(np.mean(row)):.4f}, Train RMSE: 1.0")
            out.append(f"Epoch: {e:03d}, Valid Loss: {row[-1] * 1.1:.4f}, Valid RMSE: 1.0")
    return "\n".join(out) + "\n"


def test_an_inner_counter_restarting_after_an_epoch_summary_counts_on(tmp_path):
    run = _run(tmp_path, _epochs([[5.0, 4.0, 3.5, 3.0], [2.8, 2.6, 2.5, 2.4], [2.3, 2.2, 2.1, 2.0]]))
    steps = _col(run, "scalars", "step")
    assert steps == [0, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500, 550]
    assert any("counted on from the last step" in w for w in run.warnings)
    assert len(_col(run, "evals", "val_loss")) == 3


def test_silent_twin_a_restart_with_no_summary_between_is_a_new_run(tmp_path):
    run = _run(tmp_path, _epochs([[5.0, 4.0, 3.5, 3.0], [5.1, 4.1, 3.4, 3.1]], summary=False))
    assert _col(run, "scalars", "step") == [0, 50, 100, 150]
    assert not any("counted on" in w for w in run.warnings)
    assert any("2 runs" in w for w in run.warnings)


def _banner(ppls, head="[ Epoch {e} ]", label="  - (Training)   ppl: {p:.5f}, accuracy: 1.9 %, elapse: 0.1 min"):
    out = []
    for e, (p, v) in enumerate(ppls):
        out.append(head.format(e=e))
        out.append(label.format(p=p))
        out.append(f"  - (Validation) ppl: {v:.5f}, accuracy: 2.0 %, elapse: 0.2 min")
        out.append("    - [Info] The checkpoint file has been updated.")
    return "\n".join(out) + "\n"


PPLS = [(173.4, 177.6), (181.9, 176.3), (163.8, 174.4), (170.4, 172.2), (174.7, 169.8), (162.1, 168.0)]


@pytest.mark.parametrize("head", ["[ Epoch {e} ]", "===== Epoch {e} =====", "Epoch {e}"])
def test_a_perplexity_under_a_banner_epoch_header_is_read(tmp_path, head):
    run = _run(tmp_path, _banner(PPLS, head=head))
    assert _col(run, "scalars", "loss") == pytest.approx([math.log(p) for p, _ in PPLS])
    assert _col(run, "evals", "val_loss") == pytest.approx([math.log(v) for _, v in PPLS])
    assert _col(run, "scalars", "step") == [0, 1, 2, 3, 4, 5]


def test_silent_twin_a_banner_with_other_words_heads_nothing(tmp_path):
    from runlens.errors import RunlensError

    # Round 28: the validation lines alone are read (each its own point, no step, a perplexity and an
    # accuracy being what the loop watches); the banner still heads nothing, and "note" is no loss.
    try:
        run = _run(tmp_path, _banner(PPLS, head="[ Epoch {e} of the notes ]", label="  - (Training)   note: {p:.5f}"))
    except RunlensError:
        return
    assert all(math.isnan(v) for v in _col(run, "scalars", "loss"))


def _vdsr(losses, settings="Namespace(batchSize=128, clip=0.4, lr=0.1, nEpochs=50, step=10, threads=1)"):
    out = ["python main.py --cuda", settings, "===> Training"]
    for e in (1, 2):
        out.append(f"Epoch={e}, lr=0.1")
        out += [f"===> Epoch[{e}]({100 * (i + 1)}/724): Loss: {v:.10f}" for i, v in enumerate(losses)]
        out.append(f"Checkpoint saved to model/model_epoch_{e}.pth")
    return "\n".join(out) + "\n"


def test_argparse_settings_are_not_a_training_step(tmp_path):
    run = _run(tmp_path, _vdsr([473.2, 451.4, 541.3, 439.6, 334.6]))
    assert len(_col(run, "scalars", "loss")) == 10
    assert _col(run, "scalars", "step")[:2] == [99, 199]  # batch 100 of 724 is step 99


def test_silent_twin_a_settings_line_without_a_step_reads_alike(tmp_path):
    run = _run(tmp_path, _vdsr([473.2, 451.4, 541.3, 439.6, 334.6], settings="Namespace(batchSize=128, lr=0.1)"))
    assert len(_col(run, "scalars", "loss")) == 10


def test_a_batch_counter_in_parentheses_after_the_epoch_counts_steps(tmp_path):
    run = _run(tmp_path, "".join(f"===> Epoch[{e}]({i}/724): Loss: {400 - e - i / 100:.4f}\n"
                                 for e in (1, 2) for i in (100, 200, 300)))
    assert _col(run, "scalars", "step") == [99, 199, 299, 823, 923, 1023]


def test_silent_twin_a_share_in_parentheses_is_no_counter(tmp_path):
    run = _run(tmp_path, "".join(f"Epoch {e} (3/10 folds done) loss: {1 / e:.4f}\n" for e in range(1, 6)))
    assert _col(run, "scalars", "step") == [1, 2, 3, 4, 5]


def _progress(d_losses, with_loss=False):
    out = []
    for i, d in enumerate(d_losses):
        out.append(f"progress  epoch 50  step {100 * (i + 1)}  image/sec 35.7  remaining 0m"
                   + (f"  loss {d}" if with_loss else ""))
        out += [f"discrim_loss {d}", "gen_loss_GAN 1.16629475e-36", "gen_loss_L1 380.16928"]
    return "\n".join(out) + "\n"


def test_losses_one_per_line_under_a_step_line_are_that_steps(tmp_path):
    run = _run(tmp_path, _progress([0.5, 0.4, "nan"]))
    loss = _col(run, "scalars", "loss")
    assert loss[:2] == pytest.approx([380.66928, 380.56928]) and math.isnan(loss[2])
    assert _col(run, "scalars", "step") == [100, 200, 300]
    assert any("one per line under a training line" in w for w in run.warnings)


def test_silent_twin_under_a_step_line_that_names_a_loss_they_are_not_read(tmp_path):
    run = _run(tmp_path, _progress([0.5, 0.4, 0.3], with_loss=True))
    assert _col(run, "scalars", "loss") == pytest.approx([0.5, 0.4, 0.3])
    assert not any("one per line" in w for w in run.warnings)


def test_a_throughput_is_never_the_one_measured_series(tmp_path):
    from runlens.errors import RunlensError

    lines = "".join(f"progress  epoch 5  step {100 * i}  image/sec {35 + i % 3}.7  remaining 0m\n" for i in range(1, 9))
    with pytest.raises(RunlensError):
        _run(tmp_path, lines)


@pytest.mark.parametrize("settings", ["{'batch_size': 32, 'lr': 0.001, 'step': 10, 'epochs': 5}",
                                      "Config(batch_size=32, lr=0.001, step=10)"])
def test_a_settings_line_with_a_step_is_no_run_of_its_own(tmp_path, settings):
    steps = "".join(f"step {i} loss {0.9 - i / 10:.2f}\n" for i in range(8))
    run = _run(tmp_path, settings + "\n" + steps)
    assert _col(run, "scalars", "step") == list(range(8))
    assert not any("runs" in w for w in run.warnings)


def test_silent_twin_a_first_run_with_a_loss_stays_a_run(tmp_path):
    steps = "".join(f"step {i} loss {0.9 - i / 10:.2f}\n" for i in range(8))
    run = _run(tmp_path, "step 10 loss 2.5\n" + steps)
    assert any("2 runs" in w for w in run.warnings)


def _dice(epochs=5):
    out = []
    for e in range(epochs):
        out += [f"Epoch {243 + e}/249", "----------", f"train Loss: {0.0215 - e * 1e-5:.6f} Dice Loss: {0.1 + 0.1 * (e % 3):.6f}",
                f"valid Loss: {0.0222 + e * 1e-4:.6f} Dice Loss: {0.3 + 0.1 * (e % 2):.6f}", ""]
    return "\n".join(out) + "\n"


def test_a_second_loss_on_a_validation_line_keeps_its_own_name(tmp_path):
    run = _run(tmp_path, _dice())
    assert _col(run, "evals", "val_loss") == pytest.approx([0.0222 + e * 1e-4 for e in range(5)])
    assert "val_Dice_Loss" in run.evals.column_names


def test_silent_twin_different_metrics_after_prose_are_each_cut_to_their_word(tmp_path):
    lines = []
    for i in range(6):
        lines.append(f"step {100 * i} loss {3 - i / 10:.2f}")
        lines.append(f"Evaluation result (greedy) loss: {3.5 - i / 10:.2f}, ppl: {30 - i:.2f}")
    run = _run(tmp_path, "\n".join(lines) + "\n")
    assert _col(run, "evals", "val_loss") == pytest.approx([3.5 - i / 10 for i in range(6)])


def test_a_counter_counted_on_past_int64_skips_its_lines_not_the_log(tmp_path):
    text = ("Iter: 9223372036854775800, Train Loss: 1.0\nEpoch: 001, Train Loss: 1.0\n"
            + "".join(f"Iter: {50 * i:03d}, Train Loss: {0.9 - i / 10:.1f}\n" for i in range(3)))
    run = _run(tmp_path, text)
    assert any("beyond what a 64-bit integer holds" in w for w in run.warnings)


def test_a_whole_number_in_brackets_after_a_name_indexes_the_value_after_it():
    from runlens.io.importers.anyline import parse_line

    assert parse_line("train_batch_loss[ 6510 ]:  1.5743603706359863") == (6510, [("train_batch_loss", 1.5743603706359863)])
    assert parse_line("loss[7]= nan")[0] == 7 and math.isnan(parse_line("loss[7]= nan")[1][0][1])


def test_silent_twin_a_bracketed_number_with_no_value_after_it_is_the_value():
    from runlens.io.importers.anyline import parse_line

    assert parse_line("loss: [ 12 ]") == (None, [("loss", 12.0)])
    assert parse_line("loss[0.5]: 3") == (None, [("loss", 0.5)])


def test_an_indexed_loss_that_turns_nan_is_read_at_its_steps(tmp_path):
    run = _run(tmp_path, "".join(f"train_batch_loss[ {6510 + 10 * i} ]:  {v}\n"
                                 for i, v in enumerate([1.57, 2.03, 2.11, 1.47, "nan", "nan"])))
    assert _col(run, "scalars", "step") == [6510, 6520, 6530, 6540, 6550, 6560]
    assert math.isnan(_col(run, "scalars", "loss")[-1])


def _py2(costs):
    out = []
    for i, c in enumerate(costs):
        out += [f"('training @ iter = ', {61040 + 5 * i})", f"('training cost:', array({c!r}, dtype=float32))",
                "('training error rate:', array(1.0))"]
    return "\n".join(out) + "\n"


def test_python2_tuple_prints_are_a_message_and_its_value(tmp_path):
    from runlens.io.importers._clean import clean

    assert clean("('training cost:', array(6.920103549957275, dtype=float32))") == "training cost: 6.920103549957275"
    run = _run(tmp_path, _py2([6.92, 6.906, 6.916, 6.915, 6.907]))
    assert _col(run, "scalars", "loss") == pytest.approx([6.92, 6.906, 6.916, 6.915, 6.907])


def test_silent_twin_a_tuple_of_two_strings_or_a_call_is_left_alone():
    from runlens.io.importers._clean import clean

    assert clean("('a', 'b')") == "('a', 'b')"
    assert clean("(loss, 0.5)") == "(loss, 0.5)"
