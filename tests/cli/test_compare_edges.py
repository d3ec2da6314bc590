"""compare's edges: no shared steps is refused; an improvement is never a regression; a loss that is
Inf on a step the loss scaler skipped (or null: not logged) gets one verdict from analyze, compare
and audit."""

from __future__ import annotations

import numpy as np
import pytest
from _cli import SAMPLES, invoke
from engine_runs import healthy, meta, write_run

from runlens.analysis import analyze
from runlens.audit import audit
from runlens.compare import compare_runs


def _run(root, name, *, first_step=0, n=300, loss=None, skipped=(), null=()):
    cols = healthy(n, 4)
    s = cols["scalars"]
    s["step"] = s["step"] + first_step
    lay = cols["layers"]
    lay["step"] = lay["step"] + first_step
    ev = cols["evals"]
    ev["step"] = ev["step"] + first_step
    values = list(s["loss"] if loss is None else loss)
    if skipped:
        hit = np.isin(np.arange(n), skipped)
        s["step_skipped"] = hit.astype(np.int64)
        s["grad_norm"] = np.where(hit, np.inf, s["grad_norm"])
        s["loss_scale"] = 65536.0 / 2.0 ** np.cumsum(hit)
        values = [float("inf") if i in skipped else v for i, v in enumerate(values)]
    values = [None if i in null else float(v) for i, v in enumerate(values)]
    s["loss"] = values
    return write_run(root / name, run_meta=meta(name, layers=cols["layer_names"]), scalars=s,
                     layers=lay, evals=ev)


def test_runs_with_no_shared_step_are_refused(tmp_path):
    a = _run(tmp_path, "a")
    b = _run(tmp_path, "b", first_step=10_000)
    result = invoke("compare", a, b)
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "\n" not in line and "share no logged training step" in line and result.stdout == ""


def test_an_improvement_is_not_a_regression():
    """healthy against the exploding-gradients sample as baseline: 99.9% lower loss."""
    result = invoke("compare", SAMPLES / "healthy", SAMPLES / "exploding_gradients", "--fail-on", "warning")
    assert result.exit_code == 0, result.output
    assert "regression" not in result.stdout.splitlines()[1]
    c = compare_runs(str(SAMPLES / "healthy"), str(SAMPLES / "exploding_gradients"))
    assert c.loss is not None and c.loss.better and not c.loss.worse
    assert all(f.severity == "info" for f in c.findings), c.findings
    assert "0.00x" not in result.stdout


def test_a_regression_is_still_one():
    result = invoke("compare", SAMPLES / "nan_divergence", SAMPLES / "healthy")
    assert result.exit_code == 1
    c = compare_runs(str(SAMPLES / "nan_divergence"), str(SAMPLES / "healthy"))
    new = [f for f in c.findings if f.code == "baseline_new_nonfinite"]
    assert new and new[0].severity == "error" and "step 45" in new[0].title
    assert invoke("compare", SAMPLES / "nan_divergence", SAMPLES / "healthy", "-q").stdout.count("\n") == 1


@pytest.fixture
def scaler_runs(tmp_path):
    base = _run(tmp_path, "baseline")
    amp = _run(tmp_path, "amp", skipped=(0, 1, 2, 3, 100), null=(50, 51))
    return amp, base


def test_a_scaler_skipped_inf_gets_one_verdict_everywhere(scaler_runs):
    amp, base = scaler_runs
    d = analyze(amp)
    assert d.curve.label == "healthy", d.curve
    assert not [f for f in d.findings if "nonfinite" in f.code], d.findings
    assert d.key_numbers["first_nonfinite_step"] is None
    c = compare_runs(str(amp), str(base))
    assert c.run_nonfinite_step is None and c.run_nonfinite_grad_step is None
    assert not [f for f in c.findings if f.code == "baseline_new_nonfinite"], c.findings
    row = audit([str(amp)], workers=1, baseline=str(base)).rows[0]
    assert not [f for f in row.findings if "nonfinite" in f["code"]], row.findings
    assert row.worst == d.worst_severity == c.worst
    assert invoke("compare", amp, base).exit_code == 0
