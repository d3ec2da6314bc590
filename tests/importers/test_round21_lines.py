"""Round 21: line shapes found on the seventh thread set's pastes (a development set since its one
grading), each read as the user printed it, each with a silent twin.

- ``<name> after <counter> N: value`` (the deeplearning.ai courses' numpy loops: "Cost after
  iteration 100: 0.67"), beside CornerNet's "... at iteration N: value";
- a counter's plural opening the line (DeepSpeed's "steps: 78 loss: 0.1150", FANN's "Epochs 1000.
  Current error: 34.07."), and a count that ends before a full stop;
- an error named alone, in a log that names no loss, read as the training loss (FANN's "Current
  error", neataptic's "error", Torch7's "Err");
- loguru's "| INFO | module:function:86 - " prefix;
- a loss printed after a tqdm bar with a space alone (``print("loss", loss)``);
- an epoch header whose next line is a bare progress bar ("eta=0.0 ===>") keeps it for the line after.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.importers._clean import clean
from runlens.io.loader import load_run


def _run(tmp_path, text, name="log.txt"):
    path = tmp_path / name
    path.write_text(text)
    return load_run(path)


def _loss(run):
    return np.asarray(run.column("scalars", "loss")).tolist()


def _steps(run):
    return np.asarray(run.column("scalars", "step")).tolist()


COSTS = [0.771749, 0.672053, 0.648263, 0.611507, 0.567047, 0.540138]


def test_a_cost_after_iteration_n_is_the_loss_at_step_n(tmp_path):
    text = "# Number of training examples: 209\n" + "".join(
        f"Cost after iteration {100 * i}: {c}\n" for i, c in enumerate(COSTS)) + "train accuracy: 98.56%\n"
    run = _run(tmp_path, text)
    assert _loss(run) == COSTS and _steps(run) == [0, 100, 200, 300, 400, 500]


def test_a_loss_after_epoch_n_is_the_loss_at_epoch_n(tmp_path):
    run = _run(tmp_path, "".join(f"Loss after epoch {i}: {c}\n" for i, c in enumerate(COSTS)))
    assert _loss(run) == COSTS


def test_silent_twin_prose_with_after_and_no_value_is_no_line_of_loss(tmp_path):
    lines = [f"Cost after iteration {100 * i}: {c}" for i, c in enumerate(COSTS)]
    lines[3:3] = ["The cost after iteration 300 dropped, as expected, to 0.61 or so."]
    run = _run(tmp_path, "\n".join(lines) + "\n")
    assert _loss(run) == COSTS and _steps(run) == [0, 100, 200, 300, 400, 500]


DEEPSPEED = ("[2025-03-28 19:56:05,234] [INFO] [logging.py:128:log_dist] [Rank 0] step={s}, skipped=0, "
             "lr=[1.5644e-05], mom=[0.0]\nsteps: {s} loss: {v:.4f} iter time (s): 18.305 samples/sec: 0.219\n")


def test_a_plural_counter_opening_the_line_is_the_step(tmp_path):
    values = [0.1150, 0.0814, 0.0995, 0.1480, 0.0812, 0.0765]
    run = _run(tmp_path, "".join(DEEPSPEED.format(s=78 + i, v=v) for i, v in enumerate(values)))
    assert _loss(run) == values and _steps(run) == list(range(78, 84))


def test_silent_twin_a_plural_setting_inside_a_line_is_no_step(tmp_path):
    text = "Training with warmup steps 500 and lr 0.001\n" + "".join(f"step {i} loss {c}\n" for i, c in enumerate(COSTS))
    run = _run(tmp_path, text)
    assert _steps(run) == [0, 1, 2, 3, 4, 5]


def test_silent_twin_a_plural_counter_beside_an_epoch_counts_inside_it(tmp_path):
    # Informer's "iters: 100, epoch: 916 | loss: ...": the epoch is the step, the count restarts in each.
    text = "".join(f"\titers: 100, epoch: {e} | loss: {v}\n" for e, v in zip(range(916, 922), COSTS, strict=True))
    run = _run(tmp_path, text)
    assert _steps(run) == list(range(916, 922)) and _loss(run) == COSTS


FANN = "Epochs {e:12d}. Current error: {v:.10f}. Bit fail 8.\n"


def test_an_error_named_alone_is_the_loss_and_a_count_ends_before_a_full_stop(tmp_path):
    values = [187.3569030762, 34.0731391907, 34.0791511536, 34.0858230591, 34.0767517090]
    run = _run(tmp_path, "".join(FANN.format(e=max(1, 1000 * i), v=v) for i, v in enumerate(values)))
    assert _loss(run) == values and _steps(run) == [1, 1000, 2000, 3000, 4000]
    roles = run.meta["config"]["import_roles"]
    assert roles["loss"]["columns"] == ["Current error"] and "error" in roles["loss"]["why"]


def test_torch7_err_at_ln_1000_is_stuck_at_chance(tmp_path):
    line = "Epoch: [11][{i}/10000] Time 0.675 Err {v} Top1-%: 0.00 LR 1e-02 DataLoadingTime 0.015\n"
    values = [6.9076, 6.9091, 6.9048, 6.9069, 6.9074, 6.9080, 6.9067, 6.9071, 6.9045]
    path = tmp_path / "t.txt"
    path.write_text("".join(line.format(i=1383 + k, v=v) for k, v in enumerate(values)))
    assert "loss_at_chance" in [f.code for f in analyze(path).findings]


def _no_loss_read(tmp_path, text):
    """Whether the log is refused or read with no training loss."""
    path = tmp_path / "log.txt"
    path.write_text(text)
    try:
        run = load_run(path)
    except RunlensError:
        return True
    return bool(np.isnan(_loss(run)).all())


@pytest.mark.parametrize("why, line", [
    ("an error rate or a top-k error names another quantity", "epoch {e} top1 err {v} error rate {h}\n"),
    ("two errors leave the choice to the user", "epoch {e} error {v} err {h}\n"),
])
def test_silent_twins_of_an_error_read_as_the_loss(tmp_path, why, line):
    text = "".join(line.format(e=e, v=v, h=v / 2) for e, v in enumerate([45.1, 40.2, 38.3, 37.0]))
    assert _no_loss_read(tmp_path, text), why


def test_loguru_prefix_is_stripped():
    raw = "2019-11-22 13:27:47.669 | INFO     | bert_sentiment.train:train:88 - train_loss=0.0481, val_loss=0.0378"
    assert clean(raw) == "train_loss=0.0481, val_loss=0.0378"


def test_silent_twin_a_table_row_between_bars_keeps_its_cells():
    assert clean("| 1 | 0.5 | 0.6 |") == "| 1 | 0.5 | 0.6 |"


BAR = " {p}%|\u2588\u2588\u2589       | {i}/658 [02:39<06:15,  1.24it/s]loss tensor({v}, device='cuda:0', " \
      "grad_fn=<BinaryCrossEntropyBackward>)\n"


def test_a_loss_printed_after_a_bar_with_a_space_is_read(tmp_path):
    values = [0.6868, 0.6876, 0.6883, 0.6887, 0.6896, 0.6870]
    run = _run(tmp_path, "".join(BAR.format(p=29 + k, i=192 + 5 * k, v=v) for k, v in enumerate(values)))
    assert _loss(run) == values and _steps(run) == [192 + 5 * k for k in range(6)]


def test_silent_twin_prose_glued_after_a_bar_is_not_a_metric(tmp_path):
    text = "".join(f" {29 + k}%|\u2588\u2588      | {192 + 5 * k}/658 [02:39<06:15,  1.24it/s]reducing loss scale to 7.9e-31\n"
                   for k in range(6))
    assert _no_loss_read(tmp_path, text)


TFJS = "Epoch {e} / 20\neta=0.0 ============> \n3470ms 289137us/step - acc={a} loss={v} \n"


def test_an_epoch_header_survives_a_bare_progress_bar(tmp_path):
    text = "".join(TFJS.format(e=e, a=a, v=v) for e, a, v in [(1, 0.917, 0.297), (2, 0.00, 16.12), (3, 0.00, 16.12)])
    run = _run(tmp_path, text)
    assert _loss(run) == [0.297, 16.12, 16.12] and _steps(run) == [1, 2, 3]
    assert analyze(tmp_path / "log.txt").curve.label == "diverged"


def test_silent_twin_a_header_over_a_line_with_its_own_step_gives_way(tmp_path):
    text = "Epoch 1 / 20\neta=0.0 ===>\nstep 7 loss=0.5\nEpoch 2 / 20\neta=0.0 ===>\nstep 9 loss=0.4\n"
    run = _run(tmp_path, text)
    assert _steps(run) == [7, 9]


def test_a_sentence_above_the_log_names_no_column(tmp_path):
    # Its words outnumber the rows' cells and line up with none: before, "cost" named the step column
    # and "iteration" the loss column of a table the sentence headed.
    text = "The cost after iteration 100 dropped, as expected.\n" + "".join(
        f"step {i} loss {c}\n" for i, c in enumerate(COSTS))
    run = _run(tmp_path, text)
    assert _loss(run) == COSTS and _steps(run) == [0, 1, 2, 3, 4, 5]


def test_silent_twin_a_header_that_lines_up_with_its_columns_names_them(tmp_path):
    text = "epoch   train loss   val loss\n" + "".join(
        f"{i:5d}   {c:10.6f}   {c + 0.1:8.6f}\n" for i, c in enumerate(COSTS))
    run = _run(tmp_path, text)
    assert _loss(run) == COSTS
    assert np.asarray(run.column("evals", "val_loss")).round(6).tolist() == [round(c + 0.1, 6) for c in COSTS]


MEGATRON = (" iteration   {i}/ 115311 | consumed samples:    71455664 | lm loss: {v:E} | grad norm: 0.150 | "
            "number of skipped iterations:  0 | number of nan\niterations:  0 | samples per second: 19.474 | "
            "TFLOPs: 149.10 |\n")


def test_silent_twin_a_wrapped_lines_plural_tail_is_no_step(tmp_path):
    # The wrap puts "iterations:  0" at the start of a line that reports no loss: no restart at step 0.
    values = [2.117073, 2.116946, 2.110646, 2.124820, 2.127643]
    run = _run(tmp_path, "".join(MEGATRON.format(i=42780 + k, v=v) for k, v in enumerate(values)))
    assert _steps(run) == list(range(42780, 42785)) and _loss(run) == values
    assert "import_runs" not in run.meta["config"]
