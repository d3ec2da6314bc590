"""Round 23: the last reading of a console log that holds a table of numbers under a line of column
names between other lines (:mod:`runlens.io.importers.embedded`): a script's own table between a banner
and a closing message, a CLI tool whose every line opens with a status tag. Found on a development
paste (a CTR tool's table under ``[------------]`` tags, refused); the shapes here are made up. Each
has a silent twin.
"""

from __future__ import annotations

import pytest

from runlens.errors import RunlensError
from runlens.io.importers.embedded import find
from runlens.io.loader import load_run

ROWS = [(1, 0.9123, 0.8800), (2, 0.7010, 0.7200), (3, 0.5511, 0.6300), (4, 0.4410, 0.6100), (5, 0.3600, 0.6400)]


def _log(header, rows=ROWS, tag=""):
    return "\n".join([f"{tag}Loading data...", f"{tag}Model has 1.2M parameters", f"{tag}Start training", f"{tag}{header}",
                      *(f"{tag}{e:>5d}   {t:.4f}   {v:.4f}   0.7" for e, t, v in rows),
                      f"{tag}Done. Best model saved to best.pt"]) + "\n"


def _run(tmp_path, text):
    path = tmp_path / "log.txt"
    path.write_text(text)
    return load_run(path)


@pytest.mark.parametrize("text, this_reading", [
    (_log("Epoch   Train Loss   Val Loss   Val Acc"), True),
    # One word a name, one space between: the headed-table reader already reads it, before this one.
    (_log("epoch train_loss val_loss val_acc"), False),
    (_log("Epoch      Train log_loss       Test log_loss       Test AUC", tag="[ INFO   ] "), True),
])
def test_a_table_between_other_lines_is_read_by_its_names(tmp_path, text, this_reading):
    run = _run(tmp_path, text)
    assert run.column("scalars", "loss").tolist() == pytest.approx([t for _, t, _ in ROWS])
    assert run.column("evals", "val_loss").tolist() == pytest.approx([v for _, _, v in ROWS])
    assert any("read the table of 5 rows under the header on line 4" in w for w in run.warnings) == this_reading


@pytest.mark.parametrize("why, text", [
    ("no column is named a loss", _log("Epoch   Throughput   Latency   Val Acc")),
    ("two rows are too few for a table", _log("Epoch   Train Loss   Val Loss   Val Acc", rows=ROWS[:2])),
    ("a header that names fewer columns than the rows hold", _log("Epoch   Train Loss")),
])
def test_silent_twins_no_table_is_read(tmp_path, why, text):
    with pytest.raises(RunlensError):
        _run(tmp_path, text)


def test_a_log_the_text_reader_reads_is_left_to_it():
    lines = [f"step {i} loss {1 / (i + 1):.4f}" for i in range(5)]
    assert find(lines) == []  # no header line: nothing for this reading
