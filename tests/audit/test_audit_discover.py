"""Finding runs: what counts as a run, what is skipped, and loops that must end."""

from __future__ import annotations

import os

import pytest
from runtree import write_run

from runlens.discover import discover_runs, is_url
from runlens.errors import UsageError

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
