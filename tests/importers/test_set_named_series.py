"""Round 19, from the fifth thread set's PoseFormer paste (refused: "no training loss"): a trainer that
prints one error per data set and names it by the set alone (``3d_train 88.13 3d_eval 63.54 3d_valid
67.05``) is read with the training set's series as the loss and the validation set's as the validation
loss. A name may start with a number joined to a word (``3d_train``), not with a number and a unit
(Keras's ``32s 914ms/step``). Silent twins: a loss word anywhere wins, a metric or a count named by its
set is no loss, a column of whole numbers (sample counts) is no loss, two training series are ambiguous, a training series with no held-out partner (a log's first line
``starting training`` read as a table's header) is no loss."""

from __future__ import annotations

import pytest

from runlens import analyze
from runlens.errors import RunlensError
from runlens.io.loader import load_run

POSE = [(88.134033, 63.541016, 67.047745), (52.574448, 51.973287, 60.846769), (43.446893, 46.730750, 57.600512),
        (38.523466, 41.859904, 56.776868), (35.122552, 39.267369, 55.464280), (32.561677, 37.278198, 56.194792),
        (30.496691, 35.207880, 55.060880), (28.799342, 33.555473, 53.485547)]


def _write(tmp_path, lines, name="train.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_poseformer_prints_are_read_by_their_sets(tmp_path):
    lines = []
    for e, (tr, ev, va) in enumerate(POSE, 1):
        lines += [f"[{e}] time 43.30 lr 0.000040 3d_train {tr:f} 3d_eval {ev:f} 3d_valid {va:f}",
                  "save best checkpoint"]
    run = load_run(_write(tmp_path, lines))
    assert list(run.column("scalars", "loss")) == pytest.approx([p[0] for p in POSE])
    assert list(run.column("evals", "val_loss")) == pytest.approx([p[2] for p in POSE])  # valid, not eval
    diag = analyze(_write(tmp_path, lines))
    assert diag.curve.label == "healthy"
    assert any("named by their sets" in w for w in diag.warnings)


def test_a_csv_of_train_and_test_columns(tmp_path):
    rows = ["epoch,train,test"] + [f"{e},{1.0 / e:.4f},{1.2 / e + 0.1:.4f}" for e in range(1, 13)]
    run = load_run(_write(tmp_path, rows, "errors.csv"))
    assert run.column("scalars", "loss") is not None and run.column("evals", "val_loss") is not None


@pytest.mark.parametrize("why, line", [
    ("a loss word wins", "[{e}] loss {a:.4f} 3d_train {b:.4f}"),
    ("an accuracy named by its set", "[{e}] lr 0.001 train_acc {c:.4f} valid_acc {c:.4f}"),
    ("a count named by its set", "[{e}] lr 0.001 train_samples {n} valid_samples {n}"),
    ("whole numbers are counts", "[{e}] lr 0.001 train {n} valid {n}"),
    ("rising fractions are accuracies", "[{e}] lr 0.001 train {c:.4f} valid {c:.4f}"),
    ("two training series: which one is minimized is not said", "[{e}] lr 0.001 2d_train {a:.4f} 3d_train {b:.4f}"),
    ("no held-out partner", "[{e}] lr 0.001 3d_train {b:.4f}"),
    ("a held-out partner of another quantity", "[{e}] lr 0.001 3d_train {b:.4f} 2d_valid {a:.4f}"),
])
def test_silent_twins(tmp_path, why, line):
    lines = [line.format(e=e, a=2.0 / e, b=80.0 / e, c=0.5 + 0.03 * e, n=1000 + 10 * e) for e in range(1, 11)]
    path = _write(tmp_path, lines)
    try:
        run = load_run(path)
    except RunlensError:
        return  # refused: nothing read as a loss
    picked = [w for w in run.warnings if "named by their sets" in w]
    assert not picked, (why, picked)
    if why == "a loss word wins":
        assert list(run.column("scalars", "loss")) == pytest.approx([2.0 / e for e in range(1, 11)], rel=1e-3)


def test_keras_durations_are_no_names(tmp_path):
    lines = ["Epoch 1/2", "32/32 [==============================] - 32s 914ms/step - loss: 0.5019 - val_loss: 0.6",
             "Epoch 2/2", "32/32 [==============================] - 31s 991ms/step - loss: 0.4019 - val_loss: 0.5"]
    run = load_run(_write(tmp_path, lines))
    assert not any(c[0].isdigit() for c in run.scalars.column_names), run.scalars.column_names
