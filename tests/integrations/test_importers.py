"""Importers on files written by the real writers and on the real logs in ../shared/real-logs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import runlens
from runlens.errors import ImportFailedError
from runlens.io.importers import KINDS, detect_kind, import_run, read

REAL = Path(__file__).resolve().parents[3] / "shared" / "real-logs"
KERAS = sorted(p for p in (REAL / "autotrainer").rglob("*.csv") if p.name != "case16.csv")
CONFLICTED = REAL / "autotrainer" / "DL_tools" / "log" / "case16" / "case16.csv"
HF_CONSOLE = sorted((REAL / "centaur-lora").rglob("*.out"))
TEXT_LOGS = (sorted((REAL / "modded-nanogpt").rglob("*.log"))
             + sorted((REAL / "nlpia2-wordlm").rglob("model_*.md"))
             + sorted((REAL / "bigscience").rglob("chronicles.md")))
# The real logs live beside the checkout: a clone without ../shared skips these tests and says why.
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason=f"{REAL} is not beside the checkout")


def table(run: Path, name: str):
    parts = sorted((run / name).glob("r*.parquet"))
    return pq.read_table(parts) if parts else None


def meta(run: Path) -> dict:
    return json.loads((run / "run.json").read_text())


def curve(run: Path) -> str:
    return runlens.analyze(run).to_dict()["curve"]


# -- the real logs -------------------------------------------------------------
@needs_real
@pytest.mark.parametrize("path", KERAS + HF_CONSOLE + TEXT_LOGS or [REAL], ids=lambda p: str(p.relative_to(REAL)))
def test_every_real_log_in_a_known_format_imports(path, tmp_path, check_runlog):
    kind = detect_kind(path)
    assert kind in KINDS
    run = import_run(kind, path, tmp_path / "run")
    check_runlog(run)
    m = meta(run)
    assert m["config"]["imported_from"] == {"kind": kind, "path": str(path)}
    assert isinstance(m["config"]["import_warnings"], list)
    assert table(run, "scalars").num_rows > 0


@needs_real
def test_merge_conflict_markers_import_the_last_side_not_both(tmp_path):
    run = import_run("csv", CONFLICTED, tmp_path / "run")
    lines = CONFLICTED.read_text().splitlines()
    assert table(run, "scalars").num_rows == len(lines[503:1003])
    notes = meta(run)["config"]["import_warnings"]
    assert any("merge-conflict markers at lines 2, 503, 1004" in w and "--conflict ours" in w for w in notes)


@needs_real
@pytest.mark.parametrize("side, first_loss", [("ours", 0.9056263743128096), ("theirs", None)])
def test_merge_conflict_side_is_imported_only_when_asked(side, first_loss, tmp_path, check_runlog):
    run = import_run("csv", CONFLICTED, tmp_path / "run", conflict=side)
    check_runlog(run)
    lines = CONFLICTED.read_text().splitlines()
    ours, theirs = lines[2:502], lines[503:1003]
    expected = ours if side == "ours" else theirs
    loss = table(run, "scalars").column("loss").to_pylist()
    assert len(loss) == len(expected)
    assert loss[0] == float(expected[0].split(",")[2])
    if first_loss is not None:
        assert loss[0] == first_loss
    assert any(side in w and "merge-conflict" in w for w in meta(run)["config"]["import_warnings"])


@needs_real
def test_keras_csv_uses_the_row_index_and_keeps_nan(tmp_path):
    path = REAL / "autotrainer" / "DL_tools" / "log" / "case26" / "case26.csv"
    run = import_run("csv", path, tmp_path / "run")
    s, e = table(run, "scalars"), table(run, "evals")
    rows = path.read_text().splitlines()[1:]
    assert s.column("step").to_pylist() == list(range(len(rows)))
    assert math.isnan(s.column("loss")[0].as_py())
    assert "val_accuracy" in e.column_names and "accuracy" in s.column_names
    assert meta(run)["config"]["index_kind"] == "row"  # Keras writes no epoch column: the row is the index
    assert curve(run) == "diverged"


@needs_real
def test_llmc_log_has_train_and_val_rows(tmp_path):
    path = REAL / "modded-nanogpt" / "records" / "track_1_short" / "2024-10-13_llmc" / "main.log"
    run = import_run("text", path, tmp_path / "run")
    s, e = table(run, "scalars"), table(run, "evals")
    lines = path.read_text().splitlines()
    assert s.num_rows == sum(" trl:" in x for x in lines)
    assert e.num_rows == sum(" tel:" in x for x in lines)
    assert s.column("loss")[0].as_py() == 11.0091 and s.column("grad_norm")[0].as_py() == 15.37
    assert curve(run) == "healthy"


@needs_real
def test_word_language_model_steps_count_batches(tmp_path):
    path = next(p for p in TEXT_LOGS if "RNN_RELU" in p.name)
    run = import_run("text", path, tmp_path / "run")
    steps = table(run, "scalars").column("step").to_pylist()
    assert steps[:2] == [199, 399] and steps[14] == 2983 + 199
    assert table(run, "evals").column("step")[0].as_py() == 2982
    assert curve(run) == "diverged"  # this RNN's loss is nan from the first log line


@needs_real
def test_megatron_chronicle_lines(tmp_path):
    path = REAL / "bigscience" / "train" / "tr8-104B-wide" / "chronicles.md"
    run = import_run("text", path, tmp_path / "run")
    rows = [r for r in table(run, "scalars").to_pylist() if r.get("grad_norm") is not None]
    first = rows[0]
    assert first["step"] == 6900 and first["loss_scale"] == 4096.0 and first["grad_norm"] > 1e4
    assert "iteration" in meta(run)["config"]["log_style"]
    # The chronicle pastes excerpts of several restarts: the earlier one is there with --run 1.
    notes = meta(run)["config"]["import_warnings"]
    assert any("the log holds 2 runs" in w for w in notes)
    early = import_run("text", path, tmp_path / "run1", run=1)
    assert table(early, "scalars").column("step").to_pylist()[0] == 7000


@needs_real
def test_hf_console_log(tmp_path):
    path = HF_CONSOLE[0]
    run = import_run("hf", path, tmp_path / "run", logging_steps=5)
    s = table(run, "scalars")
    assert s.column("step").to_pylist()[:3] == [5, 10, 15]  # line n at n * logging_steps, as the Trainer logs
    assert s.column("loss")[0].as_py() == 0.166 and s.column("lr")[1].as_py() == pytest.approx(6.0206e-05, rel=1e-4)
    assert table(run, "evals").num_rows == path.read_text().count("{'eval_loss'")
    assert meta(run)["config"]["train_summary"]["train_loss"] == pytest.approx(0.0396, abs=1e-4)


# -- generic CSV / Parquet ------------------------------------------------------
def test_generic_csv_and_parquet_with_mapping(tmp_path, check_runlog):
    import pyarrow as pa

    csv = tmp_path / "log.csv"
    csv.write_text("iteration,train_loss,learning_rate,acc\n0,2.0,0.1,0.5\n10,1.5,0.1,0.6\n20,,0.1,\n30,1.0,0.05,0.8\n")
    run = import_run("csv", csv, tmp_path / "a")
    check_runlog(run)
    s = table(run, "scalars")
    assert s.column("step").to_pylist() == [0, 10, 30]  # the row without a loss is not a step row
    assert s.column("lr").to_pylist() == [0.1, 0.1, 0.05]
    assert any("'lr'" in w for w in meta(run)["config"]["import_warnings"])
    pq_path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"it": [1, 2, 3], "objective": [3.0, float("nan"), 1.0]}), pq_path)
    run = import_run("csv", pq_path, tmp_path / "b", step="it", loss="objective")
    assert math.isnan(table(run, "scalars").column("loss")[1].as_py())
    with pytest.raises(ImportFailedError, match="no loss column 'nope'"):
        import_run("csv", pq_path, tmp_path / "c", loss="nope")


def test_import_refuses_a_source_without_loss_and_an_existing_run(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("step,accuracy\n0,0.5\n")
    with pytest.raises(ImportFailedError, match="no training loss"):
        import_run("csv", csv, tmp_path / "run")
    csv.write_text("step,loss\n0,0.5\n")
    import_run("csv", csv, tmp_path / "run2")
    with pytest.raises(ImportFailedError, match="already holds a run"):
        import_run("csv", csv, tmp_path / "run2")
    with pytest.raises(ImportFailedError, match="unknown import kind"):
        read("nope", csv)


@needs_real
def test_detect_kind(tmp_path):
    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "events.out.tfevents.1.host").write_bytes(b"")
    assert detect_kind(tmp_path / "tb") == "tensorboard"
    assert detect_kind(REAL / "modded-nanogpt" / "records" / "track_1_short" / "2024-10-13_llmc" / "main.log") == "text"
    assert detect_kind(HF_CONSOLE[0]) == "hf"
    assert detect_kind(KERAS[0]) == "table"
    assert detect_kind(REAL / "README.md") is None
    (tmp_path / "v0").mkdir()
    (tmp_path / "v0" / "metrics.csv").write_text("epoch,step,train_loss\n0,0,1.0\n")
    assert detect_kind(tmp_path / "v0") == "table"
    assert detect_kind(tmp_path / "v0" / "metrics.csv") == "table"
    (tmp_path / "v0" / "run.json").write_text("{}")
    assert detect_kind(tmp_path / "v0") is None


@needs_real
def test_cli_import_and_one_line_errors(tmp_path):
    from click.testing import CliRunner

    from runlens.cli import main

    runner = CliRunner()
    res = runner.invoke(main, ["import", "csv", str(tmp_path / "missing.csv"), str(tmp_path / "r")])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and "no such file" in res.output
    res = runner.invoke(main, ["import", "csv", str(CONFLICTED), str(tmp_path / "r"), "--conflict", "theirs"])
    assert res.exit_code == 0, res.output
    assert "note: git merge-conflict" in res.output
    res = runner.invoke(main, ["import", "text", str(CONFLICTED), str(tmp_path / "r2"), "--loss-tag", "x"])
    assert res.exit_code == 2 and "not used by the text importer" in res.output
    res = runner.invoke(main, ["import", "hf", str(tmp_path / "missing.json"), str(tmp_path / "r3")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_kinds_are_the_documented_ones():
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "integrations" / "importers.md").read_text()
    table = page[page.index("| KIND | SOURCE | notes |"):].split("\n\n", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE))
    assert set(KINDS) == documented == {"table", "tensorboard", "lightning-csv", "hf", "csv", "text", "jsonl",
                                        "mlflow", "wandb", "markdown"}


def test_generic_step_lines(tmp_path, check_runlog):
    log = tmp_path / "train.log"
    log.write_text("loading data...\n"
                   "step 0/100 | loss 2.5000 | lr 1.0e-03 | norm 1.20\n"
                   "step 10/100 | loss 2.1000 | lr 1.0e-03 | norm 0.90\n"
                   "step 20/100 | loss nan | lr 1.0e-03 | norm inf\n"
                   "step 20/100 | val loss 2.3\n")
    assert detect_kind(log) == "text"
    run = import_run("text", log, tmp_path / "run")
    check_runlog(run)
    s = table(run, "scalars").to_pydict()
    assert s["step"] == [0, 10, 20] and s["lr"] == [1e-3] * 3
    assert math.isnan(s["loss"][2]) and math.isinf(s["grad_norm"][2])
    assert table(run, "evals").to_pydict()["val_loss"] == [2.3]


@needs_real
def test_importing_never_loads_torch(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from runlens.io.importers import import_run; "
            f"import_run('csv', {str(KERAS[0])!r}, {str(tmp_path / 'run')!r}); "
            "import runlens.io.importers.tensorboard, runlens.io.importers.hf, runlens.io.importers.text; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2], timeout=120)


def test_hf_console_bare_nan_and_progress_bar_steps(tmp_path):
    # transformers 4.x printed floats bare (NaN as nan) right after the tqdm bar, on the same line.
    log = tmp_path / "job.out"
    log.write_text(
        " 20%|##        | 2/10 [00:01<00:04,  1.9it/s]{'loss': 2.5, 'grad_norm': 1.5, 'learning_rate': 0.001, 'epoch': 0.2}\n"
        " 40%|####      | 4/10 [00:02<00:03,  1.9it/s]{'loss': nan, 'grad_norm': inf, 'learning_rate': 0.001, 'epoch': 0.4}\n"
        "{'eval_loss': 2.7, 'eval_runtime': 0.5, 'epoch': 0.4}\n")
    run = import_run("hf", log, tmp_path / "run")
    s = table(run, "scalars").to_pydict()
    assert s["step"] == [2, 4]  # the bars' own counts
    assert math.isnan(s["loss"][1]) and math.isinf(s["grad_norm"][1])
    assert table(run, "evals").to_pydict()["step"] == [4]
    assert not any("carry no step" in w for w in meta(run)["config"]["import_warnings"])
