"""Every importer that splits a source into runs says how many in ``config["import_runs"]``.

The count is a structured key (docs/format.md, "Added keys: import_runs"), the same for every
importer; ``runlens analyze`` judges each run from it, never from a warning's wording.
"""

from __future__ import annotations

import json
import math

import logmaker
import pytest
import shapes
from click.testing import CliRunner

from runlens.cli import main
from runlens.io.importers import read
from runlens.io.loader import load_run
from runlens.io.logruns import runs_in_log

BANNER = "***** Running training *****\n  Num examples = 1,000\n"


def _hf_launch(offset: float) -> str:
    lines = [BANNER]
    for step in range(10, 210, 10):
        loss = 2.0 * math.exp(-step / 80) + 0.3 + offset
        lines.append(f" {step // 2}%|###   | {step}/200 [00:01<00:10, 9.8it/s]{{'loss': {loss:.4f}, "
                     f"'learning_rate': 5e-05, 'epoch': {step / 200:.2f}}}\n")
    lines.append("{'train_runtime': 31.0, 'train_loss': 0.9, 'epoch': 1.0}\n")
    return "".join(lines)


def _text_restart(folder):
    path = folder / "train.log"
    lines = [f"step {s} | loss {2.0 / (1 + s / 10):.4f}" for s in range(40)]
    lines += [f"step {s} | loss {3.0 / (1 + s / 10):.4f}" for s in range(25)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _hf(folder):
    path = folder / "stdout.txt"
    path.write_text(_hf_launch(0.0) + _hf_launch(0.5) + _hf_launch(1.0))
    return path


def _table(folder):
    return shapes.appended_runs(folder)[0]


# (kind, how the source is made, runs, the steps of run 1 or None where the importer names no steps)
CASES = [
    ("text", _text_restart, 2, [0, 39]),
    ("text", lambda d: logmaker.keras_console(d, epochs=8, runs=3), 3, [1, 8]),
    ("hf", _hf, 3, [10, 200]),
    ("table", _table, 2, [0, 39]),
    ("mlflow", logmaker.mlflow_store, 2, None),
    ("wandb", logmaker.wandb_export, 2, None),
]


@pytest.mark.parametrize("kind, make, n, first", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_the_run_count_is_a_structured_key(tmp_path, kind, make, n, first):
    path = make(tmp_path)
    imp = read(kind, path)
    runs = imp.config["import_runs"]
    assert runs["count"] == n == len(runs["runs"])
    assert runs["read"] == n  # the last, by default
    assert [r["index"] for r in runs["runs"]] == list(range(1, n + 1))
    assert all(isinstance(r["label"], str) and r["label"] for r in runs["runs"])
    assert runs["runs"][0]["steps"] == first
    assert runs["note"] in imp.warnings
    picked = read(kind, path, run=1).config["import_runs"]
    assert picked["read"] == 1 and picked["count"] == n
    # The key reaches the in-memory run, where the CLI counts the runs from it alone.
    config = load_run(str(path)).meta["config"]
    assert runs_in_log(config) == n
    assert runs_in_log({**config, "import_runs": None}) == 1


def test_a_source_of_one_run_has_no_key(tmp_path):
    path = tmp_path / "one.log"
    path.write_text("\n".join(f"step {s} | loss {2.0 / (1 + s):.4f}" for s in range(30)) + "\n")
    assert "import_runs" not in read("text", path).config
    assert runs_in_log(load_run(str(path)).meta["config"]) == 1


def test_analyze_judges_each_run_of_an_export_and_leaves_the_importers_note_out(tmp_path):
    path = logmaker.wandb_export(tmp_path)  # run-a healthy, run-b goes NaN
    res = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "--fail-on", "never"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert [(e["index"], e["reported"]) for e in obj["runs_in_file"]] == [(1, False), (2, True)]
    assert obj["curve"] == "diverged"
    assert obj["warnings"][0].startswith("the log holds 2 runs, each judged")
    assert not any("the export holds 2 runs" in w for w in obj["warnings"])
