"""distinct_names over many runs of one name: every label distinct, and the rule unchanged at scale."""

from __future__ import annotations

from runlens.render.names import distinct_names


def test_twenty_thousand_runs_of_one_name_in_different_folders_come_back_distinct():
    runs = [("healthy", f"sweep/{i}/healthy") for i in range(20_000)]
    labels = distinct_names(runs)
    assert len(set(labels)) == len(runs)
    assert labels[0] == "healthy (0/healthy)"
    assert labels[-1] == "healthy (19999/healthy)"


def test_twenty_thousand_runs_sharing_one_path_are_numbered_in_order():
    runs = [("healthy", "runs/healthy")] * 20_000
    labels = distinct_names(runs)
    assert len(set(labels)) == len(runs)
    assert labels[0] == "healthy (runs/healthy #1)"
    assert labels[-1] == "healthy (runs/healthy #20000)"


def test_a_mix_of_shared_and_distinct_tails_numbers_only_the_shared_ones():
    runs = [("x", "a/x"), ("x", "a/x"), ("x", "b/x"), ("y", "a/y")]
    assert distinct_names(runs) == ["x (a/x #1)", "x (a/x #2)", "x (b/x)", "y"]
