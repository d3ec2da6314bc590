"""killed: a run that stopped without an error, judged by its status, its heartbeat or the recorder's
SIGTERM note."""

from __future__ import annotations

from crash_cases import CRASH_CODES, crashed
from edge_runs import make_run
from engine_runs import healthy, meta

from runlens import analyze


def test_killed_run_gets_killed_not_crash():
    run = crashed("", status="killed")
    found = [f for f in analyze(run).findings if f.code in CRASH_CODES | {"killed"}]
    assert [f.code for f in found] == ["killed"]
    assert found[0].severity == "error" and found[0].step == 120
    assert found[0].evidence["judged_by"].startswith("heartbeat")


def test_killed_detected_end_to_end_from_a_stale_heartbeat(tmp_path):
    from engine_runs import write_run

    cols = healthy(80, 2)
    write_run(tmp_path / "k", run_meta=meta("k", status="running"), scalars=cols["scalars"])
    diagnosis = analyze(tmp_path / "k")
    assert diagnosis.status == "killed"
    assert "killed" in [f.code for f in diagnosis.findings]


def test_killed_run_with_the_recorders_sigterm_note():
    cols = healthy(80, 2)
    events = {"step": [79], "time": [1.0], "kind": ["user"], "layer": [None], "value": [None],
              "message": ["SIGTERM received at step 80; buffered rows flushed"]}
    run = make_run("k", status="killed", run_meta=meta("k", status="running"), scalars=cols["scalars"],
                   events=events)
    (f,) = [f for f in analyze(run).findings if f.code == "killed"]
    assert "SIGTERM" in f.evidence["sigterm"] and f.step == 80
