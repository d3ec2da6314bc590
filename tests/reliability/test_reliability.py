"""The CI-sized reliability campaign (the long one: ``python -m tests.reliability``).

Real training processes are killed and starved of disk; the engine is fed
broken and hostile input. Every "must" figure of docs/reliability.md is an
assertion here.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import faults, fuzz, hostile, hostile_text, kill, read_while_write, resources

pytestmark = pytest.mark.reliability


def test_sigkill_at_random_moments_loses_nothing_flushed(tmp_path):
    results = kill.campaign(tmp_path, trials=21, seed=1)
    bad = [r for r in results if not (r.readable and r.format_ok and r.run_json_valid)
           or r.unreadable_parts or r.rows_lost_beyond_buffer]
    assert not bad, bad
    # most kills land after training started (a few in the very first run.json write)
    assert sum(r.handed > 0 for r in results) >= len(results) // 2
    assert len({r.flush_every for r in results}) >= 3, "the campaign must vary the flush policy"


@pytest.mark.parametrize("scenario", ["disk_full", "deleted", "slow"])
def test_faults_never_stop_training(tmp_path, scenario):
    result = getattr(faults, scenario)(tmp_path, steps=200)
    assert result.exit_code == 0, result.detail
    assert result.steps_completed == result.steps
    if scenario == "disk_full":
        assert result.warnings >= 1, "a failing write must be reported"
    if scenario == "deleted":
        assert result.warnings >= 1, "a vanished run directory must be reported"
        # the rows recorded after the deletion are kept (those before went with the directory)
        assert result.rows_on_disk >= result.steps - result.steps // 3 - 10
    if scenario == "disk_full":
        assert result.rows_on_disk > 0, "what fitted before the disk filled is kept"
    if scenario == "slow":
        assert result.rows_on_disk == result.steps


def test_read_only_filesystem_then_writable_again(tmp_path):
    result = faults.read_only(tmp_path, steps=300)
    if result is None:
        pytest.skip("needs root and a remountable tmpfs to make a filesystem read-only")
    assert result.exit_code == 0, result.detail
    assert result.steps_completed == result.steps
    assert result.warnings >= 1
    # rows buffered while read-only are written once the filesystem is writable again
    assert result.rows_on_disk == result.steps


def test_reading_a_run_while_it_is_written(tmp_path):
    result = read_while_write.campaign(tmp_path, seconds=6.0)
    assert result.reads >= 5
    assert result.tracebacks == 0, result.detail
    assert result.half_part_reads == 0
    assert "running" in result.statuses_seen


def test_broken_and_hostile_input_never_gives_a_traceback(tmp_path):
    figures = fuzz.campaign(tmp_path, seed=3, rounds=1)
    fuzz.audit_tree_case(tmp_path, figures)
    assert figures.cases > 50
    assert figures.tracebacks == 0, figures.examples
    assert figures.unescaped == 0, figures.examples
    assert figures.renders > 0 and figures.exit_2 > 0


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=20)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta_extra=st.dictionaries(st.sampled_from(["status", "layers", "name", "config", "error", "attempts",
                                                    "heartbeat_at", "flush_seconds", "pid", "host", "x"]),
                                  _json, max_size=5),
       steps=st.lists(st.integers(-5, 50), max_size=40),
       losses=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=40))
def test_generated_metadata_and_tables_never_crash(tmp_path_factory, meta_extra, steps, losses):
    run = tmp_path_factory.mktemp("gen")
    meta = {"format": "runlens-run", "format_version": 1, "run_id": "x", "name": "g", "status": "finished",
            "started_at": None, "ended_at": None, "heartbeat_at": None, "flush_every": 1, "flush_seconds": 1,
            "host": "h", "pid": 1, "config": {}, "seed": None, "environment": {"python": "3"},
            "layers": [], "attempts": [], "error": None, **meta_extra}
    (run / "run.json").write_text(json.dumps(meta, default=str))
    n = min(len(steps), len(losses))
    (run / "scalars").mkdir()
    pq.write_table(pa.table({"step": pa.array(steps[:n], pa.int64()), "time": pa.array([0.0] * n),
                             "loss": pa.array(losses[:n], pa.float64())}), run / "scalars" / "r0-00000000.parquet")
    figures = fuzz.FuzzFigures()
    fuzz.check_case(run, figures, "generated")
    assert figures.tracebacks == 0, figures.examples
    assert figures.unescaped == 0, figures.examples


def test_recorder_memory_stays_flat(tmp_path):
    result = resources.recorder_memory(tmp_path, steps=10_000)
    assert result.growth_mb < 8, result


def test_audit_of_many_runs_does_not_exhaust_file_handles(tmp_path):
    result = resources.audit_handles(tmp_path, n=600, fd_limit=128)
    assert result.exit_code == 0, result.detail
    assert result.rows == 600



# -- round 2: hostile input through the real CLI, in subprocesses (tests/reliability/hostile*.py) --

def _figures(tmp_path, *campaigns) -> hostile.Figures:
    """A fresh round-2 tally with each ``campaign(tmp_path, figures)`` run on it, in turn."""
    figures = hostile.Figures()
    for campaign in campaigns:
        campaign(tmp_path, figures)
    return figures


def _assert_clean(figures):
    assert figures.tracebacks == 0, figures.examples
    assert figures.injections == 0, figures.examples
    assert figures.rows_lost_or_duplicated == 0, figures.examples
    assert figures.writes_outside == 0, figures.examples
    assert figures.cases > 0


def test_numbers_too_big_and_fields_of_the_wrong_type(tmp_path):
    figures = _figures(tmp_path, hostile.numbers_and_types, hostile.imported_steps)
    _assert_clean(figures)
    assert figures.one_line_errors >= 2  # `"layers": true` and `"layers": 12` are one line, exit 2


def test_run_directory_whose_name_is_not_utf8(tmp_path):
    figures = _figures(tmp_path, hostile.non_utf8_path)
    _assert_clean(figures)


def test_output_that_cannot_be_written(tmp_path):
    figures = _figures(tmp_path, hostile.output_paths)
    _assert_clean(figures)
    assert figures.one_line_errors >= 9, figures.examples
    if figures.skipped:
        pytest.skip("; ".join(figures.skipped))


def test_output_on_a_full_disk(tmp_path):
    figures = hostile.Figures()
    if not hostile.full_disk(tmp_path, figures):
        pytest.skip("; ".join(figures.skipped))
    _assert_clean(figures)
    assert figures.one_line_errors == 2


def test_every_output_format_escaped_for_its_reader(tmp_path):
    figures = _figures(tmp_path, hostile_text.injections)
    _assert_clean(figures)


def test_audit_lists_runs_it_cannot_read(tmp_path):
    figures = _figures(tmp_path, hostile_text.omission)
    if figures.skipped:
        pytest.skip("; ".join(figures.skipped))
    _assert_clean(figures)
