"""An audit never leaves a run out silently, and never writes where it must not."""

from __future__ import annotations

import os

import pytest
from runtree import write_run

from runlens.audit import audit
from runlens.io.output import OutputError
from runlens.render.audit.cells import summary


def test_a_folder_that_cannot_be_listed_is_a_row(tmp_path, monkeypatch):
    write_run(tmp_path / "ok", steps=200)
    write_run(tmp_path / "locked" / "inner", steps=200)
    real = os.scandir

    def scandir(path="."):
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = audit([tmp_path], workers=1)
    assert len(result.rows) == 2
    locked = next(r for r in result.rows if r.run.endswith("locked"))
    assert locked.error and "Permission denied" in locked.error
    assert [f["code"] for f in locked.findings] == ["unreadable_run"]
    assert summary(result).startswith("2 runs: 1 unreadable")
    assert result.failed("error")


def test_only_unlistable_folders_still_give_rows_not_no_runs_found(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p=".": (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
                        if os.path.basename(os.fspath(p)) == "locked" else real(p))
    result = audit([tmp_path / "locked"], workers=1)
    assert [r.error is not None for r in result.rows] == [True]


def test_reports_folder_inside_a_run_is_refused_before_the_audit(tmp_path):
    run = write_run(tmp_path / "run", steps=200)
    with pytest.raises(OutputError, match="is a run directory"):
        audit([run], workers=1, reports_dir=str(run / "layers"))


def test_a_report_that_cannot_be_written_keeps_the_analysis(tmp_path, monkeypatch):
    import runlens.io.output as output

    run = write_run(tmp_path / "run", steps=200)

    def full(*a, **k):
        raise OutputError("cannot write x.html: No space left on device")

    monkeypatch.setattr(output, "write_text", full)
    result = audit([run], workers=1, reports_dir=str(tmp_path / "reports"))
    (row,) = result.rows
    assert row.error is None and row.report is None
    assert any(w.startswith("report not written: cannot write") for w in row.warnings)
