"""Finding runs: what counts as a run, what is skipped, and loops that must end."""

from __future__ import annotations

import os

import pytest
from runtree import write_run

from runlens.errors import UsageError
from runlens.io.discover import discover_runs, is_url

EXPECTED = ["broken-json", "crashed run", "part-broken", "sweep/lr-0.01", "sweep/lr-10", "ünïcode näme"]


def rel(paths, base):
    return [os.path.relpath(p, base) for p in paths]


def test_finds_every_run_once_despite_the_symlink_loop(tree):
    assert rel(discover_runs([tree]), tree) == EXPECTED


def test_paths_start_with_the_path_given(tree, monkeypatch):
    monkeypatch.chdir(tree.parent)
    found = discover_runs(["runs"])
    assert found == [os.path.join("runs", p) for p in EXPECTED]
    # Below sweep/, the loop leads back up to runs/: those runs are found through it, once.
    assert discover_runs(["runs/sweep"])[-2:] == ["runs/sweep/lr-0.01", "runs/sweep/lr-10"]
    assert "runs/sweep/loop/crashed run" in discover_runs(["runs/sweep"])


def test_a_run_given_directly_is_that_run(tree):
    assert discover_runs([tree / "sweep" / "lr-10"]) == [str(tree / "sweep" / "lr-10")]


def test_hidden_and_empty_folders_hold_no_runs(tree):
    assert discover_runs([tree / "empty"]) == []
    found = discover_runs([tree])
    assert not any("/.hidden" in p for p in found)


def test_sweeps_sort_naturally(tmp_path):
    for i in (10, 9, 1):
        write_run(tmp_path / f"run-{i}", steps=60, layers=False, evals=False)
    assert rel(discover_runs([tmp_path]), tmp_path) == ["run-1", "run-9", "run-10"]


def test_mutual_symlink_cycle_ends(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "to-b").symlink_to(tmp_path / "b")
    (tmp_path / "b" / "to-a").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    write_run(tmp_path / "b" / "run", steps=60, layers=False, evals=False)
    assert rel(discover_runs([tmp_path]), tmp_path) == ["a/to-b/run"]


def test_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        discover_runs([tmp_path / "missing"])


def test_file_urls_are_walked_like_folders(tree):
    url = "file://" + str(tree)
    found = discover_runs([url])
    assert [u[len(url) + 1:] for u in found] == EXPECTED
    assert all(is_url(u) for u in found)


def lightning_log(folder, steps=200):
    folder.mkdir(parents=True)
    lines = ["epoch,step,train_loss,val_loss"]
    for s in range(steps):
        lines.append(f"0,{s},{2.0 / (1 + s / 20):.5f},")
        if s % 50 == 49:
            lines.append(f"0,{s},,{2.1 / (1 + s / 20):.5f}")
    (folder / "metrics.csv").write_text("\n".join(lines) + "\n")


def test_other_tools_logs_are_runs_by_their_marker_files(tmp_path):
    write_run(tmp_path / "ours", steps=60, layers=False, evals=False)
    lightning_log(tmp_path / "lightning_logs" / "version_0")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("a,b\n1,2\n")
    found = rel(discover_runs([tmp_path]), tmp_path)
    assert found == ["lightning_logs/version_0", "ours"]
    # A CSV named on the command line is the user's call: the importers judge it.
    log = tmp_path / "loss.csv"
    log.write_text("step,loss\n" + "".join(f"{s},{1 / (s + 1)}\n" for s in range(50)))
    assert discover_runs([log]) == [str(log)]


def test_imported_logs_are_audited(tmp_path):
    from runlens.audit import audit

    lightning_log(tmp_path / "lightning_logs" / "version_0")
    row = audit([tmp_path], workers=1).rows[0]
    assert row.error is None, row.error
    assert row.steps == 200 and row.best_val_loss is not None
