"""Round 28's readers, from the fourteenth thread set's refusals and misread steps: each shape on a
synthetic log of its own, with a silent twin.

- a log that prints no loss but an accuracy or an error rate: its objective is the error rate (as
  printed) or the accuracy's complement (1 - accuracy, a percentage over 100), each said in the roles;
  a running best is no curve; a log with a loss keeps its loss;
- two bracketed counters side by side (``[0/25][5/782]``, the DCGAN example's print): the epoch and the
  batch within it, not one step repeated;
- a progress bar whose postfix names the epoch (``800/800 [..., Ep=20, Loss=13.41]``): the bar restarts
  every epoch.
"""

from __future__ import annotations

import numpy as np
import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.importers import detect_kind, read
from runlens.io.reader.objective import complement, percent_scale


def _imported(path):
    return read(detect_kind(path), path)


def _roles(path):
    return _imported(path).config["import_roles"]


def _speedometer(tmp_path, accuracies, val=None):
    lines = []
    for e, a in enumerate(accuracies):
        for b in (100, 200, 300):
            lines.append(f"INFO:root:Epoch[{e}] Batch [{b}]\tSpeed: 40000.00 samples/sec\taccuracy={a:.6f}")
        lines.append(f"INFO:root:Epoch[{e}] Train-accuracy={a:.6f}")
        if val is not None:
            lines.append(f"INFO:root:Epoch[{e}] Validation-accuracy={val[e]:.6f}")
    path = tmp_path / "mxnet.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_accuracy_only_log_is_read_through_its_complement(tmp_path):
    acc = [0.84, 0.92, 0.94, 0.95, 0.96, 0.965, 0.97]
    path = _speedometer(tmp_path, acc, val=[a + 0.005 for a in acc])
    roles = _roles(path)
    assert roles["loss"]["how"] == "complement" and "accuracy" in roles["loss"]["why"]
    assert roles["loss"]["columns"] == ["accuracy"]  # the per-batch print, the finer grain
    assert roles["val_loss"]["how"] == "complement"
    imp = _imported(path)
    assert imp.train["loss"].values[-1] == pytest.approx(1 - acc[-1])
    assert imp.evals["val_loss"].values[-1] == pytest.approx(1 - acc[-1] - 0.005)
    assert analyze(path).curve.label in ("healthy", "insufficient_data")


def test_a_percentage_accuracy_is_divided_by_100(tmp_path):
    path = tmp_path / "mnist.log"
    path.write_text("".join(f"Epoch {e}: Train accuracy = {a:.2f}%\n"
                            for e, a in enumerate([84.6, 92.9, 94.4, 95.3, 95.7, 96.3], start=1)))
    assert _roles(path)["loss"]["how"] == "complement"
    assert _imported(path).train["loss"].values[-1] == pytest.approx(1 - 0.963)


def test_an_error_rate_is_read_as_printed(tmp_path):
    path = tmp_path / "ocr.log"
    path.write_text("".join(f"At iteration {i}, word error rate={w}%, skip ratio=0%\n"
                            for i, w in zip(range(100, 900, 100), [96, 80, 61, 45, 33, 25, 20, 18], strict=True)))
    loss = _roles(path)["loss"]
    assert loss["how"] == "rate" and "error rate" in loss["why"]
    assert _imported(path).train["loss"].values[-1] == pytest.approx(18)


def test_silent_twin_a_log_with_a_loss_keeps_its_loss(tmp_path):
    path = tmp_path / "mnist.log"
    path.write_text("".join(f"Epoch {e}: loss {1 / e:.4f} Train accuracy = {a:.2f}%\n"
                            for e, a in enumerate([84.6, 92.9, 94.4, 95.3, 95.7, 96.3], start=1)))
    loss = _roles(path)["loss"]
    assert loss["how"] == "column" and loss["columns"] == ["loss"]


def test_silent_twin_a_running_best_alone_is_no_curve(tmp_path):
    path = tmp_path / "best.log"
    path.write_text("".join(f"Epoch {e}: best_acc {a}\n" for e, a in enumerate([0.5, 0.6, 0.6, 0.7], start=1)))
    with pytest.raises(RunlensError):
        analyze(path)


@pytest.mark.parametrize("values, scale", [([0.1, 0.9], 1.0), ([12.0, 96.3], 100.0), ([-0.1, 0.5], None),
                                           ([3.0, 250.0], None)])
def test_the_scale_of_an_accuracy(values, scale):
    assert percent_scale(np.array(values)) == scale


def test_the_complement_of_a_percentage():
    assert complement(np.array([25.0, 90.0])) == pytest.approx([0.75, 0.10])


def test_two_bracketed_counters_are_the_epoch_and_the_batch(tmp_path):
    path = tmp_path / "dcgan.log"
    lines = [f"[{e}/5][{i}/782] Loss_D: {1.2 - 0.01 * (e * 4 + i // 200):.4f} Loss_G: {2.0 + 0.01 * e:.4f}"
             for e in range(5) for i in (0, 200, 400, 600)]
    path.write_text("\n".join(lines) + "\n")
    imp = _imported(path)
    assert not any("repeated steps" in w for w in imp.warnings), imp.warnings
    assert len(imp.train["loss"].steps) == 20 and imp.train["loss"].steps[-1] == 4 * 782 + 600 - 1


def test_silent_twin_one_bracketed_counter_is_the_step(tmp_path):
    path = tmp_path / "plain.log"
    path.write_text("".join(f"[{i}/782] loss: {2.0 - 0.001 * i:.4f}\n" for i in range(0, 782, 50)))
    steps = _imported(path).train["loss"].steps
    assert list(steps) == list(range(0, 782, 50))


def test_a_bar_whose_postfix_names_the_epoch(tmp_path):
    path = tmp_path / "punet.log"
    bar = "100%|██████████| 800/800 [02:10<00:00,  6.12it/s, Ep={e}, Loss={v:.2f}, i=799]"
    path.write_text("".join(bar.format(e=e, v=13.4 - 0.3 * (e - 20)) + "\n" for e in range(20, 26)))
    steps = _imported(path).train["loss"].steps
    assert len(steps) == 6 and steps[-1] == 6 * 800, steps


SINGA = """Starting Epoch {e}:
Training loss = {v:.6f}, training accuracy = 0.97
Evaluation accuracy = 0.98, Elapsed Time = 2.6s
"""


def test_an_announced_epoch_header_splits_two_runs(tmp_path):
    path = tmp_path / "singa.log"
    path.write_text("".join(SINGA.format(e=e, v=v) for e, v in [(7, 89.07), (8, 82.31), (9, 78.41)])
                    + "".join(SINGA.format(e=e, v=v) for e, v in enumerate([625.1, 235.6, 171.6, 139.3, 120.0])))
    diag = analyze(path)
    assert any("holds 2 runs" in w for w in diag.warnings), diag.warnings
    assert "loss_spikes" not in {f.code for f in diag.findings}


def test_silent_twin_a_sentence_about_an_epoch_is_no_header(tmp_path):
    path = tmp_path / "note.log"
    path.write_text("Starting Epoch 7: resumed from checkpoint\n"
                    + "".join(f"step {i} loss {2.0 - 0.01 * i:.3f}\n" for i in range(10)))
    imp = _imported(path)
    assert list(imp.train["loss"].steps) == list(range(10))


def test_a_reward_only_log_is_read_through_its_negative(tmp_path):
    path = tmp_path / "reinforce.log"
    rewards = ["nan", 42.10, 105.40, 132.43, 148.75, 160.2, 171.9]
    path.write_text("".join(f"Episode {10 * i}\tAverage reward: {r}\n" for i, r in enumerate(rewards)))
    imp = _imported(path)
    loss = imp.config["import_roles"]["loss"]
    assert loss["how"] == "negated" and "reward" in loss["why"]
    # The running mean's first print, an average of nothing yet, is left out: no NaN loss.
    assert list(imp.train["loss"].steps) == [10 * i for i in range(1, 7)]
    assert imp.train["loss"].values[-1] == pytest.approx(-171.9)
    assert analyze(path).curve.label != "diverged"


def test_silent_twin_a_reward_beside_a_named_loss_is_a_metric(tmp_path):
    path = tmp_path / "ppo.log"
    path.write_text("".join(f"Episode {i} total reward: {i * 3.0} policy loss: {1 / (i + 1):.4f}\n" for i in range(8)))
    assert _roles(path)["loss"]["how"] == "column"


def test_silent_twin_an_episode_inside_a_line_is_no_step(tmp_path):
    path = tmp_path / "worker.log"
    path.write_text("".join(f"Worker: 0 Episode: {100 + i} steps: 5 training iteration: {7 + i // 2} loss: {2 - i / 10}\n"
                            for i in range(8)))
    assert sorted(set(_imported(path).train["loss"].steps.tolist())) == [7, 8, 9, 10]


@pytest.mark.parametrize("text, role", [
    ("".join(f"Mean Reward: {r}\n" for r in [2.33, 4.13, 5.37, 6.02, 7.9]), "loss"),
    ("".join(f'        "val_perplexity": {p}\n' for p in [41.2, 36.7, 34.6]), "val_loss"),
])
def test_lines_with_no_step_that_carry_what_the_loop_watches_are_its_points(tmp_path, text, role):
    path = tmp_path / "watch.log"
    path.write_text(text)
    imp = _imported(path)
    series = imp.train.get("loss") if role == "loss" else imp.evals.get("val_loss")
    assert series is not None and len(series.steps) == text.count("\n")


def test_silent_twin_accuracy_lines_beside_loss_lines_are_not_steps_of_their_own(tmp_path):
    path = tmp_path / "mixed.log"
    path.write_text("".join(f"loss: {2.0 - 0.1 * i:.2f}\naccuracy: {0.5 + 0.04 * i:.2f}\n" for i in range(6)))
    imp = _imported(path)
    assert len(imp.train["loss"].steps) == 6 and imp.config["import_roles"]["loss"]["how"] == "column"


def test_a_proxy_loss_has_no_chance_level(tmp_path):
    # 1 - accuracy flat at 0.693 is a classifier at 30.7% accuracy, not a loss at ln 2.
    path = tmp_path / "flat_acc.log"
    path.write_text("".join(f"Epoch {e}: train accuracy {0.307 + (0.0004 if e % 2 else -0.0004):.4f}\n"
                            for e in range(1, 13)))
    diag = analyze(path)
    assert "loss_at_chance" not in {f.code for f in diag.findings}
    assert "chance_classes" not in diag.curve.evidence


def test_silent_twin_a_named_loss_at_ln2_is_at_chance(tmp_path):
    path = tmp_path / "flat_loss.log"
    path.write_text("".join(f"Epoch {e}: train loss {0.6931 + (0.0004 if e % 2 else -0.0004):.4f}\n"
                            for e in range(1, 13)))
    assert "chance_classes" in analyze(path).curve.evidence
