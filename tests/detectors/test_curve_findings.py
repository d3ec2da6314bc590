"""Every non-healthy curve label is a finding of its own code, gates --fail-on, and a
diverged or unstable run names its proximate signals or says which the log lacks."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from loss_synth import (
    blows_up,
    healthy,
    jump_no_recovery,
    make_run,
    noisy_overfit_val,
    oscillating,
    to_chance,
    write_run_dir,
)

from runlens import analyze
from runlens.detectors import REGISTRY

CURVE_CODES = {"overfitting": "warning", "underfitting": "warning", "unstable": "warning", "diverged": "error"}


def overfit(seed: int = 0):
    vs, v = noisy_overfit_val(2000, seed)
    return make_run(healthy(2000, seed, floor=0.05), val_loss=v, val_steps=vs)


def nan_run(seed: int = 0, grad_norm: bool = True):
    x = healthy(500, seed)
    x[400:] = np.nan
    gn = np.exp(0.1 * np.random.default_rng(seed).standard_normal(500))
    gn[395:] = np.geomspace(1, 1e12, 105)
    return make_run(x, scalars={"grad_norm": gn} if grad_norm else None)


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


def test_overfitting_finding_names_the_eval_set_and_the_validation_minimum():
    vs, v = noisy_overfit_val(2000, 0)
    flat = np.full(vs.size, 0.6) * np.exp(0.01 * np.random.default_rng(1).standard_normal(vs.size))
    run = make_run(healthy(2000, 0, floor=0.05), val_loss=flat, val_steps=vs, eval_sets={"val_loss@ood": v})
    (f,) = [f for f in analyze(run).findings if f.code == "overfitting"]
    assert f.evidence["eval_set"] == "val_loss@ood" and "'ood'" in f.title
    assert f.step == f.evidence["val_min_step"]
    assert f.evidence["val_perm_p"] < 0.01 and f.evidence["val_rise"] > 0


def test_diverged_names_its_proximate_signals():
    d = analyze(nan_run())
    (f,) = [f for f in d.findings if f.code == "diverged"]
    assert f.evidence["signals"]["grad_norm_growth"] > 1e6
    assert "grad_norm" not in f.evidence.get("signals_missing", [])
    assert "no gradient norms" not in f.title


def test_diverged_without_gradient_norms_says_what_the_log_lacks():
    d = analyze(nan_run(grad_norm=False))
    (f,) = [f for f in d.findings if f.code == "diverged"]
    assert {"grad_norm", "update_ratio"} <= set(f.evidence["signals_missing"])
    assert "the log has no gradient norms" in f.title


def test_unstable_names_its_signals_or_what_is_missing():
    x = oscillating(2000, 0)
    run = make_run(x, lr=np.full(2000, 0.5))
    (f,) = [f for f in analyze(run).findings if f.code == "unstable"]
    assert f.evidence["signals"]["lr"] == 0.5
    assert "grad_norm" in f.evidence["signals_missing"]


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


def test_named_eval_sets_reach_the_curve_from_disk(tmp_path):
    # the loader projects on the curve's needs: ``val_loss@*`` must bring every named set
    vs, v = noisy_overfit_val(2000, 0)
    flat = np.full(vs.size, 0.6) * np.exp(0.01 * np.random.default_rng(1).standard_normal(vs.size))
    run = make_run(healthy(2000, 0, floor=0.05), val_loss=flat, val_steps=vs, eval_sets={"val_loss@ood": v})
    d = analyze(write_run_dir(tmp_path / "sets", run))
    assert d.curve.label == "overfitting" and d.curve.evidence["eval_set"] == "val_loss@ood"
