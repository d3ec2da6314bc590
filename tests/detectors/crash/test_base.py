"""What every crash_* detector shares (runlens/detectors/crash/base.py): one finding, on a crashed run
only, with the step and the last signals."""

from __future__ import annotations

import numpy as np
import pytest
from crash_cases import CRASH_CODES, WORDINGS, crashed
from edge_runs import make_run
from engine_runs import healthy, meta

from runlens import analyze


@pytest.mark.parametrize("etype,message,code", [(w[0], w[1], w[2]) for w in WORDINGS[::4]])
def test_exactly_one_crash_finding_with_step_and_last_signals(etype, message, code):
    diagnosis = analyze(crashed(message, etype))
    crash = [f for f in diagnosis.findings if f.code in CRASH_CODES]
    assert [f.code for f in crash] == [code]
    f = crash[0]
    assert f.severity == "error" and f.step == 120
    assert f.evidence["last_recorded_step"] == 119
    assert np.isfinite(f.evidence["last_finite_loss"]) and np.isfinite(f.evidence["last_finite_grad_norm"])
    assert f.advice


def test_crash_without_error_record_uses_the_exception_event():
    cols = healthy(50, 2)
    events = {"step": [50], "time": [1.0], "kind": ["exception"], "layer": [None], "value": [None],
              "message": ["RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"]}
    run = make_run("c", status="crashed", run_meta=meta("c", status="crashed"), scalars=cols["scalars"],
                   events=events)
    assert "crash_shape_mismatch" in [f.code for f in analyze(run).findings]


@pytest.mark.parametrize("status", ["finished", "running"])
def test_no_crash_code_unless_the_run_crashed(status):
    run = crashed("CUDA out of memory", "torch.OutOfMemoryError", status=status)
    # the error record is there, but the run did not end in it
    run = make_run("c", status=status, run_meta=dict(run.meta, error={"type": "RuntimeError",
                                                                      "message": "CUDA out of memory"}),
                   scalars=run.scalars)
    codes = [f.code for f in analyze(run).findings]
    assert not CRASH_CODES & set(codes) and "killed" not in codes
