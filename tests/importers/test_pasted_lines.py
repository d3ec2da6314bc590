"""Console lines as people paste them into forums: evaluation passes, counters, progress bars.

Each firing test holds the smallest realistic lines of one shape; its silent twin is a
near-identical input whose reading must not change.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from runlens.analysis import analyze
from runlens.errors import ImportFailedError
from runlens.io.importers import text
from runlens.io.importers._common import plan


def _read(tmp_path: Path, body: str):
    path = tmp_path / "paste.txt"
    path.write_text(body.strip("\n") + "\n")
    return text.read(path)


def _points(series) -> list[tuple[int, float]]:
    return [(int(s), round(float(v), 4)) for s, v in zip(series.steps, series.values, strict=True)]


# --- 1. evaluation passes said by the line's label -----------------------------------------------

def test_fairseq_valid_subset_line_feeds_val_loss(tmp_path):
    imp = _read(tmp_path, """
| epoch 001 | loss 7.912 | nll_loss 7.312 | ppl 158.95 | num_updates 1101
| epoch 001 | valid on 'valid' subset | loss 7.294 | nll_loss 6.694 | ppl 103.51 | num_updates 1101
| epoch 002 | loss 7.022 | nll_loss 6.422 | ppl 85.74 | num_updates 2202
| epoch 002 | valid on 'valid' subset | loss 6.552 | nll_loss 5.952 | ppl 61.89 | num_updates 2202
""")
    assert _points(imp.train["loss"]) == [(1, 7.912), (2, 7.022)]
    assert _points(imp.evals["val_loss"]) == [(1, 7.294), (2, 6.552)]


def test_fairseq_train_subset_label_stays_training(tmp_path):
    imp = _read(tmp_path, """
| epoch 001 | train on 'train' subset | loss 7.912 | num_updates 1101
| epoch 002 | train on 'train' subset | loss 7.022 | num_updates 2202
""")
    assert _points(imp.train["loss"]) == [(1, 7.912), (2, 7.022)]
    assert "val_loss" not in imp.evals


def test_catalyst_valid_stage_feeds_val_loss_and_train_stage_stays(tmp_path):
    imp = _read(tmp_path, """
1/3 * Epoch 1 (train): accuracy01=21.5385 | loss=2.0400
1/3 * Epoch 1 (valid): accuracy01=33.0769 | loss=1.7400
2/3 * Epoch 2 (train): accuracy01=41.5385 | loss=1.5000
2/3 * Epoch 2 (valid): accuracy01=43.0769 | loss=1.4800
""")
    assert _points(imp.train["loss"]) == [(1, 2.04), (2, 1.5)]
    assert _points(imp.evals["val_loss"]) == [(1, 1.74), (2, 1.48)]


def test_test_counter_line_is_an_evaluation_at_the_last_training_step(tmp_path):
    # torchvision's reference script: the Test counter counts evaluation batches, not steps.
    imp = _read(tmp_path, """
Epoch: [1]  [   0/5005]  eta: 0:25:35  lr: 0.1  loss: 6.1875 (6.1875)  time: 0.3249
Epoch: [1]  [1000/5005]  eta: 0:20:35  lr: 0.1  loss: 5.9569 (6.0712)  time: 0.3024
Test:   [  0/196]  eta: 0:10:51  loss: 5.5800 (5.5800)  acc1: 20.0000 (20.0000)  time: 3.3226
Epoch: [2]  [   0/5005]  eta: 0:25:35  lr: 0.1  loss: 5.7000 (5.7000)  time: 0.3249
""")
    assert _points(imp.train["loss"]) == [(0, 6.1875), (999, 5.9569), (5004, 5.7)]
    assert _points(imp.evals["val_loss"]) == [(999, 5.58)]


def test_train_counter_line_without_a_test_label_stays_training(tmp_path):
    imp = _read(tmp_path, """
Epoch: [1]  [   0/5005]  eta: 0:25:35  lr: 0.1  loss: 6.1875 (6.1875)  time: 0.3249
Epoch: [1]  [1000/5005]  eta: 0:20:35  lr: 0.1  loss: 5.9569 (6.0712)  time: 0.3024
Epoch: [1]  [2000/5005]  eta: 0:10:51  lr: 0.1  loss: 5.5800 (5.5800)  time: 3.3226
""")
    assert _points(imp.train["loss"]) == [(0, 6.1875), (999, 5.9569), (1999, 5.58)]
    assert "val_loss" not in imp.evals


KERAS_FIT = """
Epoch 1/3
100/100 [==============================] - 1s 2ms/step - loss: 0.5000
Epoch 2/3
100/100 [==============================] - 1s 2ms/step - loss: 0.4000
Epoch 3/3
 50/100 [==============>...............] - ETA: 0s - loss: 0.3500
100/100 [==============================] - 1s 2ms/step - loss: 0.3000
"""


def test_keras_evaluate_after_fit_is_a_validation_point_not_a_second_run(tmp_path):
    imp = _read(tmp_path, KERAS_FIT + "10/10 [==============================] - 0s 2ms/step - loss: 0.9000\n")
    assert _points(imp.train["loss"]) == [(1, 0.5), (2, 0.4), (3, 0.3)]
    assert _points(imp.evals["val_loss"]) == [(3, 0.9)]
    assert imp.config["text_lines"]["runs"] == 1


def test_keras_fit_alone_keeps_its_epochs(tmp_path):
    imp = _read(tmp_path, KERAS_FIT)
    assert _points(imp.train["loss"]) == [(1, 0.5), (2, 0.4), (3, 0.3)]
    assert "val_loss" not in imp.evals and imp.config["text_lines"]["runs"] == 1


LLMC = """
step    1/18865 | train loss 10.619350 | norm 1.2000 | lr 1.00e-04 | 1734.20 ms
step    2/18865 | train loss 10.274923 | norm 1.2000 | lr 1.00e-04 | 1734.20 ms
val loss 10.171518
step    3/18865 | train loss 9.963273 | norm 1.2000 | lr 1.00e-04 | 1734.20 ms
"""


def test_llmc_val_loss_before_the_first_step_is_kept_at_step_0(tmp_path):
    imp = _read(tmp_path, "val loss 11.009809\n" + LLMC)
    assert _points(imp.evals["val_loss"]) == [(0, 11.0098), (2, 10.1715)]


def test_a_header_count_before_training_is_no_evaluation(tmp_path):
    imp = _read(tmp_path, "val batches 20\n" + LLMC)
    assert all(k == "val_loss" and 0 not in imp.evals[k].steps for k in imp.evals)


ONMT = """
[2023-11-02 10:10:54,221 INFO] Step 500/20000; acc: 50.0; ppl: 1073.73; xent: 6.98; lr: 0.00100
[2023-11-02 10:10:54,221 INFO] Step 1000/20000; acc: 50.0; ppl: 492.35; xent: 6.20; lr: 0.00100
[2023-11-02 10:11:00,901 INFO] Validation perplexity: 100.242
[2023-11-02 10:10:54,221 INFO] Step 1500/20000; acc: 50.0; ppl: 254.47; xent: 5.54; lr: 0.00100
"""


def test_a_validation_perplexity_alone_is_the_log_of_the_validation_loss(tmp_path):
    config, _, evals = plan(_read(tmp_path, ONMT))
    assert evals is not None
    assert any("only a validation perplexity" in w for w in config["import_warnings"])


def test_a_validation_loss_beside_the_perplexity_is_taken_as_is(tmp_path):
    body = ONMT.replace("Validation perplexity: 100.242", "Validation loss: 4.6 perplexity: 100.242")
    imp = _read(tmp_path, body)
    config, _, evals = plan(imp)
    assert _points(imp.evals["val_loss"]) == [(1000, 4.6)]
    assert not any("only a validation perplexity" in w for w in config["import_warnings"])


# --- 2. counters -----------------------------------------------------------------------------------

def test_pytorch_tutorial_epoch_batch_pairs_are_one_rising_step(tmp_path):
    imp = _read(tmp_path, """
[1,  2000] loss: 2.190
[1,  4000] loss: 1.853
[2,  2000] loss: 1.517
[2,  4000] loss: 1.463
""")
    assert _points(imp.train["loss"]) == [(2000, 2.19), (4000, 1.853), (6000, 1.517), (8000, 1.463)]
    assert imp.config["text_lines"]["runs"] == 1


def test_a_pair_of_fractions_is_no_counter(tmp_path):
    # Not steps 2000 and 4000 of an epoch 1.5: two lines that print the loss as a field, numbered in order.
    imp = _read(tmp_path, "[1.5,  2000] loss: 2.190\n[1.5,  4000] loss: 1.853\n")
    assert _points(imp.train["loss"]) == [(0, 2.19), (1, 1.853)]
    assert imp.config.get("index_kind") == "row"


def test_silent_twin_two_losses_in_prose_are_no_series(tmp_path):
    with pytest.raises(ImportFailedError):
        _read(tmp_path, "[1.5,  2000] the loss 2.190 then\n[1.5,  4000] the loss 1.853 now\n")


TIMM = """
Train: 0 [   0/1251 (  0%)]  Loss: 6.99 (6.99)  LR: 1.000e-04
Train: 0 [ 200/1251 ( 16%)]  Loss: 7.01 (6.84)  LR: 1.000e-04
Test: [  48/48]  Loss: 6.261 (6.020)  Acc@1: 11.880 ( 11.968)
Train: 1 [   0/1251 (  0%)]  Loss: 6.12 (6.12)  LR: 1.000e-04
Train: 1 [ 200/1251 ( 16%)]  Loss: 6.09 (6.10)  LR: 1.000e-04
"""


def test_timm_counter_with_its_share_done_and_its_zero_based_epoch(tmp_path):
    imp = _read(tmp_path, TIMM)
    assert _points(imp.train["loss"]) == [(0, 6.99), (199, 7.01), (1250, 6.12), (1450, 6.09)]
    assert _points(imp.evals["val_loss"]) == [(199, 6.261)]


def test_timm_counter_without_the_share_reads_the_same(tmp_path):
    imp = _read(tmp_path, TIMM.replace(" (  0%)", "").replace(" ( 16%)", ""))
    assert _points(imp.train["loss"]) == [(0, 6.99), (199, 7.01), (1250, 6.12), (1450, 6.09)]


def test_a_bracketed_counter_without_an_outer_count_is_the_step_as_logged(tmp_path):
    imp = _read(tmp_path, "Batch [ 100/1251]  Loss: 6.99\nBatch [ 200/1251]  Loss: 7.01\n")
    assert _points(imp.train["loss"]) == [(100, 6.99), (200, 7.01)]


@pytest.mark.parametrize(("first", "steps"), [
    (0, [(0, 6.9), (49, 6.5), (99, 6.1), (149, 5.9)]),  # epochs from 0: epoch 0 is not overwritten by 1
    (1, [(0, 6.9), (49, 6.5), (100, 6.1), (149, 5.9)]),  # the twin: epochs from 1 keep their steps
])
def test_epochs_counted_from_zero_or_one_do_not_overwrite_each_other(tmp_path, first, steps):
    # The batch counter starts where the epochs do: 0 in torchvision's log, 1 in the twin.
    imp = _read(tmp_path, f"""
Epoch: [{first}]  [   {first}/100]  loss: 6.9000 (6.9000)
Epoch: [{first}]  [  50/100]  loss: 6.5000 (6.7000)
Epoch: [{first + 1}]  [   {first}/100]  loss: 6.1000 (6.1000)
Epoch: [{first + 1}]  [  50/100]  loss: 5.9000 (6.0000)
""")
    assert _points(imp.train["loss"]) == steps


def test_monai_per_step_counters_under_epoch_lines(tmp_path):
    imp = _read(tmp_path, """
epoch 1/2
1/2, train_loss: 0.6512
2/2, train_loss: 0.6401
epoch 1 average loss: 0.6456
epoch 2/2
1/2, train_loss: 0.5912
2/2, train_loss: 0.5860
epoch 2 average loss: 0.5886
""")
    assert _points(imp.train["loss"]) == [(0, 0.6512), (1, 0.6401), (2, 0.5912), (3, 0.586)]


def test_keras_bar_counters_stay_running_means(tmp_path):
    imp = _read(tmp_path, """
Epoch 1/2
1/2 [==============>...............] - ETA: 0s - loss: 0.7000
2/2 [==============================] - 1s 2ms/step - loss: 0.6000
Epoch 2/2
1/2 [==============>...............] - ETA: 0s - loss: 0.5000
2/2 [==============================] - 1s 2ms/step - loss: 0.4000
""")
    assert _points(imp.train["loss"]) == [(1, 0.6), (2, 0.4)]


def test_tqdm_bar_postfix_under_epoch_lines(tmp_path):
    imp = _read(tmp_path, """
Epoch: 0
train: 100%|██████████| 46/46 [00:29<00:00,  1.55it/s, dice_loss - 0.4465, iou_score - 0.5088]
Epoch: 1
train: 100%|██████████| 46/46 [00:29<00:00,  1.55it/s, dice_loss - 0.2871, iou_score - 0.6842]
""")
    assert _points(imp.train["dice_loss"]) == [(46, 0.4465), (92, 0.2871)]
    assert _points(imp.train["iou_score"]) == [(46, 0.5088), (92, 0.6842)]


def test_a_tqdm_bar_without_metrics_is_skipped(tmp_path):
    with pytest.raises(ImportFailedError):
        _read(tmp_path, """
Epoch: 0
train: 100%|██████████| 46/46 [00:29<00:00,  1.55it/s]
Epoch: 1
train: 100%|██████████| 46/46 [00:29<00:00,  1.55it/s]
""")


def test_kohya_avr_loss_is_the_loss_and_its_nan_is_nonfinite(tmp_path):
    imp = _read(tmp_path, """
epoch 1/10
steps:  10%|█████     | 41/410 [00:50<07:30,  1.22s/it, avr_loss=0.1184]
epoch 2/10
steps:  20%|██████████| 82/410 [01:40<06:40,  1.22s/it, avr_loss=nan]
""")
    steps, values = imp.train["loss"].steps, imp.train["loss"].values
    assert list(steps) == [41, 82] and values[0] == pytest.approx(0.1184) and math.isnan(values[1])


def test_an_average_accuracy_is_no_loss(tmp_path):
    imp = _read(tmp_path, """
epoch 1/10
steps:  10%|█████     | 41/410 [00:50<07:30,  1.22s/it, avr_acc=0.1184]
""")
    assert "loss" not in imp.train and "avr_acc" in imp.train


def test_torchtune_metrics_in_the_bar_description(tmp_path):
    imp = _read(tmp_path, """
1|1|Loss: 1.9059975220676764:   4%|███       | 1/25 [00:02<00:30,  2.81s/it]
1|2|Loss: 1.823040626457124:   8%|███       | 2/25 [00:04<00:30,  2.81s/it]
""")
    assert _points(imp.train["loss"]) == [(1, 1.906), (2, 1.823)]


def test_an_index_in_the_bar_description_is_no_metric(tmp_path):
    imp = _read(tmp_path, """
Epoch 0: 100%|██████████| 10/10 [00:01<00:00, 9.1it/s, v_num=0, train_loss=1.00]
Validation DataLoader 0: 100%|██████████| 2/2 [00:00<00:00, 9.1it/s]
Epoch 1: 100%|██████████| 10/10 [00:01<00:00, 9.1it/s, v_num=0, train_loss=0.80]
""")
    assert _points(imp.train["loss"]) == [(10, 1.0), (20, 0.8)]
    assert not any("DataLoader" in k for k in [*imp.train, *imp.evals])


# --- 3. Lightning's checkpoint callback lines ------------------------------------------------------

LIGHTNING = """
Epoch 0: 100%|██████████| 10/10 [00:01<00:00, 9.1it/s, v_num=0, train_loss=1.00, val_loss=1.00]
Epoch 0, global step 10: 'val_loss' reached 1.00000 (best 1.00000), saving model to 'epoch=0-step=10.ckpt' as top 1
Epoch 1: 100%|██████████| 10/10 [00:01<00:00, 9.1it/s, v_num=0, train_loss=0.80, val_loss=1.10]
Epoch 1, global step 20: 'val_loss' was not in top 1
Epoch 2: 100%|██████████| 10/10 [00:01<00:00, 9.1it/s, v_num=0, train_loss=0.60, val_loss=1.20]
Epoch 2, global step 30: 'val_loss' was not in top 1
"""


def test_checkpoint_callback_lines_set_no_step(tmp_path):
    imp = _read(tmp_path, LIGHTNING)
    assert _points(imp.train["loss"]) == [(10, 1.0), (20, 0.8), (30, 0.6)]
    assert _points(imp.evals["val_loss"]) == [(10, 1.0), (20, 1.1), (30, 1.2)]


def test_a_global_step_line_with_its_own_metric_keeps_its_step(tmp_path):
    imp = _read(tmp_path, "Epoch 0, global step 10: loss 1.00000\nEpoch 1, global step 20: loss 0.80000\n")
    assert _points(imp.train["loss"]) == [(10, 1.0), (20, 0.8)]


def test_lightning_bars_without_checkpoint_lines_read_the_same(tmp_path):
    imp = _read(tmp_path, "\n".join(x for x in LIGHTNING.splitlines() if "global step" not in x))
    assert _points(imp.train["loss"]) == [(10, 1.0), (20, 0.8), (30, 0.6)]
    assert _points(imp.evals["val_loss"]) == [(10, 1.0), (20, 1.1), (30, 1.2)]


# --- 4. the summary names the fields read as the losses --------------------------------------------

def test_the_text_summary_names_the_field_read_as_each_loss(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text("val loss 11.009809\n" + LLMC.strip() + "\n")
    said = [w for w in analyze(str(path)).warnings if "roles:" in w]
    assert any("roles: loss <- train loss" in w for w in said)
    assert any("roles: val_loss <- loss" in w and "validation pass" in w for w in said)


def test_a_table_keeps_its_own_roles_lines_once(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("step,train_loss,val_loss\n" + "".join(f"{i},{2 - i / 10},{2.1 - i / 20}\n" for i in range(8)))
    said = [w for w in analyze(str(path)).warnings if "roles: loss" in w]
    assert len(said) == 1 and "train_loss" in said[0]


def test_a_second_fit_after_evaluate_is_training_though_its_lines_look_like_the_evaluation(tmp_path):
    # The evaluate line is the first of its shape here: the shape cache must not make every later
    # line of that shape an evaluation.
    imp = _read(tmp_path, """
Epoch 1/2
100/100 [==============================] - 1s 2ms/step - loss: 0.5000 - val_loss: 0.6000
Epoch 2/2
100/100 [==============================] - 1s 2ms/step - loss: 0.4000 - val_loss: 0.5000
10/10 [==============================] - 0s 2ms/step - loss: 0.9000
Epoch 1/2
100/100 [==============================] - 1s 2ms/step - loss: 0.3000
Epoch 2/2
100/100 [==============================] - 1s 2ms/step - loss: 0.2000
""")
    assert imp.config["text_lines"]["runs"] == 2
    assert _points(imp.train["loss"]) == [(1, 0.3), (2, 0.2)]


def test_a_summary_with_a_validation_loss_and_no_training_step_stays_refused(tmp_path):
    with pytest.raises(ImportFailedError):
        _read(tmp_path, "wandb: Run summary:\nwandb:   val/loss 0.29412\nwandb:   train/loss 0.1\n")


def test_a_data_preparation_bar_with_a_setting_in_its_title_is_no_metric_line(tmp_path):
    with pytest.raises(ImportFailedError):
        _read(tmp_path, "Converting format of dataset (num_proc=16): 100%|██████████| 1000/1000 "
                        "[00:02<00:00, 412.98 examples/s]\n")
