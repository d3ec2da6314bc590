"""One vocabulary of metric names: a name streamed by an importer takes the role the table reader gives it.

The console, MLflow, W&B and Markdown importers map names one at a time
(:mod:`runlens.io.importers._names`); the table reader decides on a table's
columns (:mod:`runlens.io.reader.roles`). Both go by the words of
:mod:`runlens.io.reader.names`, so the same name means the same thing
whichever shape of log it comes in.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import shapes_text as st

from runlens.io.importers import _names, read
from runlens.io.importers._common import val_set_column
from runlens.io.reader.roles import infer
from runlens.io.reader.table import Table

# Names as trainers log them, each with a role of its own.
NAMES = ["loss", "train_loss", "Train Loss", "train/loss", "total_loss", "lm loss", "avg_loss", "running_loss",
         "objective", "xent", "nll", "main/loss", "trl", "tel",
         "val_loss", "validation loss", "eval_loss", "dev_loss", "valid/loss", "validation/main/loss",
         "eval_wiki_loss", "wiki/val_loss", "val_nll_loss", "test_loss",
         "lr", "learning_rate", "lr-Adam", "lr_pg0", "optimizer/lr",
         "grad_norm", "gradient_norm", "gnorm", "total_norm", "grad_l2_norm",
         "loss_scale", "loss_scaler", "grad_scale", "amp_scale"]


def _table_role(name: str) -> str | None:
    """The role the table reader gives ``name`` as the one column beside a step counter."""
    n = 20
    values = {"step": np.arange(n, dtype=float), name: np.linspace(0.5, 2.0, n)[::-1].copy()}
    present = {k: np.ones(n, dtype=bool) for k in values}
    roles = infer(Table(n, values, present, "test"), step="step")
    return next((p.role for p in roles.picks if name in p.columns), None)


def _column(role: str) -> str:
    return val_set_column(role.split("@", 1)[1]) if "@" in role else role


@pytest.mark.parametrize("name", NAMES)
def test_a_streamed_name_takes_the_role_the_table_reader_gives_it(name):
    role = _table_role(name)
    assert role is not None, name
    is_eval, column = _names.map_name(name)
    assert column == _column(role), (name, role)
    assert is_eval == role.startswith("val_loss")


@pytest.mark.parametrize("name", ["step", "global_step", "iteration", "iter", "trainer/global_step", "num_steps"])
def test_step_names_are_the_table_readers_counters(name):
    assert _names.is_step_key(name)
    n = 20
    values = {name: np.arange(n, dtype=float), "loss": np.linspace(2.0, 0.5, n)}
    present = {k: np.ones(n, dtype=bool) for k in values}
    assert infer(Table(n, values, present, "test")).index == name


def test_the_adapter_keeps_no_table_of_names():
    assert not hasattr(_names, "ALIASES") and not hasattr(_names, "STEP_KEYS")
    assert _names.map_name("loss_cls") == (False, "loss_cls")  # a part: summed later, not the loss
    assert _names.map_name("acc") == (False, "acc")


def test_two_losses_on_one_line_do_not_mix_in_one_series(tmp_path):
    # The first loss name seen keeps the role; a second loss quantity stays a scalar of its own.
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {s} | loss {2.0 / (1 + s):.4f} | nll {3.0 / (1 + s):.4f} | "
                            f"avg_loss {2.5 / (1 + s):.4f}\n" for s in range(40)))
    imp = read("text", path)
    assert imp.train["loss"].values[1] == pytest.approx(1.0)
    assert imp.train["nll"].values[1] == pytest.approx(1.5)
    assert imp.train["avg_loss"].values[1] == pytest.approx(1.25)
    assert len(imp.train["loss"].steps) == 40


def test_a_vocabulary_word_reads_in_a_console_log(tmp_path):
    # OpenNMT logs ``xent``: the reader's loss word, so the console log takes it as the loss directly.
    path = tmp_path / "onmt.log"
    path.write_text("".join(f"[2024-01-01 10:00:00 INFO] Step {s}/1000; acc: 40.1; ppl: 30.2; "
                            f"xent: {4.0 / (1 + s / 50):.4f}; lr: 0.001\n" for s in range(50, 2050, 50)))
    imp = read("text", path)
    assert list(imp.train["loss"].steps[:2]) == [50, 100]
    assert imp.config["import_roles"]["loss"]["columns"] == ["xent"]


def test_a_megatron_validation_line_is_validation_by_its_words(tmp_path):
    # "valid loss at iteration N | lm loss value: ..." : the line says it is a validation pass, so its
    # loss is the validation loss (no table entry for "lm loss value" is needed).
    path = tmp_path / "megatron.log"
    lines = []
    for it in range(100, 4100, 100):
        lines.append(f" iteration {it:8d}/  10000 | learning rate: 6.000E-05 | lm loss: {6.0 / (1 + it / 1000):.6E} |"
                     " grad norm: 1.5 |")
        if it % 1000 == 0:
            lines.append(f"valid loss at iteration {it} | lm loss value: {6.5 / (1 + it / 1000):.6E} | "
                         f"lm loss PPL: 1.0E+02 |")
    path.write_text("\n".join(lines) + "\n")
    imp = read("text", path)
    assert list(imp.evals["val_loss"].steps) == [1000, 2000, 3000, 4000]
    assert imp.evals["val_loss"].values[0] == pytest.approx(3.25)
    assert "lm_loss_value" not in imp.train and len(imp.train["loss"].steps) == 40


def test_a_dict_line_finds_its_step_by_the_readers_words(tmp_path):
    # A console log of printed dicts whose step key is no fixed spelling: the reader's step words find it,
    # global_step before a per-epoch "step"; a dict of validation keys alone is a validation pass.
    path = tmp_path / "console.log"
    lines = []
    for s in range(10, 410, 10):
        lines.append(f"INFO {{'trainer/global_step': {s}, 'step': {s // 100}, 'loss': {3.0 / (1 + s / 100):.4f}}}")
        if s % 100 == 0:
            lines.append(f"INFO {{'trainer/global_step': {s}, 'val/loss': {3.2 / (1 + s / 100):.4f}}}")
    path.write_text("\n".join(lines) + "\n")
    imp = read("text", path)
    assert list(imp.train["loss"].steps[:3]) == [10, 20, 30]
    assert list(imp.evals["val_loss"].steps) == [100, 200, 300, 400]


def _events(path, tags: dict[str, list[float]]) -> None:
    """One event file holding ``simple_value`` scalars of ``tags`` at steps 0, 1, ..."""
    out = st._record(st._pb(1, 1, struct.pack("<d", 1.0)) + st._pb(3, 2, b"brain.Event:2"))
    for tag, values in tags.items():
        for step, v in enumerate(values):
            value = st._pb(1, 2, tag.encode()) + st._pb(2, 5, struct.pack("<f", v))
            event = (st._pb(1, 1, struct.pack("<d", 1000.0 + step)) + st._pb(2, 0, bytes([step]))
                     + st._pb(5, 2, st._pb(1, 2, value)))
            out += st._record(event)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out)


def test_tensorboard_tags_take_roles_by_the_same_words(tmp_path):
    # A PyTorch (YOLOv5) folder logs its losses only as parts: no tag is the loss, the parts are summed on
    # both sides, never read as validation sets named "box" and "cls".
    n = 30
    fall = [2.0 / (1 + e / 5) for e in range(n)]
    _events(tmp_path / "exp" / "events.out.tfevents.1.host",
            {"train/box_loss": fall, "train/cls_loss": [v / 2 for v in fall],
             "val/box_loss": [v + 0.1 for v in fall], "val/cls_loss": [v / 2 + 0.1 for v in fall],
             "x/lr0": [0.01] * n, "metrics/mAP_0.5": [0.3] * n})
    imp = read("tensorboard", tmp_path / "exp")
    roles = imp.config["import_roles"]
    assert roles["loss"]["how"] == "sum" and roles["val_loss"]["how"] == "sum"
    assert not any(k.startswith("val_loss@") for k in imp.evals)
    assert imp.train["loss"].values[0] == pytest.approx(3.0, rel=1e-6)
    assert list(imp.train["loss"].steps) == list(range(n))
    # A plain loss tag among others takes the role; of two, the per-step one.
    _events(tmp_path / "pl" / "events.out.tfevents.2.host",
            {"train/loss_epoch": fall[:5], "train/loss_step": fall, "lr-AdamW": [0.001] * n,
             "grad_norm/total": [1.0] * n, "grad_norm/layer1.weight": [0.2] * n})
    tags = read("tensorboard", tmp_path / "pl").config["import_tags"]
    assert tags == {"loss": "train/loss_step", "lr": "lr-AdamW", "grad_norm": "grad_norm/total"}


def test_roles_decided_over_all_series_name_the_logs_own_columns(tmp_path):
    # No name is the loss by itself (a loss word with a qualifier), so the table reader decides over all
    # series; every role it records names the column as the log spells it.
    path = tmp_path / "train.log"
    path.write_text("".join(f"step {s} | objective_local {2.0 / (1 + s):.4f} | grad norm square {1.0 + s % 3}\n"
                            for s in range(40)))
    roles = read("text", path).config["import_roles"]
    assert roles["loss"]["columns"] == ["objective_local"]
    assert roles["grad_norm"]["columns"] == ["grad norm square"]
