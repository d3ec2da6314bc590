"""Every shipped sample's label is confirmed by the trainer's own measurements (``truth-*.npz``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "sample_runs"
sys.path.insert(0, str(SAMPLES_DIR))

import _verify as V  # noqa: E402
from generate import SAMPLES  # noqa: E402


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.spec.name for s in SAMPLES])
def test_sample_label_is_confirmed_by_its_measurements(sample):
    ok, results = V.run_checks(SAMPLES_DIR / sample.spec.name, sample.checks)
    assert ok, {k: v for k, v in results.items() if not v[0]}


def test_a_run_without_measurements_fails_every_check(tmp_path):
    (tmp_path / "run.json").write_text("{}")
    ok, results = V.run_checks(tmp_path, (V.learns, V.flat))
    assert not ok and all("truth" in r[1]["error"] for r in results.values())


def test_verify_never_reads_runlens():
    text = (SAMPLES_DIR / "_verify.py").read_text()
    assert "import runlens" not in text and "from runlens" not in text


def test_twin_criteria_need_the_twin_to_do_better():
    d = V.RunData(SAMPLES_DIR / "lr_too_high")
    assert V.lower_lr_does_better(d)[0]
    worse_twin = dict(d.twin, val_loss=np.asarray(d.twin["val_loss"]) * 10)
    d.twin = worse_twin
    assert not V.lower_lr_does_better(d)[0]
