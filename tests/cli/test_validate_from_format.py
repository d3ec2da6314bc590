"""``runlens validate`` checks what ``recorders.format`` says: changing a constant there changes the check."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from recorders import format as fmt
from runlens.io.validate import validate_run

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs" / "healthy"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    dst = tmp_path / "healthy"
    shutil.copytree(SAMPLE, dst)
    assert validate_run(dst).ok
    return dst


def _rules(report) -> set[tuple[str, str]]:
    return {(v.rule, v.where.split("/")[0]) for v in report.violations}


def test_column_type_comes_from_the_format_module(run, monkeypatch):
    monkeypatch.setitem(fmt.FIELDS["scalars"], "loss", pa.float32())
    report = validate_run(run)
    assert ("columns", "scalars") in _rules(report)
    assert any("column 'loss' is float64, want float32" in v.message for v in report.violations)


def test_required_columns_come_from_the_format_module(run, monkeypatch):
    monkeypatch.setitem(fmt.FIELDS["evals"], "val_perplexity", pa.float64())
    monkeypatch.setitem(fmt.REQUIRED, "evals", (*fmt.REQUIRED["evals"], "val_perplexity"))
    report = validate_run(run)
    assert any(v.rule == "columns" and "has no column 'val_perplexity'" in v.message for v in report.violations)


def test_run_json_keys_and_kinds_come_from_the_format_module(run, monkeypatch):
    monkeypatch.setitem(fmt.RUN_FIELDS, "owner", ("str", None))
    monkeypatch.setattr(fmt, "RUN_REQUIRED", (*fmt.RUN_REQUIRED, "owner"))
    monkeypatch.setitem(fmt.RUN_FIELDS, "pid", ("str", None))
    wheres = {v.where: v.message for v in validate_run(run).violations if v.rule == "meta-types"}
    assert wheres.keys() == {"run.json owner", "run.json pid"}
    assert wheres["run.json owner"] == "is missing, want a string"


def test_part_names_follow_the_format_module(run, monkeypatch):
    part = sorted((run / "scalars").glob("r*.parquet"))[0]
    # The format allows a sequence number of more than 8 digits; the check must accept it.
    wide = part.with_name(f"r0-{10**9:d}.parquet")
    shutil.copy(part, wide)
    report = validate_run(run)
    assert report.ok, [v.line() for v in report.violations]
    assert not any("not a part name" in note for note in report.notes)
    monkeypatch.setattr(fmt, "PART_RE", re.compile(r"^r(\d+)-(\d{8})\.parquet$"))
    assert any(note.startswith(f"scalars/{wide.name}: not a part name") for note in validate_run(run).notes)


def test_user_column_types_come_from_the_format_module(run, monkeypatch):
    # healthy's scalars carry a float64 "accuracy": allowed until the format allows int64 only.
    monkeypatch.setattr(fmt, "USER_COLUMN_TYPES", (pa.int64(),))
    monkeypatch.setattr(fmt, "USER_COLUMN_NARROW_TYPES", (pa.int32(),))
    report = validate_run(run)
    assert any(v.rule == "extra-columns" and "'accuracy' is float64, want int64" in v.message
               for v in report.violations)


def test_narrow_user_columns_are_tolerated(run):
    part = sorted((run / "scalars").glob("r*.parquet"))[0]
    data = pq.read_table(part)
    i = data.column_names.index("accuracy")
    # hand-made on purpose: a user column narrower than the format writes
    pq.write_table(data.set_column(i, "accuracy", data.column(i).cast(pa.float32())), part)
    assert validate_run(run).ok


@pytest.mark.parametrize("column", ["accuracy", "step"])
def test_a_repeated_column_is_a_violation_not_a_crash(run, column):
    part = sorted((run / "scalars").glob("r*.parquet"))[0]
    data = pq.read_table(part)
    # hand-made on purpose: a part with a repeated column, which no writer of well-formed runs makes
    pq.write_table(data.append_column(column, data.column(column)), part)
    report = validate_run(run)
    assert any(v.rule == "columns" and f"{column!r} appears more than once" in v.message
               for v in report.violations)


def test_key_columns_come_from_the_format_module(run, monkeypatch):
    part = sorted((run / "scalars").glob("r*.parquet"))[0]
    data = pq.read_table(part)
    lr = data.column("lr").to_pylist()
    # hand-made on purpose: a sample run's part edited in place (a null key value)
    pq.write_table(data.set_column(data.column_names.index("lr"), "lr", pa.array([None, *lr[1:]], pa.float64())),
                   part)
    assert validate_run(run).ok  # a null lr is "not logged"
    monkeypatch.setitem(fmt.KEYS, "scalars", ("step", "lr"))
    report = validate_run(run)
    assert [(v.rule, v.message) for v in report.violations] == [("steps", "1 null lrs")]
