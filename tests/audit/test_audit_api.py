"""``runlens.audit.audit``: rows, order, error rows, and the same result however it runs."""

from __future__ import annotations

import json
import os

import pytest
from runtree import write_run

from runlens.audit import AuditRow, audit, chunked
from runlens.audit.worker import analyze_path
from runlens.errors import UsageError

SPEC_KEYS = ["run", "name", "status", "curve", "findings", "warnings"]
# Added keys (docs/format.md, "Added keys in the analysis output"), after the spec's.
ADDED_KEYS = ["headline", "key_numbers", "verdict_step"]


@pytest.fixture(scope="module")
def inline(tree):
    return audit([tree], workers=1)


def test_one_row_per_run_worst_first(inline, tree):
    names = [row.name for row in inline.rows]
    assert names[0] == "broken-json"  # unreadable first
    # An unreadable part is an error finding (unreadable_data, issue 20): part-broken ranks with the errors.
    assert set(names[1:4]) == {"lr-10", "crashed run", "part-broken"}
    assert set(names[4:]) == {"lr-0.01", "ünïcode näme"}
    assert len(inline.rows) == 6


def test_unreadable_run_is_a_row_with_its_error(inline):
    row = inline.rows[0]
    # The message alone: no exception class in front of it (issue 13).
    assert row.error.startswith(row.run) and "run.json" in row.error and "Error:" not in row.error
    assert [f["code"] for f in row.findings] == ["unreadable_run"]
    assert row.status in ("finished", "crashed", "killed", "running")
    assert row.reaches("error")


def test_unreadable_part_is_a_warning_not_an_error(inline):
    row = next(r for r in inline.rows if r.name == "part-broken")
    assert row.error is None and any("r0-00000001.parquet" in w for w in row.warnings)
    assert row.steps == 600


def test_rows_carry_the_numbers(inline):
    row = next(r for r in inline.rows if r.name == "lr-0.01")
    assert row.steps == 600 and 0.2 < row.best_loss <= row.final_loss < 0.4
    assert row.best_val_step in range(49, 600, 50) and row.best_val_loss > 0
    assert row.duration_s == 600
    diverged = next(r for r in inline.rows if r.name == "lr-10")
    assert diverged.final_loss != diverged.final_loss  # NaN: the run ended non-finite
    assert diverged.worst == "error" and diverged.curve == "diverged"


def test_json_objects_have_exactly_the_spec_keys(inline):
    for obj in inline.to_list():
        assert list(obj) == SPEC_KEYS + ADDED_KEYS
        json.dumps(obj, allow_nan=False)


def test_audit_json_of_a_run_is_its_analysis(tree):
    from runlens.analysis import analyze

    path = str(tree / "crashed run")
    assert audit([path], workers=1).to_list() == [analyze(path).to_dict()]


def test_process_pool_gives_the_same_result(inline, tree):
    pooled = audit([tree], workers=2)
    assert pooled.backend == "processes" and pooled.workers == 2
    assert pooled.to_list() == inline.to_list()
    from runlens.render.audit.csv import render_audit_csv

    assert render_audit_csv(pooled) == render_audit_csv(inline)  # the numbers too (NaN != NaN in rows)


def test_no_runs_is_a_usage_error(tree):
    with pytest.raises(UsageError, match="no runs found"):
        audit([tree / "empty"], workers=1)


def test_file_url_audit_matches_the_local_one(inline, tree):
    url = "file://" + str(tree)
    result = audit([url], workers=1)
    local = inline.to_list()
    for a, b in zip(result.to_list(), local, strict=True):
        assert a["run"] == "file://" + b["run"]
        assert {**a, "run": b["run"], "warnings": len(a["warnings"]), "findings": len(a["findings"])} == \
               {**b, "warnings": len(b["warnings"]), "findings": len(b["findings"])}


def test_fsspec_url_is_staged_and_read(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    src = write_run(tmp_path / "local", steps=200, seed=7)
    mem = fsspec.filesystem("memory")
    for dirpath, _, files in os.walk(src):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            mem.pipe(f"/bucket/runs/exp one/{rel}", open(os.path.join(dirpath, name), "rb").read())
    try:
        result = audit(["memory://bucket/runs"], workers=1)
        assert [r.run for r in result.rows] == ["memory://bucket/runs/exp one"]
        local = audit([src], workers=1).rows[0]
        assert result.rows[0].findings == local.findings and result.rows[0].steps == local.steps
    finally:
        mem.rm("/bucket", recursive=True)


def test_a_crashing_analysis_is_an_error_row(monkeypatch, tree):
    import runlens.analysis

    def boom(run, **options):
        raise ZeroDivisionError("bug in a detector")

    monkeypatch.setattr(runlens.analysis, "analyze", boom)
    record = analyze_path(str(tree / "sweep" / "lr-0.01"))
    row = AuditRow.from_record(record)
    assert row.error == "bug in a detector"
    assert [f["code"] for f in row.findings] == ["analysis_crashed"]
    assert row.findings[0]["evidence"]["exception"] == "ZeroDivisionError"  # for the bug report
    assert row.status == "finished" and row.name == "lr-0.01"


def test_chunks_cover_every_run_in_order():
    runs = [f"r{i}" for i in range(103)]
    for workers in (1, 2, 7):
        chunks = chunked(runs, workers)
        assert [r for c in chunks for r in c] == runs
        assert max(map(len, chunks)) <= 32
