"""What the label findings share (runlens/detectors/curve/finding.py): every non-healthy curve label
is a finding of its own code, declares the curve step, and gates --fail-on; a healthy curve has none."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from curve_cases import overfit
from loss_synth import (
    blows_up,
    healthy,
    jump_no_recovery,
    make_run,
    to_chance,
    write_run_dir,
)

from runlens import analyze
from runlens.detectors import REGISTRY

CURVE_CODES = {"overfitting": "warning", "underfitting": "warning", "unstable": "warning", "diverged": "error"}


SHAPES = {
    "overfitting": overfit,
    "underfitting": lambda seed=0: make_run(to_chance(1500, seed, k=4)),
    "unstable": lambda seed=0: make_run(jump_no_recovery(1500, seed)),
    "diverged": lambda seed=0: make_run(blows_up(1500, seed)),
}


@pytest.mark.parametrize("label", sorted(CURVE_CODES))
def test_each_non_healthy_curve_is_a_finding_of_its_code(label):
    for seed in range(5):
        d = analyze(SHAPES[label](seed))
        assert d.curve.label == label, (seed, d.curve.reason)
        (f,) = [f for f in d.findings if f.code == label]
        assert f.severity == CURVE_CODES[label]
        assert f.step is not None and f.advice == REGISTRY[label].advice_text()
        # the classifier's statistics travel with it
        assert {"start_level", "end_level", "relative_drop"} <= set(f.evidence)
        assert [g for g in d.findings if g.code in CURVE_CODES] == [f]


def test_a_healthy_curve_has_no_curve_finding():
    for seed in range(20):
        d = analyze(make_run(healthy(1500, seed)))
        assert d.curve.label == "healthy"
        assert not [f for f in d.findings if f.code in CURVE_CODES or f.code == "loss_at_chance"]


@pytest.mark.parametrize("label", sorted(CURVE_CODES))
def test_fail_on_warning_exits_1_on_every_non_healthy_curve(tmp_path, label):
    path = write_run_dir(tmp_path / label, SHAPES[label](0))
    proc = subprocess.run([sys.executable, "-m", "runlens", "analyze", str(path), "--format", "json",
                           "--fail-on", "warning"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["curve"] == label


def test_fail_on_warning_exits_0_on_a_healthy_curve(tmp_path):
    x = healthy(1500, 0)
    vs = np.arange(0, 1500, 50)
    path = write_run_dir(tmp_path / "h", make_run(x, val_loss=x[vs] * 1.05, val_steps=vs))
    proc = subprocess.run([sys.executable, "-m", "runlens", "analyze", str(path), "--fail-on", "warning"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout


def test_the_curve_is_a_registered_step_that_detectors_declare():
    assert REGISTRY["curve"].verdict is not None
    for code in (*CURVE_CODES, "loss_at_chance", "plateau"):
        assert "curve" in REGISTRY[code].depends, code
    # run alone, a curve finding gets the verdict through its declared dependency
    d = analyze(SHAPES["unstable"](0), detectors=["unstable"])
    assert [f.code for f in d.findings] == ["unstable"]
