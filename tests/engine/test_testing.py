"""``runlens.testing``: the contributor's kit holds every built-in detector, and catches broken ones."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from runlens.detectors import REGISTRY, Detector, Interval, Needs
from runlens.diagnosis import Finding
from runlens.errors import UsageError
from runlens.io.loader import load_run
from runlens.io.validate import validate_run
from runlens.testing import build_run, check_detector, odd_runs, run_detector, run_meta
from tests.runs import update_meta, write_run

DOC = """Flags a loss above ``limit``.

What it detects:
    A loss above the limit.
Why it matters:
    It is a test detector.
How it decides:
    Compares each loss with ``limit``.
What to try:
    Nothing.
Parameters:
    limit: the highest loss that is fine.
"""


class _Good(Detector):
    __doc__ = DOC
    code, title, severity = "test_loss_above", "Loss above a limit", "warning"
    needs = Needs(scalars=("loss",), requires=("scalars.loss",))
    constraints = {"limit": Interval(float, 0, None)}

    def __init__(self, *, limit: float = 100.0) -> None:
        self.limit = limit

    def check(self, run, ctx):
        loss = run.column("scalars", "loss")
        above = np.flatnonzero(np.nan_to_num(loss, nan=0.0) > self.limit)
        if above.size:
            yield Finding(self.code, self.severity, self.title, step=int(run.steps("scalars")[above[0]]))


class _Positional(_Good):
    def __init__(self, limit: float = 100.0) -> None:
        self.limit = limit


class _Undocumented(_Good):
    __doc__ = "Flags a loss above a limit."


class _CrashesOnNaN(_Good):
    def check(self, run, ctx):
        loss = run.column("scalars", "loss")
        if np.isnan(loss).any():
            raise ValueError("NaN in the loss")
        yield from ()


class _Noisy(_Good):
    def __init__(self, *, limit: float = 0.0) -> None:
        self.limit = limit


_calls = iter(range(10**6))


class _Random(_Good):
    def check(self, run, ctx):
        if next(_calls) % 2:
            yield Finding(self.code, self.severity, self.title)


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_every_built_in_detector_passes_the_check(code):
    assert check_detector(REGISTRY[code]) == []


@pytest.mark.parametrize(("cls", "expected"), [
    (_Positional, "is not keyword-only"),
    (_Undocumented, "docstring lacks"),
    (_CrashesOnNaN, "crashes on a run with every value NaN"),
    (_Noisy, "on a healthy run"),
    (_Random, "not deterministic"),
])
def test_the_check_names_what_is_broken(cls, expected):
    problems = check_detector(cls)
    assert any(expected in p for p in problems), problems


def test_a_good_detector_passes_and_runs_after_its_dependencies():
    assert check_detector(_Good) == []
    outcome, found = run_detector(_Good(limit=2.0), build_run(loss=[1.0, 3.0, 1.0], steps=[10, 20, 30]))
    assert outcome.state == "ran" and [(f.code, f.step) for f in found] == [("test_loss_above", 20)]


def test_build_run_has_the_format_types_and_its_own_steps():
    run = build_run(loss=[2.0, 1.5], steps=[5, 7], lr=[0.1, 0.1], val_loss=[1.9], val_steps=[7],
                    layers={"grad_norm": np.ones((2, 3))}, layer_steps=[5, 7],
                    events=[{"step": 7, "kind": "user", "message": "m"}])
    assert run.steps("scalars").tolist() == [5, 7] and run.steps("evals").tolist() == [7]
    assert str(run.layers.schema.field("layer").type).startswith("dictionary")
    assert run.layers.num_rows == 6 and [m["name"] for m in run.meta["layers"]] == ["l0.weight", "l1.weight", "l2.weight"]
    assert run.events.column("kind").to_pylist() == ["user"]


def test_build_run_refuses_steps_that_do_not_match():
    with pytest.raises(UsageError, match="steps has 3 values for 2 rows"):
        build_run(loss=[1.0, 2.0], steps=[1, 2, 3])


def test_odd_runs_are_built_without_error():
    assert all(build().status in ("finished", "crashed") for build in odd_runs().values())


def test_build_run_takes_whole_tables_its_own_clock_path_and_warnings():
    ragged = {"step": [0, 0, 10], "layer": ["a.weight", "b.weight", "a.weight"],
              "grad_norm": [1.0, None, 2.0]}
    run = build_run(loss=[2.0, 1.0], steps=[0, 10], val_loss=[1.5], val_steps=[10], t0=100.0, step_time=0.5,
                    tables={"layers": ragged, "events": None}, path="/runs/x", warnings=("part unread",))
    assert run.scalars.column("time").to_pylist() == [100.0, 105.0]
    assert run.evals.column("time").to_pylist() == [105.0]
    assert run.layers.schema.field("grad_norm").type == pa.float32()
    assert run.layers.column("grad_norm").to_pylist() == [1.0, None, 2.0] and run.events is None
    assert (run.path, run.warnings) == ("/runs/x", ("part unread",))


@pytest.mark.parametrize(("tables", "message"), [
    ({"scalars": {"step": [0]}}, "scalars table is given twice"),
    ({"metrics": {"step": [0]}}, "tables has 'metrics', not one of scalars, evals, layers, events"),
])
def test_build_run_refuses_a_table_given_twice_or_unknown(tables, message):
    with pytest.raises(UsageError, match=message):
        build_run(loss=[1.0], tables=tables)


def test_masked_entries_are_nulls_and_arrow_arrays_keep_their_type():
    grad = np.ma.masked_array(np.ones((2, 2)), mask=[[False, True], [False, False]])
    run = build_run(loss=[1.0, 2.0], epoch=pa.array([0.5, 1.0]), layers={"grad_norm": grad})
    assert run.layers.column("grad_norm").to_pylist() == [1.0, None, 1.0, 1.0]
    assert run.scalars.schema.field("epoch").type == pa.float64()
    assert build_run(loss=[1.0, 2.0], epoch=[0, 1]).scalars.schema.field("epoch").type == pa.int64()


def test_run_meta_keys_replace_the_defaults_and_add_new_ones():
    meta = run_meta("r", status="crashed", layers=["a.weight"], host="gpu-7", ablation="b")
    assert (meta["host"], meta["ablation"], meta["status"]) == ("gpu-7", "b", "crashed")
    assert meta["layers"][0]["module"] == "a"
    assert run_meta("r")["host"] == "synthetic"


def test_the_tests_writer_round_trips_a_built_run_through_the_loader(tmp_path):
    run = build_run(loss=[2.0, 1.5, np.nan], lr=[0.1] * 3, val_loss=[1.9], val_steps=[2],
                    layers={"grad_norm": np.ones((3, 2)), "weight_norm": np.full((3, 2), 5.0)},
                    events=[{"step": 1, "kind": "user", "message": "m"}],
                    meta=run_meta("r", layers=["l0.weight", "l1.weight"],
                                  ended_at="2026-01-01T01:00:00+00:00", environment={"python": "3.11"}))
    path = write_run(tmp_path / "r", run)
    assert validate_run(path).ok, validate_run(path).violations
    back = load_run(path)
    for table in ("scalars", "evals", "layers", "events"):
        assert getattr(back, table).to_pydict().keys() == getattr(run, table).to_pydict().keys()
    loss = back.column("scalars", "loss")
    assert loss[:2].tolist() == [2.0, 1.5] and np.isnan(loss[2])
    assert back.meta == run.meta


def test_the_tests_writer_lays_out_ranks_and_sequences(tmp_path):
    cols = {"step": [0, 1], "time": [0.0, 1.0], "loss": [2.0, 1.0]}
    path = write_run(tmp_path / "ddp", {"scalars": [(0, 0, cols), (1, 0, cols)], "evals": None,
                                        "layers": [{"step": [0], "layer": ["a"], "grad_norm": [1.0]}] * 2},
                     rank=3)
    def parts(table: str) -> list[str]:
        return sorted(p.name for p in (path / table).iterdir())

    assert parts("scalars") == ["r0-00000000.parquet", "r1-00000000.parquet"]
    assert parts("layers") == ["r3-00000000.parquet", "r3-00000001.parquet"]
    assert not (path / "evals").exists() and load_run(path).meta["name"] == "ddp"


def test_the_tests_writer_updates_a_written_run_json_and_leaves_the_parts(tmp_path):
    path = write_run(tmp_path / "r", build_run(loss=[2.0, 1.0], meta=run_meta("r", config={"lr": 0.1})))
    part = path / "scalars" / "r0-00000000.parquet"
    before = part.read_bytes()
    update_meta(path, config={"lr": 10}, note="rerun")
    back = load_run(path)
    assert back.meta["config"] == {"lr": 10} and back.meta["note"] == "rerun" and back.meta["name"] == "r"
    assert list(back.meta)[:len(run_meta("r"))] == list(run_meta("r"))  # keys keep their places
    assert part.read_bytes() == before and back.column("scalars", "loss").tolist() == [2.0, 1.0]
