"""The gradient and weight detectors on odd data: never a crash, at most a Skip."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from gradients_synth import check, healthy_net, make_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runlens.detectors import Skip
from runlens.diagnosis import Finding
from runlens.testing import build_run

CODES = ("vanishing_gradients", "exploding_gradients", "dead_layers", "learning_rate_too_low",
         "weight_norm_growth")


def outcome(code, run, **kw):
    """"skip", or the findings, each checked to be a well-formed finding of ``code``."""
    try:
        found = check(code, run, **kw)
    except Skip as why:
        assert str(why), f"{code} skipped without a reason"
        return "skip"
    assert isinstance(found, list)
    for f in found:
        assert isinstance(f, Finding) and f.code == code, f
        json.dumps(f.to_dict(), allow_nan=False)
    return found


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_tiny_runs(code, n):
    g, w, u = healthy_net(0, n=n, m=4)
    assert outcome(code, make_run(g, w, u)) in ("skip", [])


@pytest.mark.parametrize("code", CODES)
def test_all_nan_columns(code):
    nan = np.full((20, 4), np.nan)
    assert outcome(code, make_run(nan, nan, nan, loss=np.full(20, np.nan)), first_nonfinite=0) in ("skip", [])
    assert outcome(code, make_run(nan, nan, nan)) in ("skip", [])


@pytest.mark.parametrize("code", CODES)
def test_inf_and_zero_everywhere(code):
    g, w, u = healthy_net(1, n=30, m=4)
    g[::3] = np.inf
    w[1::3] = 0.0
    u[2::3] = -np.inf
    got = outcome(code, make_run(g, w, u))
    # Only the detectors of non-finite gradients may read a finding into this; none of these may.
    assert got in ("skip", []) or code == "exploding_gradients" and got[0].evidence.get("blowup_step") == 0


@pytest.mark.parametrize("code", CODES)
def test_no_layers_table_or_metadata(code):
    run = build_run(tables={"scalars": {"step": [0, 1, 2], "loss": [1.0, 0.9, 0.8]}}, meta={}, name="x")
    assert outcome(code, run) in ("skip", [])
    g, w, u = healthy_net(2, n=30, m=4)
    bare = make_run(g, w, u)
    # A healthy net without run.json metadata (no shapes, no modules) is still silent.
    assert outcome(code, build_run(tables={"scalars": bare.scalars, "layers": bare.layers}, meta={},
                                   name="x")) in ("skip", [])


@pytest.mark.parametrize("code", CODES)
def test_a_layer_missing_in_some_steps(code):
    g, w, u = healthy_net(3, n=60, m=5)
    run = make_run(g, w, u)
    keep = ~((run.layers.column("layer").to_pylist() == np.array("l2.weight")) & (np.arange(run.layers.num_rows) % 2 == 0))
    run = build_run(tables={"scalars": run.scalars, "layers": run.layers.filter(pa.array(keep))}, meta=run.meta,
                    name="x")
    assert outcome(code, run) in ("skip", [])


@pytest.mark.parametrize("code", CODES)
def test_ten_thousand_layers(code):
    rng = np.random.default_rng(0)
    n, m = 3, 10_000
    g, w, u = 10 ** rng.normal(0, 0.2, (n, m)), np.full((n, m), 5.0), np.full((n, m), 5e-3)
    assert outcome(code, make_run(g, w, u, biases=False)) in ("skip", [])


finite_or_odd = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.just(0.0), st.none())


@st.composite
def tables(draw):
    n = draw(st.integers(0, 6))
    m = draw(st.integers(1, 4))
    steps = draw(st.lists(st.integers(-2, 8), min_size=n, max_size=n))
    rows = {"step": [], "layer": [], "grad_norm": [], "weight_norm": [], "update_norm": []}
    for s in steps:
        for j in range(m):
            if draw(st.booleans()) or m == 1:
                rows["step"].append(s)
                rows["layer"].append(f"p{j}")
                for k in ("grad_norm", "weight_norm", "update_norm"):
                    rows[k].append(draw(finite_or_odd))
    loss = draw(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()), min_size=n, max_size=n))
    scalars = {"step": steps, "loss": loss, "grad_norm": loss}
    meta = {"layers": [{"name": f"p{j}", "index": j, "module": f"m{j // 2}", "shape": [2, 2] if j % 2 == 0 else [2]}
                       for j in range(m)]}
    return build_run(tables={"scalars": scalars, "layers": rows}, meta=meta, name="x")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=tables(), code=st.sampled_from(CODES))
def test_generated_tables_never_crash(run, code):
    got = outcome(code, run)
    assert got == "skip" or isinstance(got, list)
