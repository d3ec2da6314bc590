"""load_run: union of columns, resume dedup, ranks, unreadable parts, versions, status, projection."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from engine_runs import live_meta, meta, write_healthy, write_part, write_run

from runlens import load_run
from runlens.errors import RunFormatError, UnsupportedVersionError


def _scalars(steps, loss=None, **extra):
    steps = np.asarray(steps, dtype=np.int64)
    cols = {"step": steps, "time": steps * 1.0,
            "loss": np.asarray(loss if loss is not None else steps * 0.1, dtype=float)}
    cols.update(extra)
    return cols


def _col(run, table, name):
    return run.__getattribute__(table).column(name).to_pylist()


def test_union_of_columns_fills_missing_with_null(tmp_path):
    write_run(tmp_path, scalars=[_scalars([0, 1], acc=np.array([0.5, 0.6])),
                                 _scalars([2, 3], tok=np.array([7, 8]))])
    run = load_run(tmp_path)
    assert _col(run, "scalars", "acc") == [0.5, 0.6, None, None]
    assert _col(run, "scalars", "tok") == [None, None, 7, 8]
    assert run.warnings == ()


def test_user_column_int_in_one_part_float_in_another_becomes_float(tmp_path):
    write_run(tmp_path, scalars=[_scalars([0], acc=np.array([1])), _scalars([1], acc=np.array([0.5]))])
    run = load_run(tmp_path)
    assert run.scalars.schema.field("acc").type == pa.float64()
    assert _col(run, "scalars", "acc") == [1.0, 0.5]


def test_resumed_run_keeps_rows_of_the_highest_seq(tmp_path):
    # Crash at step 5, resumed from the checkpoint at step 3: steps 3..4 are written twice.
    write_run(tmp_path, scalars=[(0, 0, _scalars([0, 1, 2, 3, 4], loss=[9, 9, 9, 1, 1])),
                                 (0, 1, _scalars([3, 4, 5], loss=[2, 2, 2]))])
    run = load_run(tmp_path)
    assert _col(run, "scalars", "step") == [0, 1, 2, 3, 4, 5]
    assert _col(run, "scalars", "loss") == [9, 9, 9, 2, 2, 2]


def test_seq_order_not_file_listing_order_decides(tmp_path):
    write_run(tmp_path, scalars=[(0, 10, _scalars([1], loss=[10.0])), (0, 2, _scalars([1], loss=[2.0]))])
    assert _col(load_run(tmp_path), "scalars", "loss") == [10.0]


def test_duplicate_steps_in_one_part_keep_the_last_row(tmp_path):
    write_run(tmp_path, scalars=_scalars([0, 1, 1, 2], loss=[0, 1, 5, 2]))
    run = load_run(tmp_path)
    assert _col(run, "scalars", "loss") == [0, 5, 2]


def test_steps_going_backwards_are_sorted(tmp_path):
    write_run(tmp_path, scalars=_scalars([5, 3, 4, 0], loss=[5, 3, 4, 0]))
    assert _col(load_run(tmp_path), "scalars", "loss") == [0, 3, 4, 5]


def test_layers_dedup_by_step_and_layer_sorted_by_depth(tmp_path):
    names = ["a", "b", "c"]
    part0 = {"step": [0, 0, 0, 1, 1], "layer": ["c", "a", "b", "a", "c"],
             "grad_norm": [3, 1, 2, 1, 3], "weight_norm": [1] * 5}
    part1 = {"step": [1], "layer": ["a"], "grad_norm": [9], "weight_norm": [1]}
    write_run(tmp_path, run_meta=meta(layers=names), layers=[part0, part1])
    run = load_run(tmp_path)
    assert _col(run, "layers", "layer") == ["a", "b", "c", "a", "c"]
    assert _col(run, "layers", "grad_norm") == [1, 2, 3, 9, 3]
    assert pa.types.is_dictionary(run.layers.schema.field("layer").type)


def test_layers_missing_in_some_steps_and_unknown_names_load(tmp_path):
    part = {"step": [0, 0, 1, 2], "layer": ["a", "zz", "a", "b"],
            "grad_norm": [1, 2, 3, 4], "weight_norm": [1] * 4}
    write_run(tmp_path, run_meta=meta(layers=["a", "b"]), layers=part)
    run = load_run(tmp_path)
    assert _col(run, "layers", "layer") == ["a", "zz", "a", "b"]
    m = run.layer_matrix("grad_norm")
    assert m.present.sum() == 4 and m.values.shape == (3, 3)


def test_scalars_come_from_the_lowest_rank_layers_and_events_from_all(tmp_path):
    write_run(tmp_path, run_meta=meta(layers=["a", "b"]),
              scalars=[(0, 0, _scalars([0, 1], loss=[1, 1])), (1, 0, _scalars([0, 1], loss=[7, 7]))],
              layers=[(0, 0, {"step": [0], "layer": ["a"], "grad_norm": [1.0], "weight_norm": [1.0]}),
                      (1, 0, {"step": [0, 0], "layer": ["a", "b"], "grad_norm": [5.0, 2.0],
                              "weight_norm": [1.0, 1.0]})],
              events=[(r, 0, {"step": [1], "time": [1.0], "kind": ["user"], "layer": [None],
                              "value": [None], "message": [f"rank {r}"]}) for r in (0, 1)])
    run = load_run(tmp_path)
    assert _col(run, "scalars", "loss") == [1, 1]
    assert _col(run, "layers", "grad_norm") == [1.0, 2.0]  # rank 0 wins "a", rank 1 alone has "b"
    assert sorted(_col(run, "events", "message")) == ["rank 0", "rank 1"]


def test_events_are_never_deduplicated(tmp_path):
    ev = {"step": [3, 1, 1], "time": [0.0] * 3, "kind": ["user"] * 3, "layer": [None] * 3,
          "value": [1.0, 2.0, 3.0], "message": ["x", "y", "z"]}
    write_run(tmp_path, events=ev)
    assert _col(load_run(tmp_path), "events", "message") == ["y", "z", "x"]


@pytest.mark.parametrize("content", [b"", b"PAR1 truncated", b"not parquet at all"])
def test_unreadable_part_is_skipped_with_a_warning(tmp_path, content):
    write_run(tmp_path, scalars=[_scalars([0, 1])])
    (tmp_path / "scalars" / "r0-00000001.parquet").write_bytes(content)
    run = load_run(tmp_path)
    assert _col(run, "scalars", "step") == [0, 1]
    assert len(run.warnings) == 1 and "r0-00000001.parquet" in run.warnings[0]


def test_truncated_real_part_is_skipped(tmp_path):
    write_run(tmp_path, scalars=[_scalars([0, 1]), _scalars(np.arange(2, 500))])
    path = tmp_path / "scalars" / "r0-00000001.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    run = load_run(tmp_path)
    assert _col(run, "scalars", "step") == [0, 1]
    assert "unreadable" in run.warnings[0]


def test_wrong_schema_parts_are_skipped(tmp_path):
    write_run(tmp_path, scalars=[_scalars([0])])
    # a layers part dropped into scalars/, and a loss of strings
    write_part(tmp_path, "scalars", pa.table({"step": [1], "layer": ["a"], "grad_norm": [1.0]}), seq=1)
    write_part(tmp_path, "scalars", pa.table({"step": pa.array([2], pa.int64()), "time": [2.0],
                                              "loss": ["high"]}), seq=2)
    run = load_run(tmp_path)
    assert _col(run, "scalars", "step") == [0]
    assert len(run.warnings) == 2
    assert "lacks required column" in run.warnings[0]


def test_dot_files_and_unknown_files_are_ignored(tmp_path):
    write_run(tmp_path, scalars=[_scalars([0])])
    (tmp_path / "scalars" / ".tmp-r0-00000001.parquet").write_bytes(b"half written")
    (tmp_path / "scalars" / "notes.txt").write_text("hi")
    (tmp_path / "checkpoints").mkdir()
    run = load_run(tmp_path)
    assert run.scalars.num_rows == 1 and run.warnings == ()


def test_only_run_json_loads_with_no_tables(tmp_path):
    write_run(tmp_path)
    run = load_run(tmp_path)
    assert (run.scalars, run.evals, run.layers, run.events) == (None, None, None, None)


def test_unknown_format_version_is_refused(tmp_path):
    write_run(tmp_path, run_meta=meta(format_version=2))
    with pytest.raises(UnsupportedVersionError, match="format_version 2 is not supported"):
        load_run(tmp_path)


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", json.dumps({"format": "other"}),
                                  json.dumps({"format": "runlens-run"})])
def test_invalid_run_json_is_one_line_format_error(tmp_path, text):
    (tmp_path / "run.json").write_text(text)  # hand-made: a run.json off the format on purpose
    with pytest.raises(RunFormatError) as info:
        load_run(tmp_path)
    assert "\n" not in str(info.value)


def test_not_a_run_directory(tmp_path):
    with pytest.raises(RunFormatError, match="not a run directory"):
        load_run(tmp_path)
    with pytest.raises(RunFormatError, match="no such file"):
        load_run(tmp_path / "missing")


def test_unknown_keys_and_z_timestamps_are_accepted(tmp_path):
    m = meta(extra_key={"nested": [1]}, started_at="2026-01-01T00:00:00Z")
    m["environment"]["weird"] = {"x": None}
    write_run(tmp_path, run_meta=m, scalars=_scalars([0]))
    assert load_run(tmp_path).status == "finished"


def test_stale_heartbeat_means_killed(tmp_path):
    write_run(tmp_path, run_meta=meta(status="running"), scalars=_scalars([0]))
    assert load_run(tmp_path).status == "killed"


def test_live_run_stays_running(tmp_path):
    write_run(tmp_path, run_meta=live_meta(), scalars=_scalars([0]))
    assert load_run(tmp_path).status == "running"


def test_fresh_heartbeat_but_pid_gone_on_this_host_means_killed(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    write_run(tmp_path, run_meta=live_meta() | {"pid": proc.pid}, scalars=_scalars([0]))
    assert load_run(tmp_path).status == "killed"


def test_fresh_heartbeat_on_another_host_stays_running(tmp_path):
    write_run(tmp_path, run_meta=live_meta() | {"host": "some-other-host", "pid": 2 ** 22 + 7})
    assert load_run(tmp_path).status == "running"


def test_projection_reads_only_the_named_columns_and_tables(tmp_path):
    write_healthy(tmp_path, n=50)
    run = load_run(tmp_path, columns={"scalars": ["loss"], "layers": ["grad_norm"]})
    assert run.scalars.column_names == ["step", "loss"]
    assert run.layers.column_names == ["step", "layer", "grad_norm"]
    assert run.evals is None and run.events is None
    full = load_run(tmp_path)
    assert "weight_norm" in full.layers.column_names and full.evals is not None


def test_projection_on_a_column_that_does_not_exist(tmp_path):
    write_run(tmp_path, scalars=_scalars([0, 1]))
    run = load_run(tmp_path, columns={"scalars": ["loss", "nope"]})
    assert run.scalars.column_names == ["step", "loss"]


def test_nan_inf_and_all_null_columns_load(tmp_path):
    write_run(tmp_path, scalars=_scalars([0, 1, 2], loss=[np.nan, np.inf, -np.inf],
                                         grad_norm=pa.array([None, None, None], pa.float64())))
    run = load_run(tmp_path)
    assert np.isnan(run.column("scalars", "loss")[0]) and np.isinf(run.column("scalars", "loss")[1])
    assert np.isnan(run.column("scalars", "grad_norm")).all()


def test_ten_thousand_layers(tmp_path):
    names = [f"l{i}" for i in range(10_000)]
    layers = {"step": np.repeat([0, 1], 10_000), "layer": names * 2,
              "grad_norm": np.ones(20_000), "weight_norm": np.ones(20_000)}
    write_run(tmp_path, run_meta=meta(layers=names), layers=layers)
    run = load_run(tmp_path)
    assert run.layers.num_rows == 20_000
    assert run.layer_matrix("grad_norm").values.shape == (2, 10_000)


def test_path_is_kept_as_given(tmp_path):
    write_run(tmp_path / "r", scalars=_scalars([0]))
    os.chdir(tmp_path)
    assert load_run("r").path == "r"


def test_layers_from_parts_with_different_dictionaries_sort_by_depth(tmp_path):
    p0 = {"step": [0, 0], "layer": ["c", "a"], "grad_norm": [3.0, 1.0], "weight_norm": [1.0, 1.0]}
    p1 = {"step": [0, 1], "layer": ["b", "zz"], "grad_norm": [2.0, 4.0], "weight_norm": [1.0, 1.0]}
    write_run(tmp_path, run_meta=meta(layers=["a", "b", "c"]), layers=[p0, p1])
    run = load_run(tmp_path)
    assert _col(run, "layers", "layer") == ["a", "b", "c", "zz"]
    assert _col(run, "layers", "grad_norm") == [1.0, 2.0, 3.0, 4.0]


def test_a_log_another_tool_wrote_goes_through_the_importers(tmp_path):
    log = tmp_path / "train_log.csv"
    log.write_text("step,loss\n" + "".join(f"{i},{1.0 / (i + 1)}\n" for i in range(20)))
    from runlens.io.importers import detect_kind

    # A regression in detection must fail here, not skip; the table reader names its kind "table"
    # (it took over the csv kind in 9309072).
    assert detect_kind(log) in ("csv", "table")
    run = load_run(log)
    assert run.path == str(log) and run.name == "train_log"
    assert run.scalars.num_rows == 20
    from runlens import analyze

    # nothing of the temporary import folder leaks into the output
    assert analyze(log).to_dict() == analyze(log).to_dict()


def test_string_columns_of_other_string_types_are_accepted(tmp_path):
    ev = pa.table({"step": pa.array([1, 2], pa.int64()), "time": [0.0, 1.0],
                   "kind": pa.array(["user", "nonfinite_grad"], pa.large_string()),
                   "layer": pa.array([None, None], pa.null()), "value": pa.array([None, 2.0]),
                   "message": pa.array(["a", "b"]).dictionary_encode()})
    lay = pa.table({"step": pa.array([0], pa.int32()), "layer": pa.array(["a"], pa.large_string()),
                    "grad_norm": pa.array([1.0], pa.float64()), "weight_norm": pa.array([1], pa.int64())})
    write_run(tmp_path, run_meta=meta(layers=["a"]), events=ev, layers=lay)
    run = load_run(tmp_path)
    assert run.warnings == ()
    assert _col(run, "events", "kind") == ["user", "nonfinite_grad"]
    assert run.layers.schema.field("grad_norm").type == pa.float32()
    assert run.layers.schema.field("step").type == pa.int64()


def test_projection_on_an_unknown_table_is_a_usage_error(tmp_path):
    from runlens.errors import UsageError

    write_run(tmp_path, scalars=_scalars([0]))
    with pytest.raises(UsageError, match="unknown table"):
        load_run(tmp_path, columns={"scalar": ["loss"]})


def test_the_run_json_path_itself_is_accepted(tmp_path):
    write_run(tmp_path / "r", scalars=_scalars([0, 1]))
    run = load_run(tmp_path / "r" / "run.json")
    assert run.scalars.num_rows == 2 and run.name == "r"


# -- round 3: concurrent compaction, ranks that cannot be read, bounds ------------

def test_a_compaction_between_listing_and_reading_reads_the_table_again(tmp_path, monkeypatch):
    from recorders import _parts
    from runlens.io import loader

    write_run(tmp_path, scalars=[_scalars([0, 1]), _scalars([2, 3]), _scalars([4, 5])])
    listed = loader._parts
    calls = []

    def list_then_compact(root, table, warnings, strict=False):
        parts = listed(root, table, warnings, strict)
        if table == "scalars" and not calls:
            # The writer compacts right after the reader listed: merged part in, old parts out.
            _parts.compact(root / "scalars", "scalars", 0, 3)
        calls.append(table)
        return parts

    monkeypatch.setattr(loader, "_parts", list_then_compact)
    run = load_run(tmp_path)
    assert run.steps("scalars").tolist() == [0, 1, 2, 3, 4, 5] and run.warnings == ()
    assert calls.count("scalars") == 2  # the first listing went stale, the second was read


def test_the_curve_is_the_lowest_rank_whose_parts_can_be_read(tmp_path):
    write_run(tmp_path, scalars=[(1, 0, _scalars([0, 1, 2], loss=[9.0, 9.0, 9.0]))])
    (tmp_path / "scalars" / "r0-00000000.parquet").write_bytes(b"PAR1 not really")
    run = load_run(tmp_path)
    assert run.column("scalars", "loss").tolist() == [9.0, 9.0, 9.0]
    assert any("rank 1's" in w for w in run.warnings)


def test_special_files_are_never_opened(tmp_path):
    write_healthy(tmp_path)
    os.mkfifo(tmp_path / "scalars" / "r0-00000009.parquet")  # reading it would block forever
    assert load_run(tmp_path).has("scalars")
    (tmp_path / "run.json").unlink()
    os.mkfifo(tmp_path / "run.json")
    with pytest.raises(RunFormatError, match="FIFO"):
        load_run(tmp_path)


def test_parts_past_the_row_and_column_ceilings_are_skipped(tmp_path, monkeypatch):
    from runlens.io import loader

    write_run(tmp_path, scalars=[_scalars([0, 1]), _scalars(range(2, 12)),
                                 _scalars([12], **{f"c{i}": np.array([1.0]) for i in range(9)})])
    monkeypatch.setattr(loader, "MAX_PART_ROWS", 5)
    monkeypatch.setattr(loader, "MAX_PART_COLUMNS", 10)
    run = load_run(tmp_path)
    assert run.steps("scalars").tolist() == [0, 1]
    assert any("10 rows, more than the 5" in w for w in run.warnings)
    assert any("12 columns, more than the 10" in w for w in run.warnings)


def _many_row_groups(path, rows, group):
    import pyarrow.parquet as pq

    table = pa.table({"step": pa.array(np.arange(rows, dtype=np.int64)), "time": pa.array(np.zeros(rows)),
                      "loss": pa.array(np.ones(rows))})
    # hand-made: a part in many row groups (its footer is then falsified), which tests.runs does not write
    pq.write_table(table, path, row_group_size=group)


def test_a_footer_understating_its_rows_cannot_pass_the_row_ceiling(tmp_path, monkeypatch):
    from runlens.io import loader
    from tests.reliability.parquet_lies import understate_rows

    write_run(tmp_path, scalars=[_scalars([0, 1])])
    lying = tmp_path / "scalars" / "r0-00000001.parquet"
    _many_row_groups(lying, 3001, 1000)
    assert understate_rows(lying, 7) == 3001
    monkeypatch.setattr(loader, "MAX_PART_ROWS", 2000)
    # Decoding counts the rows the row groups hold: the footer's 7 is not believed.
    run = load_run(tmp_path)
    assert run.steps("scalars").tolist() == [0, 1]
    assert [w for w in run.warnings if "r0-00000001" in w] == [
        "skipped scalars/r0-00000001.parquet: 3,001 rows, more than the 2,000 decoded from one part"]
    monkeypatch.setattr(loader, "MAX_PART_ROWS", 5000)
    assert load_run(tmp_path).steps("scalars").tolist() == list(range(3001))


def test_rows_are_counted_as_batches_are_decoded(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from recorders import _merge

    path = tmp_path / "p.parquet"
    _many_row_groups(path, 5000, 5000)  # one row group: a footer check alone would decode it whole
    seen = []
    real = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        for batch in real(self, *args, **kwargs):
            seen.append(batch.num_rows)
            yield batch
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    monkeypatch.setattr(_merge, "BATCH_CELLS", 3 * 1024)  # 3 columns: batches of 1,024 rows
    with pq.ParquetFile(path) as pf, pytest.raises(_merge.TooManyRows, match="more than 2,500 rows decoded"):
        _merge._decode_counting(pf, None, 2500)
    # Refused one batch past the ceiling, not after decoding the part whole.
    assert seen == [1024, 1024, 1024]
    with pq.ParquetFile(path) as pf:
        assert _merge._decode_counting(pf, ["step"], 5000).column("step").to_pylist() == list(range(5000))
