"""Property tests: whatever tables a run holds, analysis returns a valid spec object, no traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from edge_runs import make_run
from engine_runs import meta, write_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_contract import assert_spec_object

from runlens import analyze, load_run

floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.sampled_from([0.0, 1.0, 0.693, 1e-12, 1e12]))
steps = st.lists(st.integers(min_value=0, max_value=60), min_size=0, max_size=60)
LAYERS = ["emb.weight", "h0.weight", "h1.weight", "head.weight"]


@st.composite
def tables(draw):
    s = draw(steps)
    n = len(s)
    col = lambda: draw(st.lists(floats, min_size=n, max_size=n))  # noqa: E731
    scalars = {"step": s, "time": [float(i) for i in range(n)], "loss": col()}
    for name in draw(st.sets(st.sampled_from(["lr", "grad_norm", "loss_scale", "acc"]))):
        scalars[name] = col()
    if draw(st.booleans()):
        scalars["step_skipped"] = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    layers = None
    if draw(st.booleans()):
        ls = draw(st.lists(st.tuples(st.integers(0, 60), st.sampled_from(LAYERS + ["stray"])), max_size=80))
        k = len(ls)
        fl = lambda: draw(st.lists(floats, min_size=k, max_size=k))  # noqa: E731
        layers = {"step": [a for a, _ in ls], "layer": [b for _, b in ls], "grad_norm": fl(),
                  "weight_norm": fl(), "update_norm": fl(),
                  "nonfinite": np.array(draw(st.lists(st.integers(0, 3), min_size=k, max_size=k)), np.int32)}
    evals = None
    if draw(st.booleans()):
        es = draw(st.lists(st.integers(0, 60), max_size=10))
        evals = {"step": es, "time": [0.0] * len(es),
                 "val_loss": draw(st.lists(floats, min_size=len(es), max_size=len(es)))}
    status = draw(st.sampled_from(["finished", "crashed", "killed", "running"]))
    error = draw(st.one_of(st.none(), st.fixed_dictionaries(
        {"type": st.sampled_from(["RuntimeError", "torch.OutOfMemoryError", ""]),
         "message": st.text(max_size=80), "step": st.one_of(st.none(), st.integers(0, 99))})))
    return status, error, {"scalars": scalars if n or draw(st.booleans()) else None,
                           "layers": layers, "evals": evals}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_analyze_any_in_memory_run(spec):
    status, error, tabs = spec
    run = make_run("prop", status=status, layer_names=LAYERS,
                   run_meta=meta("prop", status=status, layers=LAYERS, error=error), **tabs)
    diagnosis = analyze(run)
    assert_spec_object(diagnosis.to_dict())
    assert [o for o in diagnosis.outcomes if o.state == "crashed"] == []
    if status == "finished":
        assert not [f for f in diagnosis.findings if f.code.startswith("crash_") or f.code == "killed"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 3))
def test_load_and_analyze_any_run_on_disk(spec, n_parts):
    status, error, tabs = spec
    disk_status = "running" if status == "killed" else status
    with tempfile.TemporaryDirectory() as tmp:
        parts = {}
        for table, cols in tabs.items():
            if cols is None or not len(cols["step"]):
                continue
            cut = np.array_split(np.arange(len(cols["step"])), n_parts)
            parts[table] = [{k: [v[i] for i in idx] if isinstance(v, list) else np.asarray(v)[idx]
                             for k, v in cols.items()} for idx in cut if len(idx)]
        path = write_run(Path(tmp) / "r", run_meta=meta("r", status=disk_status, layers=LAYERS,
                                                        error=error), **parts)
        run = load_run(path)
        for table in ("scalars", "evals", "layers"):
            s = run.steps(table)
            assert np.all(np.diff(s) >= 0), f"{table} not sorted by step"
        out = analyze(path).to_dict()
        assert_spec_object(out)
        assert json.dumps(out) == json.dumps(analyze(path).to_dict())


part_rows = st.lists(st.tuples(st.integers(0, 30), st.sampled_from(LAYERS), st.integers(0, 999)),
                     min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(st.lists(part_rows, min_size=1, max_size=4), st.permutations(range(4)))
def test_layers_dedup_matches_a_reference(parts, seqs):
    """Last row per (step, layer) by seq then row order, sorted by step then depth: as a dict would."""
    expected: dict[tuple[int, str], int] = {}
    for seq in sorted(range(len(parts)), key=lambda i: seqs[i]):
        for step, layer, value in parts[seq]:
            expected[(step, layer)] = value
    want = sorted(expected.items(), key=lambda kv: (kv[0][0], LAYERS.index(kv[0][1])))
    with tempfile.TemporaryDirectory() as tmp:
        tables = [(0, seqs[i], {"step": [r[0] for r in rows], "layer": [r[1] for r in rows],
                                "grad_norm": [float(r[2]) for r in rows], "weight_norm": [1.0] * len(rows)})
                  for i, rows in enumerate(parts)]
        run = load_run(write_run(Path(tmp) / "r", run_meta=meta("r", layers=LAYERS), layers=tables))
        got = list(zip(zip(run.layers.column("step").to_pylist(), run.layers.column("layer").to_pylist(),
                           strict=True), run.layers.column("grad_norm").to_pylist(), strict=True))
    assert got == [(k, float(v)) for k, v in want]


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.dictionaries(st.sampled_from(["type", "message", "traceback", "step"]),
                                            st.one_of(st.text(max_size=300), st.integers(), st.none()))))
def test_crash_decoding_never_fails(error):
    from runlens.detectors.crash.decode import CODES, decode

    decoded = decode(error)
    assert decoded.code in CODES and decoded.cause and decoded.advice
    assert len(decoded.message) <= 400


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), part_rows), min_size=1, max_size=5,
                unique_by=lambda p: (p[0], p[1])))
def test_ranks_scalars_from_the_lowest_rank_layers_lowest_rank_wins(parts):
    primary = min(rank for rank, _, _ in parts)
    want_scalars: dict[int, int] = {}
    for rank, _seq, rows in sorted(parts, key=lambda p: p[1]):
        if rank == primary:
            want_scalars.update({step: value for step, _, value in rows})
    want_layers: dict[tuple[int, str], int] = {}
    for _rank, _seq, rows in sorted(parts, key=lambda p: (-p[0], p[1])):
        want_layers.update({(step, layer): value for step, layer, value in rows})
    with tempfile.TemporaryDirectory() as tmp:
        scal = [(r, q, {"step": [x[0] for x in rows], "time": [0.0] * len(rows),
                        "loss": [float(x[2]) for x in rows]}) for r, q, rows in parts]
        lay = [(r, q, {"step": [x[0] for x in rows], "layer": [x[1] for x in rows],
                       "grad_norm": [float(x[2]) for x in rows], "weight_norm": [1.0] * len(rows)})
               for r, q, rows in parts]
        run = load_run(write_run(Path(tmp) / "r", run_meta=meta("r", layers=LAYERS), scalars=scal, layers=lay))
        assert run.scalars.column("loss").to_pylist() == [float(want_scalars[k]) for k in sorted(want_scalars)]
        keys = sorted(want_layers, key=lambda k: (k[0], LAYERS.index(k[1])))
        assert run.layers.column("grad_norm").to_pylist() == [float(want_layers[k]) for k in keys]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.booleans(), st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3)), max_size=20))
def test_layer_matrix_matches_a_reference(n_steps, full_grid, holes):
    """Dense matrix = the (step, layer) cells, NaN/absent elsewhere; regular grids take a fast path."""
    cells = {(s, layer): float(10 * s + i) for s in range(n_steps) for i, layer in enumerate(LAYERS)}
    if not full_grid:
        for s, i in holes:
            cells.pop((s, LAYERS[i]), None)
    if not cells:
        return
    keys = sorted(cells, key=lambda k: (k[0], LAYERS.index(k[1])))
    cols = {"step": [k[0] for k in keys], "layer": [k[1] for k in keys],
            "grad_norm": [cells[k] for k in keys], "weight_norm": [1.0] * len(keys)}
    with tempfile.TemporaryDirectory() as tmp:
        run = load_run(write_run(Path(tmp) / "r", run_meta=meta("r", layers=LAYERS), layers=cols))
    m = run.layer_matrix("grad_norm")
    assert m.layers == tuple(LAYERS) and m.steps.tolist() == sorted({k[0] for k in keys})
    for i, s in enumerate(m.steps.tolist()):
        for j, layer in enumerate(LAYERS):
            want = cells.get((s, layer))
            assert m.present[i, j] == (want is not None)
            assert (np.isnan(m.values[i, j]) if want is None else m.values[i, j] == want)
    # read-only on both paths: every detector shares the matrix, an in-place change would leak
    assert not m.values.flags.writeable and not m.present.flags.writeable


ODDITIES = ("nan_tail", "inf_spike", "constant", "zeros", "negative", "huge", "backwards", "null_grad")


@st.composite
def longer_runs(draw):
    """Runs long enough to reach every detector's statistics, with oddities injected."""
    n = draw(st.integers(0, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    odd = draw(st.sets(st.sampled_from(ODDITIES), max_size=3))
    steps = np.arange(n, dtype=np.int64)
    loss = np.exp(-steps / max(n / 4, 1)) + rng.normal(0, draw(st.sampled_from([0.0, 0.01, 0.3])), n)
    grad = np.abs(rng.lognormal(0, draw(st.sampled_from([0.1, 1.0, 3.0])), n))
    if "constant" in odd:
        loss[:] = 0.693
    if "zeros" in odd:
        grad[:] = 0.0
    if "negative" in odd:
        loss -= 10
    if "huge" in odd:
        grad *= 1e30
    if n and "nan_tail" in odd:
        loss[rng.integers(0, n):] = np.nan
    if n and "inf_spike" in odd:
        grad[rng.integers(0, n)] = np.inf
    if "backwards" in odd:
        steps = steps[::-1].copy()
    lsteps = steps[::draw(st.sampled_from([1, 7]))]
    k = len(lsteps)
    layer_grad = np.abs(rng.lognormal(0, 1, (k, len(LAYERS)))) * (0 if "zeros" in odd else 1)
    layers = {"step": np.repeat(lsteps, len(LAYERS)), "layer": LAYERS * k,
              "grad_norm": layer_grad.ravel(), "weight_norm": np.abs(rng.normal(5, 1, k * len(LAYERS))),
              "update_norm": np.abs(rng.normal(1e-3, 1e-3, k * len(LAYERS)))}
    scalars = {"step": steps, "time": steps * 1.0, "loss": loss, "grad_norm": grad, "lr": np.full(n, 1e-3)}
    if "null_grad" in odd:
        import pyarrow as pa

        scalars["grad_norm"] = pa.array([None] * n, pa.float64())
    es = steps[:: max(n // 8, 1)]
    evals = {"step": es, "time": es * 1.0, "val_loss": loss[: len(es)] * 1.1} if draw(st.booleans()) else None
    return {"scalars": scalars, "layers": layers if draw(st.booleans()) else None, "evals": evals}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(longer_runs(), st.sampled_from(["finished", "crashed", "killed"]))
def test_analyze_longer_odd_runs(tabs, status):
    run = make_run("odd", status=status, layer_names=LAYERS, run_meta=meta("odd", status=status, layers=LAYERS),
                   **tabs)
    diagnosis = analyze(run)
    assert_spec_object(diagnosis.to_dict())
    assert [(o.code, o.reason) for o in diagnosis.outcomes if o.state == "crashed"] == []


# Any JSON value at any key of the format's run.json table (nested keys too): the run is
# read (a value too big for int64 becomes unknown, with a warning) or refused with one line.
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63 - 2, max_value=2**80)
    | st.floats() | st.text(max_size=12),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=8)
_META_KEYS = ["run_id", "name", "started_at", "ended_at", "heartbeat_at", "flush_every", "flush_seconds",
              "host", "pid", "config", "seed", "environment", "layers", "attempts", "error",
              "layers.0.index", "layers.0.name", "layers.0.shape", "layers.0.numel", "error.step",
              "attempts.0.first_step"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_META_KEYS), _json_values, min_size=1, max_size=4),
       st.sampled_from(["finished", "running", "crashed"]))
def test_any_run_json_field_value_is_read_or_one_line_error(values, status):
    import socket

    from runlens.errors import RunFormatError

    m = meta("r", status=status, layers=LAYERS, host=socket.gethostname(),
             error={"type": "RuntimeError", "message": "x", "traceback": "", "step": 3},
             attempts=[{"started_at": "2026-01-01T00:00:00+00:00", "first_step": 0}])
    for key, value in values.items():
        head, _, rest = key.partition(".")
        if not rest:
            m[head] = value
        elif isinstance(m.get(head), list) and m[head] and isinstance(m[head][0], dict):
            m[head][0][rest.split(".", 1)[-1]] = value
        elif isinstance(m.get(head), dict):
            m[head][rest] = value
    cols = {"step": list(range(40)), "time": [float(i) for i in range(40)], "loss": [1.0 / (i + 1) for i in range(40)]}
    with tempfile.TemporaryDirectory() as tmp:
        path = write_run(Path(tmp) / "r", run_meta=m, scalars=cols)
        try:
            run = load_run(path)
        except RunFormatError as exc:
            assert "\n" not in str(exc) and "run.json" in str(exc)
            return
        out = analyze(run).to_dict()
    assert_spec_object(out)
    json.dumps(out)
