"""Markdown tables of metrics (notes, issues, PR comments): the ``markdown`` importer."""

from __future__ import annotations

import math

import click
import numpy as np
import pytest
from click.testing import CliRunner

from runlens.analysis import analyze
from runlens.cli import main
from runlens.errors import ImportFailedError
from runlens.io.importers import detect_kind, read

NOTES = """# Training analysis of run 7

Some prose. Step 10 (Epoch 5): eval_loss = 0.1551, the best so far.
Step 30 (Epoch 15): eval_loss = 0.1376.

| Setting | Value |
|---|---|
| lr | 2e-4 |

## Epoch-by-epoch

| Epoch | Train Loss | Eval Loss | Learning Rate | Grad Norm | Observation |
|-------|------------|-----------|---------------|-----------|-------------|
{rows}

More prose after the table.
"""


def _notes(tmp_path, epochs, train, val, name="analysis.md"):
    rows = []
    for i, (e, t, v) in enumerate(zip(epochs, train, val, strict=True)):
        cell = "-" if v is None else f"**{v:.4f}**"
        rows.append(f"| {e} | {t:.4f} | {cell} | {2e-4 * (1 - i / len(epochs)):.8f} | 0.1 | words here |")
    path = tmp_path / name
    path.write_text(NOTES.format(rows="\n".join(rows)), encoding="utf-8")
    return path


def _overfit(n=22):
    epochs = [0.83] + [5.0 * i for i in range(1, n)]
    train = list(0.17 * np.exp(-np.arange(n) / 4))
    val = [None] + [0.14 + 0.02 * max(0, i - 4) + 0.002 * (i % 2) for i in range(1, n)]
    return epochs, train, val


def test_a_notes_table_is_read_by_its_header_and_overfits(tmp_path, check_runlog):
    path = _notes(tmp_path, *_overfit())
    assert detect_kind(path) == "markdown"
    imp = read("markdown", path)
    assert imp.config["import_columns"] == {"step": "row index (no step column, no whole-number epochs)",
                                            "epoch": "Epoch", "loss": "Train Loss", "val_loss": "Eval Loss",
                                            "lr": "Learning Rate", "grad_norm": "Grad Norm"}
    assert imp.train["loss"].values.size == 22 and imp.evals["val_loss"].values.size == 21  # "-" is not logged
    assert imp.evals["val_loss"].values[0] == pytest.approx(0.142)  # the bold markup is dropped
    assert any("'Observation' holds words" in w for w in imp.warnings)
    assert imp.train["epoch"].values[0] == pytest.approx(0.83)
    d = analyze(str(path))
    assert d.curve.label == "overfitting" and "overfitting" in [f.code for f in d.findings]
    assert not [w for w in d.warnings if "crashed" in w]
    res = CliRunner().invoke(main, ["import", "markdown", str(path), str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    check_runlog(tmp_path / "run")


def test_whole_number_epochs_are_the_steps_and_a_step_column_wins(tmp_path):
    n = 12
    path = _notes(tmp_path, list(range(1, n + 1)), list(np.linspace(1, 0.3, n)), [None] * n)
    assert list(read("markdown", path).train["loss"].steps) == list(range(1, n + 1))
    text = "| step | epoch | loss |\n|---:|:---:|---|\n" + "\n".join(f"| {100 * i} | {i // 4} | {1 / (i + 1):.3f} |"
                                                        for i in range(8))
    (tmp_path / "s.md").write_text(text)
    imp = read("markdown", tmp_path / "s.md")
    assert list(imp.train["loss"].steps) == [100 * i for i in range(8)]
    assert imp.config["import_columns"]["step"] == "column 'step'"


def test_the_largest_table_with_a_loss_is_read_and_the_choice_is_said(tmp_path):
    small = "| epoch | val_loss |\n|---|---|\n| 1 | 0.9 |\n| 2 | 0.8 |\n\n"
    big = "| epoch | loss |\n|---|---|\n" + "\n".join(f"| {i} | {1 - i / 20:.3f} |" for i in range(1, 11))
    (tmp_path / "two.md").write_text(small + big)
    imp = read("markdown", tmp_path / "two.md")
    assert imp.train["loss"].values.size == 10 and "val_loss" not in imp.evals
    assert any("2 with a loss column" in w and "lines 6-" in w for w in imp.warnings)


def test_nan_and_inf_cells_are_data(tmp_path):
    rows = "\n".join(f"| {i} | {v} |" for i, v in enumerate(["1.0", "0.8", "0.7", "nan", "inf"], 1))
    (tmp_path / "n.md").write_text("| Epoch | Loss |\n|---|---|\n" + rows)
    vals = read("markdown", tmp_path / "n.md").train["loss"].values
    assert math.isnan(vals[3]) and math.isinf(vals[4])
    assert "nonfinite_loss" in [f.code for f in analyze(str(tmp_path / "n.md")).findings]


def test_a_table_without_a_loss_is_not_a_metrics_table(tmp_path):
    (tmp_path / "t.md").write_text("| name | value |\n|---|---|\n| lr | 0.1 |\n| wd | 0.01 |\n| bs | 32 |\n")
    assert detect_kind(tmp_path / "t.md") != "markdown"
    with pytest.raises(ImportFailedError, match="no Markdown table with a loss column"):
        read("markdown", tmp_path / "t.md")


def test_many_step_lines_outweigh_a_small_table(tmp_path):
    lines = [f"step {i} loss {1 / (i + 1):.4f}" for i in range(40)]
    table = "| epoch | loss |\n|---|---|\n| 1 | 0.5 |\n| 2 | 0.4 |\n| 3 | 0.3 |\n"
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n\n" + table)
    assert detect_kind(tmp_path / "log.txt") == "text"


def test_named_columns_take_their_roles_and_an_unknown_name_is_refused(tmp_path):
    text = "| Iter | Loss | Smoothed Loss |\n|---|---|---|\n" + "\n".join(
        f"| {10 * i} | {1 / (i + 1):.3f} | {1 / (i + 2):.3f} |" for i in range(8))
    (tmp_path / "m.md").write_text(text)
    imp = read("markdown", tmp_path / "m.md", loss="smoothed loss")
    assert imp.train["loss"].values[0] == pytest.approx(0.5) and imp.config["import_columns"]["loss"] == "Smoothed Loss"
    assert list(imp.train["loss"].steps[:2]) == [0, 10]
    with pytest.raises(ImportFailedError, match="no column 'val' for the val_loss"):
        read("markdown", tmp_path / "m.md", val_loss="val")
    res = CliRunner().invoke(main, ["analyze", str(tmp_path / "m.md"), "--loss", "nope"])
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "no column 'nope'" in res.output


def test_every_import_kind_says_which_options_it_takes():
    # One list, the importers' read signatures: `runlens import` offers each option some kind takes,
    # and a kind's every option is one it offers (a table kept beside them went stale: jsonl refused
    # --lr, which its reader takes).
    from runlens.cli.import_ import import_cmd
    from runlens.io.importers import KINDS, options_of

    offered = {p.name for p in import_cmd.params if isinstance(p, click.Option)} - {"dry_run", "help"}
    taken = {name for kind in KINDS for name in options_of(kind)}
    assert taken == offered
    assert options_of("jsonl") == options_of("table") and "lr" in options_of("jsonl")
    assert options_of("markdown") == ("step", "loss", "val_loss")
