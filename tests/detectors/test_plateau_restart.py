"""plateau: a rate raised back to one the run had already used (a schedule's warm restart) did not
rescue a rate too low to learn, so the plateau is information, not a warning (``lr_restored``).

Found on a recorded run (third-fresh11 ``restarts-resreg``, healthy: cosine warm restarts), whose
loss sat flat through the first cycle's trough and fell in the second: a warning said the rate had
been raised. Each case has its twin with the same losses, whose rate after the flat stretch is one
the run had never used: still a warning.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from loss_synth import make_run, saddle

from runlens import analyze
from runlens.io.loader import load_run

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "third" / "restarts-resreg" / "run"


def warm_restarts(n: int, peak: float = 1e-3) -> np.ndarray:
    """Cosine from ``peak`` to 1% of it over each half of the run."""
    phase = (np.arange(n) % (n // 2)) / (n // 2)
    return peak * (0.01 + 0.99 * 0.5 * (1 + np.cos(np.pi * phase)))


def raised_anew(n: int, peak: float = 1e-3) -> np.ndarray:
    """The twin: a tenth of ``peak`` until half the run, then ``peak``, a rate never used before."""
    return np.where(np.arange(n) < n // 2, peak / 10, peak)


def plateau_of(run):
    found = [f for f in analyze(run).findings if f.code == "plateau"]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("n", [400, 4000])
def test_a_flat_trough_left_at_a_restart_is_never_a_warning(n):
    # Where the stretch found ends inside the trough, the rate between it and the fall is below the
    # stretch's (a cut: silent); where it ends at the restart, the rate was raised back (information).
    found = [f for seed in range(8) for f in analyze(make_run(saddle(n, seed), lr=warm_restarts(n))).findings
             if f.code == "plateau"]
    assert not [f for f in found if f.severity != "info"], found
    restored = [f for f in found if f.evidence["lr_restored"]]
    assert len(restored) >= 3, found
    assert all(f.evidence["lr_raised"] is True and "a rate it had used before" in f.title for f in restored)


@pytest.mark.parametrize("n", [400, 4000])
@pytest.mark.parametrize("seed", range(3))
def test_twin_the_same_loss_left_at_a_rate_never_used_is_a_warning(n, seed):
    f = plateau_of(make_run(saddle(n, seed), lr=raised_anew(n)))
    assert f.severity == "warning" and f.evidence["lr_raised"] is True and f.evidence["lr_restored"] is False


def test_the_recorded_warm_restarts_run_is_healthy_with_no_warning():
    diag = analyze(RUN)
    assert diag.curve.label == "healthy"
    assert not [f.code for f in diag.findings if f.severity in ("warning", "error")]
    (f,) = [f for f in diag.findings if f.code == "plateau"]
    assert f.evidence["lr_restored"] is True


def test_twin_the_recorded_losses_with_the_first_cycle_at_a_tenth_of_the_rate_warn():
    run = load_run(RUN)
    steps = np.asarray(run.scalars["step"])
    loss = np.asarray(run.scalars["loss"], float)
    lr = np.asarray(run.scalars["lr"], float)
    start = plateau_of(run).evidence["start_step"]
    slowed = np.where(steps < start, lr / 10, lr)  # before the flat stretch, never as high as after it
    f = plateau_of(make_run(loss, steps=steps, lr=slowed))
    assert f.severity == "warning" and f.evidence["lr_restored"] is False
