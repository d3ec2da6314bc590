"""A folder of runs with other files beside them: logs are analyzed, the rest named and skipped."""

from __future__ import annotations

import shutil

import numpy as np
from _cli import SAMPLES, invoke


def _folder(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(SAMPLES / "healthy", root / "healthy")
    # The sample folder's own README: its tables sniff as a Markdown metrics table (a "steps" column).
    shutil.copy(SAMPLES / "README.md", root / "README.md")
    loss = np.concatenate([np.linspace(2.0, 0.5, 60), [np.nan] * 3])
    (root / "train_log.csv").write_text("step,loss\n" + "".join(f"{i},{v}\n" for i, v in enumerate(loss)))
    return root


def test_report_names_the_skipped_readme_and_reports_the_runs_and_the_loose_log(tmp_path):
    root = _folder(tmp_path)
    res = invoke("report", root, "-o", tmp_path / "out", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert "skipped" in res.stderr and "README.md" in res.stderr
    assert "train_log" in res.stdout and "healthy" in res.stdout
    assert "2 runs" in res.stdout


def test_audit_names_the_skipped_readme_and_lists_the_loose_log_as_a_run(tmp_path):
    root = _folder(tmp_path)
    res = invoke("audit", root, "--format", "json", "--fail-on", "never")
    assert res.exit_code == 0, res.output
    assert "skipped" in res.stderr and "README.md" in res.stderr
    import json

    rows = json.loads(res.stdout)
    assert sorted(r["run"].rsplit("/", 1)[-1] for r in rows) == ["healthy", "train_log.csv"]
    log = next(r for r in rows if r["run"].endswith("train_log.csv"))
    assert log["curve"] == "diverged"  # the NaN at its end, read through the loose file
