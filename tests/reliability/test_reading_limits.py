"""Reading what a machine cannot hold, in-process: run.json types and sizes, duplicate
columns, non-UTF-8 paths, importers' step columns (the CLI cases are in hostile.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from runlens.errors import RunFormatError
from runlens.io.bounded import bounded_int, bounded_steps, parse_bounded_int
from runlens.io.loader import load_run
from runlens.io.runmeta import derive_status

from ._cli import part, write_run


@pytest.mark.parametrize(("over", "message"), [
    ({"layers": True}, '"layers" is true, expected a list of objects'),
    ({"layers": 12}, '"layers" is 12, expected a list of objects'),
    ({"name": 12}, '"name" is 12, expected a string'),
    ({"pid": "x"}, '"pid" is the string "x", expected an integer'),
    ({"seed": 1.5}, '"seed" is 1.5, expected an integer'),
    ({"error": "boom"}, '"error" is the string "boom", expected an object'),
    ({"attempts": [{"first_step": "0"}]}, '"attempts[0].first_step" is the string "0", expected an integer'),
    ({"layers": [{"name": "a", "shape": [1, "2"]}]}, '"layers[0].shape[1]" is the string "2"'),
])
def test_a_field_of_the_wrong_type_is_one_line(tmp_path, over, message):
    run = write_run(tmp_path / "r", over)
    with pytest.raises(RunFormatError) as err:
        load_run(run)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("key", ["pid", "seed", "flush_every"])
def test_an_int_beyond_64_bits_is_unknown_with_a_warning(tmp_path, key):
    run = load_run(write_run(tmp_path / "r", {key: 2 ** 70, "status": "running", "host": os.uname().nodename}))
    assert run.meta[key] is None
    assert any(f'"{key}"' in w and "64-bit" in w for w in run.warnings)
    derive_status(run.meta)


def test_null_and_missing_fields_are_unknown_not_errors(tmp_path):
    run = write_run(tmp_path / "r", {"layers": None, "pid": None, "config": None})
    meta = json.loads((run / "run.json").read_text())
    del meta["seed"], meta["environment"]
    (run / "run.json").write_text(json.dumps(meta))
    assert load_run(run).warnings == ()


def test_a_part_with_a_duplicated_column_is_skipped(tmp_path):
    run = write_run(tmp_path / "r")
    part(run, "scalars", pa.Table.from_arrays([pa.array([1], pa.int64()), pa.array([0.0]), pa.array([9.0]),
                                               pa.array([9.0])], names=["step", "time", "loss", "loss"]), seq=1)
    loaded = load_run(run)
    assert any("r0-00000001.parquet" in w and "more than once" in w for w in loaded.warnings)
    assert 9.0 not in loaded.column("scalars", "loss")


def test_a_run_directory_whose_name_is_not_utf8_reads_like_its_twin(tmp_path):
    twin = write_run(tmp_path / "twin")
    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff\xfe-run"))
    shutil.copytree(twin, odd)
    a, b = load_run(twin), load_run(odd)
    assert b.warnings == ()
    for table in ("scalars", "evals", "layers"):
        assert getattr(a, table).equals(getattr(b, table))


def test_bounded_integers():
    warnings: list[str] = []
    assert bounded_int(2 ** 63 - 1, "x", warnings) == 2 ** 63 - 1 and not warnings
    assert bounded_int(2 ** 63, "x", warnings) is None and "64-bit" in warnings[-1]
    assert bounded_int(True, "x", warnings) is None
    assert parse_bounded_int(" 12 ", "x") == 12 and parse_bounded_int("9" * 5000, "x") is None
    steps = bounded_steps([0, 1.0, None, 2.0 ** 63, 10 ** 30, -3, 7], "step", warnings)
    assert steps.tolist() == [0, 1, -1, -1, -1, -1, 7] and "2 row(s)" in warnings[-1]
