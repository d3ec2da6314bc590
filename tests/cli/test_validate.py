"""``runlens validate``: the project's own format-v1 checker, rule by rule, and the reference checker."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from runlens.cli import main
from runlens.io.validate import RULES, validate_run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_runs"
RUNS = sorted(p for p in SAMPLES.iterdir() if p.is_dir() and (p / "run.json").is_file())
CHECK_RUNLOG = ROOT.parent / "shared" / "tools" / "check-runlog"


def _copy(tmp_path: Path, name: str = "healthy") -> Path:
    dst = tmp_path / name
    shutil.copytree(SAMPLES / name, dst)
    return dst


def _edit_meta(run: Path, **changes) -> None:
    meta = json.loads((run / "run.json").read_text())
    for key, value in changes.items():
        if value is ...:
            meta.pop(key, None)
        else:
            meta[key] = value
    (run / "run.json").write_text(json.dumps(meta))


def _first_part(run: Path, table: str) -> Path:
    return sorted((run / table).glob("r*.parquet"))[0]


def _retype(run: Path, table: str, column: str, typ: pa.DataType) -> None:
    part = _first_part(run, table)
    data = pq.read_table(part)
    i = data.schema.get_field_index(column)
    # hand-made on purpose: a part retyped off the format for the validator to refuse
    pq.write_table(data.set_column(i, column, data.column(column).cast(typ)), part)


def _drop(run: Path, table: str, column: str) -> None:
    part = _first_part(run, table)
    # hand-made on purpose: a part stripped of a column the format requires
    pq.write_table(pq.read_table(part).drop_columns([column]), part)


# Each breakage and the one rule it must be reported under.
BREAKAGES = {
    "no run.json": (lambda r: (r / "run.json").unlink(), "layout"),
    "bad json": (lambda r: (r / "run.json").write_text("{"), "json"),
    "json list": (lambda r: (r / "run.json").write_text("[]"), "json"),
    "format_version 2": (lambda r: _edit_meta(r, format_version=2), "header"),
    "layers true": (lambda r: _edit_meta(r, layers=True), "meta-types"),
    "layers 12": (lambda r: _edit_meta(r, layers=12), "meta-types"),
    "pid string": (lambda r: _edit_meta(r, pid="7"), "meta-types"),
    "no seed": (lambda r: _edit_meta(r, seed=...), "meta-types"),
    "bad timestamp": (lambda r: _edit_meta(r, started_at="yesterday"), "timestamps"),
    "layer without index": (lambda r: _edit_meta(r, layers=[{"name": "w", "module": "", "kind": "Linear",
                                                              "shape": [1], "numel": 1}]), "layers-meta"),
    "no attempts": (lambda r: _edit_meta(r, attempts=[]), "attempts"),
    "crashed without error": (lambda r: _edit_meta(r, status="crashed", error=None), "error"),
    "unknown status": (lambda r: _edit_meta(r, status="done"), "status"),
    # r00- and r0- both parse as rank 0: two files for one (rank, seq).
    "duplicate seq": (lambda r: shutil.copy(_first_part(r, "scalars"),
                                            r / "scalars" / _first_part(r, "scalars").name.replace("r0-", "r00-")),
                      "part-names"),
    "garbage part": (lambda r: (r / "scalars" / "r0-99999999.parquet").write_bytes(b"nope"), "part-readable"),
    "no loss column": (lambda r: _drop(r, "scalars", "loss"), "columns"),
    "loss float32": (lambda r: _retype(r, "scalars", "loss", pa.float32()), "columns"),
    # hand-made on purpose: a user scalar of a type the format does not allow
    "string user scalar": (lambda r: pq.write_table(
        pq.read_table(_first_part(r, "scalars")).append_column(
            "note", pa.array(["x"] * pq.read_table(_first_part(r, "scalars")).num_rows)),
        _first_part(r, "scalars")), "extra-columns"),
}


def test_every_rule_has_a_breakage_test():
    # "steps", "event-kinds" and "layer-names" are covered below with hand-written parts.
    assert set(RULES) == {rule for _, rule in BREAKAGES.values()} | {"steps", "event-kinds", "layer-names"}


@pytest.mark.parametrize("name", sorted(BREAKAGES))
def test_each_breakage_is_named_with_its_rule(tmp_path, name):
    run = _copy(tmp_path)
    assert validate_run(run).ok
    breakage, rule = BREAKAGES[name]
    breakage(run)
    report = validate_run(run)
    assert not report.ok
    assert rule in {v.rule for v in report.violations}, [v.line() for v in report.violations]
    assert all(f"[rule {v.rule}: " in v.line() for v in report.violations)


def test_table_rules_on_hand_written_parts(tmp_path):
    run = _copy(tmp_path)
    (run / "events").mkdir(exist_ok=True)
    # hand-made on purpose: parts breaking the table rules (null step, unknown kind, unknown layer)
    pq.write_table(pa.table({"step": pa.array([None, 1], pa.int64()), "time": [0.0, 1.0],
                             "kind": ["exception", "meltdown"], "layer": pa.array([None, None], pa.string()),
                             "value": pa.array([None, None], pa.float64()), "message": ["a", "b"]}),
                   run / "events" / "r0-00000077.parquet")
    layers = pq.read_table(_first_part(run, "layers"))
    renamed = layers.set_column(layers.schema.get_field_index("layer"), "layer",
                                pa.array(["ghost"] * layers.num_rows))
    pq.write_table(renamed, run / "layers" / "r0-00000078.parquet")
    rules = {v.rule for v in validate_run(run).violations}
    assert {"steps", "event-kinds", "layer-names"} <= rules


def test_hidden_and_foreign_files_are_ignored_with_notes(tmp_path):
    run = _copy(tmp_path)
    (run / "scalars" / ".tmp-r0-00000005.parquet").write_bytes(b"half written")
    (run / "scalars" / "README.txt").write_text("hello")
    report = validate_run(run)
    assert report.ok
    assert any("README.txt" in n for n in report.notes)


def test_cli_exit_status_and_lines(tmp_path):
    good = _copy(tmp_path, "healthy")
    bad = _copy(tmp_path, "crash_oom")
    _edit_meta(bad, layers=True)
    runner = CliRunner()
    ok = runner.invoke(main, ["validate", str(good)])
    assert ok.exit_code == 0, ok.output
    assert ok.output.strip().endswith("1 of 1 runs conform to run-log format v1")
    res = runner.invoke(main, ["validate", str(good), str(bad)])
    assert res.exit_code == 1
    line = next(x for x in res.output.splitlines() if "layers" in x and "rule" in x)
    assert line.startswith(f"{bad}: run.json layers: is true, want a list [rule meta-types:")
    assert "Traceback" not in res.output
    assert runner.invoke(main, ["validate"]).exit_code == 2
    missing = runner.invoke(main, ["validate", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "not a directory" in missing.output


def test_every_sample_run_conforms():
    bad = {run.name: [v.line() for v in validate_run(run).violations] for run in RUNS}
    assert not {k: v for k, v in bad.items() if v}


@pytest.mark.skipif(not CHECK_RUNLOG.is_file(), reason=f"{CHECK_RUNLOG} is not beside the checkout")
@pytest.mark.parametrize("name", ["pristine", *sorted(BREAKAGES)])
def test_agrees_with_the_reference_checker(tmp_path, name):
    """Same verdict as ../shared/tools/check-runlog on every sample run and on each breakage."""
    runs = RUNS if name == "pristine" else [_copy(tmp_path)]
    if name != "pristine":
        BREAKAGES[name][0](runs[0])
    for run in runs:
        proc = subprocess.run([sys.executable, str(CHECK_RUNLOG), str(run)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        ours = validate_run(run)
        assert ours.ok == (proc.returncode == 0), (run, proc.stdout, [v.line() for v in ours.violations])
