"""Round 17: the bordered tables consoles print, read as Markdown's are (a header, a rule, rows).

MATLAB's ``trainNetwork`` prints its progress as a table ruled with ``=`` whose header takes two rows
(``Mini-batch`` over ``Loss``); PrettyTable rules with ``+----+``. The header rows join cell by cell.
Silent twin: without a top rule a GitHub table's header is one row, and its first data row stays data.
"""

from __future__ import annotations

from runlens.io.importers import markdown
from runlens.io.loader import load_runs
from runlens.signals import Signals

RULE = "|" + "=" * 110 + "|"
MATLAB = [
    "Training on single CPU.",
    "Initializing input data normalization.",
    RULE,
    "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base Learning  |",
    "|         |             |   (hh:mm:ss)   |   Accuracy   |   Accuracy   |     Loss     |     Loss     |      Rate       |",
    RULE,
    "|       1 |           1 |       00:00:02 |       10.16% |       12.40% |       2.3026 |       2.2817 |          0.0100 |",
    "|       1 |          50 |       00:00:05 |       61.72% |              |       1.1570 |              |          0.0100 |",
    "|       2 |         100 |       00:00:08 |       80.47% |       78.20% |       0.6601 |       0.7043 |          0.0100 |",
    "|       3 |         150 |       00:00:11 |       88.28% |              |       0.4012 |              |          0.0100 |",
    "|       4 |         200 |       00:00:14 |       91.41% |       90.10% |       0.2874 |       0.3311 |          0.0100 |",
    RULE,
    "Training finished: Max epochs completed.",
]


def test_matlab_train_network_table_joins_its_two_header_rows(tmp_path):
    [t] = markdown.tables(MATLAB)
    assert t.header[3:7] == ["Mini-batch Accuracy", "Validation Accuracy", "Mini-batch Loss", "Validation Loss"]
    assert len(t.rows) == 5
    path = tmp_path / "matlab.txt"
    path.write_text("\n".join(MATLAB) + "\n")
    sig = Signals(load_runs(path).run())
    assert list(sig.loss.steps) == [1, 50, 100, 150, 200]
    assert sig.loss.values.tolist() == [2.3026, 1.1570, 0.6601, 0.4012, 0.2874]
    val = sig.validation["val_loss"].finite()
    assert list(val.steps) == [1, 100, 200] and val.values.tolist() == [2.2817, 0.7043, 0.3311]


def test_a_prettytable_is_a_table():
    lines = ["+-------+--------+", "| Epoch | Loss   |", "+-------+--------+", "|   1   | 2.30   |", "|   2   | 1.90   |",
             "+-------+--------+"]
    [t] = markdown.tables(lines)
    assert t.header == ["Epoch", "Loss"] and t.rows == [["1", "2.30"], ["2", "1.90"]]


def test_silent_twin_a_github_header_is_one_row():
    lines = ["| epoch | loss |", "| 1 | 2.3 |", "|---|---|", "| 2 | 1.9 |"]
    # No top rule: the row above the rule is the header, the one before it is not part of it.
    assert [t.header for t in markdown.tables(lines)] == [["1", "2.3"]]
