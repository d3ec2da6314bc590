"""RunWriter: exact schemas, resume, compaction, heartbeat, failing writes."""

from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from recorder_testutil import meta, parts, read_table

from recorders import _parts
from recorders.format import FIELDS
from recorders.writer import RunWriter, UnsupportedRunError

LAYERS = [{"name": n, "index": i, "module": n.split(".")[0], "kind": "Linear", "shape": [2], "numel": 2}
          for i, n in enumerate(["a.weight", "a.bias", "b.weight"])]
NAMES = tuple(x["name"] for x in LAYERS)


def test_all_null_columns_keep_the_spec_types(tmp_path, check_runlog):
    w = RunWriter(tmp_path / "r", heartbeat=False, compact_on_close=False)
    w.set_layers(LAYERS)
    for s in range(3):
        w.add_scalars(s, 1.0, lr=None, grad_norm=None, epoch=None, loss_scale=None, step_skipped=None,
                      acc=None)
        w.add_layers(s, NAMES, None, np.ones(3))
        w.add_event(s, "user", "hello")
        w.add_eval(s, 0.5, val_acc=None)
    w.close()
    check_runlog(tmp_path / "r")
    for table in ("scalars", "layers", "events", "evals"):
        schema = pq.read_schema(parts(tmp_path / "r", table)[0][2])
        for name in schema.names:
            if name in FIELDS[table]:
                assert schema.field(name).type == FIELDS[table][name], (table, name)
    scalars = pq.read_table(parts(tmp_path / "r", "scalars")[0][2])
    assert scalars.schema.field("acc").type == pa.float64()
    assert scalars.column("grad_norm").null_count == 3
    layers = pq.read_table(parts(tmp_path / "r", "layers")[0][2])
    assert set(layers.schema.names) == set(FIELDS["layers"])  # optional columns present, typed, null
    assert layers.column("update_norm").null_count == 9


def test_masked_entries_are_null_and_nan_stays_nan(tmp_path, check_runlog):
    w = RunWriter(tmp_path / "r", heartbeat=False)
    w.set_layers(LAYERS)
    grad = np.ma.masked_array([1.0, np.nan, 3.0], mask=[False, False, True])
    w.add_layers(0, NAMES, grad, np.ones(3), nonfinite=np.ma.masked_array([0, 4, 0], mask=[0, 0, 1]))
    w.close()
    check_runlog(tmp_path / "r")
    t = read_table(tmp_path / "r", "layers")
    rows = {r["layer"]: r for r in t.to_pylist()}
    assert rows["a.weight"]["grad_norm"] == 1.0 and np.isnan(rows["a.bias"]["grad_norm"])
    assert rows["b.weight"]["grad_norm"] is None
    assert [rows[n]["nonfinite"] for n in NAMES] == [0, 4, None]


def test_nan_config_is_written_as_null_and_user_ints_widen(tmp_path, check_runlog):
    w = RunWriter(tmp_path / "r", config={"lr": float("nan"), "nested": {"x": float("inf")}, "ok": 1},
                  heartbeat=False, flush_every=2)
    for s in range(4):
        w.add_scalars(s, 1.0, tokens=s if s < 2 else s + 0.5, flag=np.bool_(True))
    w.close()
    check_runlog(tmp_path / "r")
    m = meta(tmp_path / "r")
    assert m["config"] == {"lr": None, "nested": {"x": None}, "ok": 1}
    t = read_table(tmp_path / "r", "scalars")
    assert t.column("tokens").to_pylist() == [0, 1, 2.5, 3.5]
    assert t.column("flag").to_pylist() == [1, 1, 1, 1]


def test_resume_continues_seq_and_keeps_the_previous_outcome(tmp_path, check_runlog):
    run = tmp_path / "r"
    w = RunWriter(run, heartbeat=False, flush_every=2, compact_on_close=False, name="exp")
    for s in range(6):
        w.add_scalars(s, float(s))
    error = {"type": "RuntimeError", "message": "x", "traceback": "tb", "step": 6}
    w.close("crashed", error)
    seqs_before = [seq for seq, _, _ in parts(run, "scalars")]
    w = RunWriter(run, heartbeat=False, flush_every=2, compact_on_close=False)
    assert w.last_step == 5
    m = meta(run)
    assert m["status"] == "running" and m["error"] is None and m["name"] == "exp"
    assert m["attempts"][0]["status"] == "crashed" and m["attempts"][0]["error"] == error
    for s in range(4, 8):
        w.add_scalars(s, 100.0 + s)
    w.close()
    check_runlog(run)
    seqs_after = [seq for seq, _, _ in parts(run, "scalars")]
    assert min(set(seqs_after) - set(seqs_before)) == max(seqs_before) + 1
    t = read_table(run, "scalars")
    assert t.column("loss").to_pylist() == [0, 1, 2, 3, 104, 105, 106, 107]
    assert [a["first_step"] for a in meta(run)["attempts"]] == [0, 4]


def test_unknown_format_version_is_refused(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"format": "runlens-run", "format_version": 2}))
    with pytest.raises(UnsupportedRunError, match="format_version 2"):
        RunWriter(tmp_path, heartbeat=False)


@pytest.mark.parametrize("crash_before_removal", [False, True])
def test_compaction_reads_the_same_even_if_interrupted(tmp_path, monkeypatch, check_runlog,
                                                      crash_before_removal):
    run = tmp_path / "r"
    w = RunWriter(run, heartbeat=False, flush_every=3, compact_on_close=False)
    w.set_layers(LAYERS)
    for s in range(10):
        w.add_scalars(s, float(s), acc=s)
        w.add_layers(s, NAMES, np.full(3, s, float), np.ones(3))
    w.close()
    w = RunWriter(run, heartbeat=False, flush_every=3, start_step=5)
    for s in range(5, 12):
        w.add_scalars(s, 100.0 + s, acc=0.5)
        w.add_layers(s, NAMES, np.full(3, 100 + s, float), np.ones(3))
    w.flush()
    expected = {t: read_table(run, t).to_pydict() for t in ("scalars", "layers")}
    n_parts = len(parts(run, "scalars"))
    if crash_before_removal:
        def crash(path):
            raise OSError("simulated crash between merge and removal")
        monkeypatch.setattr(_parts.os, "remove", crash)
        with pytest.warns(RuntimeWarning, match="compacting"):
            w.close()
    else:
        w.close()
    check_runlog(run)
    for table in ("scalars", "layers"):
        got = read_table(run, table).to_pydict()
        assert {k: v for k, v in got.items() if k != "_seq"} == \
            {k: v for k, v in expected[table].items() if k != "_seq"}
    if not crash_before_removal:
        assert len(parts(run, "scalars")) == 1 < n_parts


def test_rank_above_zero_keeps_its_own_metadata_file(tmp_path, check_runlog):
    run = tmp_path / "r"
    w0 = RunWriter(run, rank=0, world_size=2, heartbeat=False)
    w1 = RunWriter(run, rank=1, world_size=2, heartbeat=False)
    for s in range(3):
        w0.add_scalars(s, 1.0)
        w1.add_scalars(s, 2.0)
    w1.close()
    w0.close()
    check_runlog(run)
    assert meta(run)["environment"]["rank"] == 0
    assert meta(run, "run-r1.json")["environment"]["rank"] == 1
    assert {(r, p.name[:2]) for _, r, p in parts(run, "scalars")} == {(0, "r0"), (1, "r1")}


def test_heartbeat_is_refreshed_without_any_rows(tmp_path, check_runlog):
    w = RunWriter(tmp_path / "r", flush_seconds=0.05)
    first = meta(tmp_path / "r")["heartbeat_at"]
    deadline = time.monotonic() + 20
    while meta(tmp_path / "r")["heartbeat_at"] == first:
        assert time.monotonic() < deadline, "heartbeat never refreshed"
        time.sleep(0.05)
    w.close()
    check_runlog(tmp_path / "r")


def test_rows_that_fail_to_write_are_kept_and_written_later(tmp_path, monkeypatch, check_runlog):
    real = _parts.write_part
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(_parts, "write_part", flaky)
    w = RunWriter(tmp_path / "r", heartbeat=False, flush_every=2)
    with pytest.warns(RuntimeWarning, match="No space left") as record:
        for s in range(8):
            w.add_scalars(s, float(s))
        w.close()
    assert len([r for r in record if "No space" in str(r.message)]) == 1
    assert len(w.warnings) == 1
    check_runlog(tmp_path / "r")
    assert read_table(tmp_path / "r", "scalars").column("step").to_pylist() == list(range(8))
    messages = read_table(tmp_path / "r", "events").column("message").to_pylist()
    assert any("written late" in m for m in messages)


def test_event_kind_is_checked(tmp_path, check_runlog):
    w = RunWriter(tmp_path / "r", heartbeat=False)
    with pytest.raises(ValueError, match="'kind' parameter"):
        w.add_event(0, "weird", "x")
    w.close()
    check_runlog(tmp_path / "r")


def test_a_forked_copy_never_writes_the_parents_run(tmp_path, check_runlog):
    import os

    w = RunWriter(tmp_path / "r", heartbeat=False)
    w.add_scalars(0, 1.0)
    pid = os.fork()
    if pid == 0:  # a DataLoader worker, say, that inherited the writer
        try:
            w.add_scalars(1, 2.0)
            w.flush()
            w.close("crashed", {"type": "X", "message": "", "traceback": "", "step": 1})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert parts(tmp_path / "r", "scalars") == []
    assert meta(tmp_path / "r")["status"] == "running"
    w.close()
    check_runlog(tmp_path / "r")
    assert read_table(tmp_path / "r", "scalars").column("step").to_pylist() == [0]


def test_compaction_keeps_full_parts_and_the_newest_rows(tmp_path, monkeypatch, check_runlog):
    run = tmp_path / "r"
    monkeypatch.setattr(_parts, "compact", lambda *a, **k: _real_compact(*a, target_rows=6, **k))
    for attempt in range(3):  # three resumes, each writing steps 0..7 again in parts of 2 rows
        w = RunWriter(run, heartbeat=False, flush_every=2, start_step=0)
        for s in range(8):
            w.add_scalars(s, float(10 * attempt + s))
        w.close()
        check_runlog(run)
        assert read_table(run, "scalars").column("loss").to_pylist() == [10.0 * attempt + s for s in range(8)]
    sizes = [pq.ParquetFile(p).metadata.num_rows for _, _, p in parts(run, "scalars")]
    assert len(sizes) < 12 and max(sizes) <= 8


_real_compact = _parts.compact
