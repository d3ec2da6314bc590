"""The gradient and weight detectors on logs with only the REQUIRED columns.

Another writer of format v1 may log layers as (step, layer, grad_norm,
weight_norm) only, scalars as (step, time, loss), no events, and run.json
layers with empty ``module``/``kind``. Each detector's firing case built that
way and its healthy twin are in the detector's own test file; here the shipped
sample runs are stripped down to the required columns and still diagnosed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import runlens

SAMPLES = Path(__file__).resolve().parents[2] / "sample_runs"
REQUIRED = {"scalars": ("step", "time", "loss"), "layers": ("step", "layer", "grad_norm", "weight_norm")}


def strip_to_required(src: Path, dst: Path) -> Path:
    """Copy a run keeping only required columns, no events, empty module/kind (config kept)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("expected.json"))
    for table, keep in REQUIRED.items():
        for part in sorted((dst / table).glob("*.parquet")):
            t = pq.read_table(part)
            # hand-made on purpose: sample parts stripped to the required columns
            pq.write_table(t.select([c for c in t.column_names if c in keep]), part)
    shutil.rmtree(dst / "events", ignore_errors=True)
    meta = json.loads((dst / "run.json").read_text())
    for e in meta.get("layers") or ():
        e["module"], e["kind"] = "", ""
    (dst / "run.json").write_text(json.dumps(meta))
    return dst


@pytest.mark.parametrize("name,code", [
    ("vanishing_gradients", "vanishing_gradients"), ("exploding_gradients", "exploding_gradients"),
    ("dead_layer", "dead_layers"), ("lr_too_low", "learning_rate_too_low"),
    ("nan_divergence", "exploding_gradients"),
])
def test_stripped_sample_runs_keep_their_finding(tmp_path, name, code):
    d = runlens.analyze(strip_to_required(SAMPLES / name, tmp_path / name))
    assert code in {f.code for f in d.findings}, [(o.code, o.reason) for o in d.outcomes if o.state != "ran"]


@pytest.mark.parametrize("name", ["healthy", "no_validation", "resumed", "underfitting", "plateau"])
def test_stripped_healthy_like_sample_runs_stay_quiet(tmp_path, name):
    exp = json.loads((SAMPLES / name / "expected.json").read_text())
    d = runlens.analyze(strip_to_required(SAMPLES / name, tmp_path / name))
    codes = {f.code for f in d.findings}
    assert not codes & set(exp["must_not_include"]), codes
    if name in ("healthy", "no_validation", "resumed"):
        assert not [f for f in d.findings if f.severity in ("warning", "error")]
