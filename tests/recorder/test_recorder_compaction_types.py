"""Compaction never drops a value (issue 23.1): numeric types that disagree are promoted, others kept apart."""

from __future__ import annotations

import warnings

import pyarrow as pa
from recorder_testutil import parts, read_table

from recorders import _parts
from recorders.format import PART_RE, parse_part_name


def _part(folder, seq: int, steps: list[int], **columns) -> None:
    data = {"step": pa.array(steps, pa.int64()), "time": pa.array([float(s) for s in steps]),
            "loss": pa.array([1.0 / (s + 1) for s in steps])}
    data.update(columns)
    _parts.write_part(folder, 0, seq, pa.table(data))


def test_a_string_part_keeps_every_float_value(tmp_path):
    folder = tmp_path / "run" / "scalars"
    _part(folder, 0, [0, 1], acc=pa.array([0.5, 0.625]))
    _part(folder, 1, [2], acc=pa.array(["n/a"]))
    _part(folder, 2, [3], acc=pa.array([1], pa.int32()), done=pa.array([True]))
    _part(folder, 3, [4], acc=pa.array([0.75], pa.float32()), done=pa.array([2], pa.int64()))
    seen: list[str] = []
    assert _parts.compact(folder, "scalars", 0, 4, on_warn=seen.append) == 5
    assert len(parts(tmp_path / "run", "scalars")) == 1
    rows = read_table(tmp_path / "run", "scalars").sort_by("step").to_pydict()
    assert rows["acc"] == [0.5, 0.625, None, 1.0, 0.75]
    assert rows["acc__str"] == [None, None, "n/a", None, None]
    assert rows["done"] == [None, None, None, 1, 2]  # a bool joins the integers
    (message,) = seen
    assert "'acc'" in message and "acc__str" in message


def test_agreeing_parts_compact_without_a_warning(tmp_path):
    folder = tmp_path / "run" / "scalars"
    _part(folder, 0, [0], acc=pa.array([1], pa.int64()))
    _part(folder, 1, [1], acc=pa.array([0.5]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # agreeing numeric types are promoted silently
        _parts.compact(folder, "scalars", 0, 2)
    table = read_table(tmp_path / "run", "scalars")
    assert table.schema.field("acc").type == pa.float64()
    assert table.sort_by("step").column("acc").to_pylist() == [1.0, 0.5]


def test_the_part_name_rule_is_the_format_constant():
    # Eight or more seq digits: the public rule lives in recorders.format, written parts follow it.
    assert PART_RE.pattern == r"^r(\d+)-(\d{8,})\.parquet$"
    assert parse_part_name("r0-00000001.parquet") == (0, 1)
    assert parse_part_name("r0-123456789.parquet") == (0, 123456789)
    assert parse_part_name("r0-0000001.parquet") is None
