"""Synthetic per-layer runs for the gradient and weight detector tests.

A "network" here is ``n_layers`` modules, each with a weight matrix and a
bias, whose log10 norms follow a per-module level plus a time trend plus
noise. ``make_run`` turns the matrices into a ``Run`` without disk.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from runlens.detectors import REGISTRY, Context
from runlens.diagnosis import CurveVerdict
from runlens.io.run import Run


def make_run(grad: np.ndarray, weight: np.ndarray, update: np.ndarray | None = None, *,
             steps: np.ndarray | None = None, loss: np.ndarray | None = None,
             scalars: dict | None = None, biases: bool = True, zero_frac: np.ndarray | None = None,
             null_grad: np.ndarray | None = None) -> Run:
    """A run whose layers table holds ``grad``/``weight``/``update`` (steps x modules).

    Each module gets a ``weight`` matrix row and, with ``biases``, a bias
    row whose norms are 1/30 of the weight's (as real biases are).
    ``null_grad`` (steps x modules, bool) writes null gradients there.
    """
    n, m = grad.shape
    steps = np.arange(n) if steps is None else np.asarray(steps)
    meta_layers, cols = [], {k: [] for k in ("step", "layer", "grad_norm", "weight_norm", "update_norm",
                                            "grad_zero_frac")}
    params = [(j, "weight", 1.0) for j in range(m)]
    if biases:
        params = [p for j in range(m) for p in ((j, "weight", 1.0), (j, "bias", 1 / 30))]
    for idx, (j, kind, _) in enumerate(params):
        shape = [64, 64] if kind == "weight" else [64]
        meta_layers.append({"name": f"l{j}.{kind}", "index": idx, "module": f"l{j}", "kind": "Linear",
                            "shape": shape, "numel": int(np.prod(shape))})
    for i in range(n):
        for j, kind, scale in params:
            cols["step"].append(int(steps[i]))
            cols["layer"].append(f"l{j}.{kind}")
            nullg = null_grad is not None and null_grad[i, j]
            cols["grad_norm"].append(None if nullg else float(grad[i, j] * scale))
            cols["weight_norm"].append(float(weight[i, j] * scale))
            cols["update_norm"].append(None if update is None else float(update[i, j] * scale))
            cols["grad_zero_frac"].append(None if nullg else float(0.0 if zero_frac is None else zero_frac[i, j]))
    layers = pa.table({
        "step": pa.array(cols["step"], pa.int64()),
        "layer": pa.array(cols["layer"]).dictionary_encode(),
        **{k: pa.array(cols[k], pa.float32()) for k in ("grad_norm", "weight_norm", "update_norm", "grad_zero_frac")},
    })
    if update is None:
        layers = layers.drop_columns(["update_norm"])
    loss = np.ones(n) if loss is None else np.asarray(loss, dtype=float)
    sc_steps = steps if len(loss) == n else np.arange(len(loss))  # scalars may be denser than layers
    sc = {"step": pa.array(sc_steps, pa.int64()), "time": pa.array(sc_steps.astype(float)),
          "loss": pa.array(loss, pa.float64())}
    for k, v in (scalars or {}).items():
        sc[k] = pa.array(v, pa.float64())
    return Run(path="synthetic", meta={"layers": meta_layers}, status="finished",
               scalars=pa.table(sc), layers=layers)


def healthy_net(seed: int, n: int = 200, m: int = 8, *, depth_var: float = 0.3, tilt: float = 0.08,
                noise: float = 0.15, ratio: float = 1e-3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(grad, weight, update) of a healthy net: mild depth variation, noisy, slowly falling.

    ``tilt`` is a real (but small) rise of log gradient toward the loss,
    decades per module, as deep nets show without vanishing; ``ratio`` is
    the typical update/weight ratio.
    """
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)[:, None]
    level = rng.normal(0, depth_var, m) + tilt * rng.uniform(-0.5, 1.0) * np.arange(m)
    logg = level - 0.5 * t + noise * rng.standard_normal((n, m))
    logw = rng.uniform(0.5, 1.5, m) + 0.05 * t
    logr = np.log10(ratio) + rng.normal(0, 0.3, m) + 0.2 * rng.standard_normal((n, m))
    w = 10 ** logw
    return 10 ** logg, w, w * 10 ** logr


def falling_loss(seed: int, n: int, *, start: float = 2.3, floor: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    return (floor + (start - floor) * np.exp(-5 * t)) * np.exp(0.05 * rng.standard_normal(n))


def flat_loss(seed: int, n: int, *, level: float = 2.3) -> np.ndarray:
    return level * np.exp(0.02 * np.random.default_rng(seed).standard_normal(n))


def check(code: str, run: Run, *, curve: str | None = None, first_nonfinite: int | None = None, **params):
    """The findings of detector ``code`` on ``run``.

    ``first_nonfinite`` makes the run's loss NaN from that step on: detectors
    read the first non-finite step from the signals, as in a real analysis.
    """
    if first_nonfinite is not None:
        run = with_nan_loss_from(run, first_nonfinite)
    ctx = Context(curve=CurveVerdict(curve, "test") if curve else None)
    found = list(REGISTRY[code](**params).check(run, ctx))
    assert ctx.signals_of(run).first_nonfinite_step == first_nonfinite or first_nonfinite is None
    return found


def with_nan_loss_from(run: Run, step: int) -> Run:
    """``run`` with its training loss NaN at every step >= ``step`` (one row added if none is)."""
    sc = run.scalars
    steps = sc.column("step").to_numpy()
    if not (steps >= step).any():
        row = {c: [None] for c in sc.column_names}
        row.update(step=[step], loss=[float("nan")])
        sc = pa.concat_tables([sc, pa.table(row, schema=sc.schema)])
        steps = sc.column("step").to_numpy()
    loss = np.where(steps >= step, np.nan, sc.column("loss").to_numpy(zero_copy_only=False))
    sc = sc.set_column(sc.column_names.index("loss"), "loss", pa.array(loss, pa.float64()))
    return Run(path=run.path, meta=run.meta, status=run.status, scalars=sc, evals=run.evals, layers=run.layers,
               events=run.events)


def required_run(grad: np.ndarray, weight: np.ndarray, *, loss: np.ndarray | None = None,
                 lr: np.ndarray | float | None = None, config: dict | None = None, shapes: bool = True,
                 steps: np.ndarray | None = None) -> Run:
    """A run with only the columns format v1 requires, as another writer may log it.

    Layers: step, layer, grad_norm, weight_norm (one weight matrix per module,
    ``l{j}.weight``, 64x64 when ``shapes``); run.json ``module``/``kind``
    empty; scalars: step, time, loss, plus ``lr`` when given; no events.
    """
    n, m = grad.shape
    steps = np.arange(n) if steps is None else np.asarray(steps)
    meta_layers = [{"name": f"l{j}.weight", "index": j, "module": "", "kind": "",
                    **({"shape": [64, 64], "numel": 4096} if shapes else {})} for j in range(m)]
    layers = pa.table({
        "step": pa.array(np.repeat(steps, m), pa.int64()),
        "layer": pa.array([f"l{j}.weight" for _ in range(n) for j in range(m)]).dictionary_encode(),
        "grad_norm": pa.array(grad.reshape(-1), pa.float32()),
        "weight_norm": pa.array(weight.reshape(-1), pa.float32()),
    })
    loss = np.ones(n) if loss is None else np.asarray(loss, dtype=float)
    sc_steps = steps if len(loss) == n else np.arange(len(loss))
    sc = {"step": pa.array(sc_steps, pa.int64()), "time": pa.array(sc_steps.astype(float)),
          "loss": pa.array(loss, pa.float64())}
    if lr is not None:
        sc["lr"] = pa.array(np.broadcast_to(np.asarray(lr, dtype=float), len(sc_steps)), pa.float64())
    return Run(path="synthetic", meta={"layers": meta_layers, "config": config or {}}, status="finished",
               scalars=pa.table(sc), layers=layers)


def sgd_weights(seed: int, grad: np.ndarray, lr: float, *, w0: float = 5.0, drift: float = 0.5) -> np.ndarray:
    """Weight norms that plain SGD at ``lr`` could produce: each step changes a
    module's norm by at most ``drift`` of ``lr x ||g||`` (float32 as recorded)."""
    rng = np.random.default_rng(seed)
    step = lr * grad * rng.uniform(-drift, drift, grad.shape)
    step[0] = 0.0
    return (w0 * np.exp(rng.normal(0, 0.2, grad.shape[1])) + np.cumsum(step, axis=0)).astype(np.float32)


def adam_weights(seed: int, n: int, m: int, lr: float, *, numel: int = 4096, w0: float = 5.0) -> np.ndarray:
    """Weight norms of an Adam-like run: each element moves by ~lr a step, so a
    module's norm drifts by a fraction of ``lr x sqrt(numel)`` per step,
    whatever its gradient."""
    rng = np.random.default_rng(seed)
    step = lr * np.sqrt(numel) * rng.normal(0.02, 0.1, (n, m))
    step[0] = 0.0
    return (w0 * np.exp(rng.normal(0, 0.2, m)) + np.cumsum(step, axis=0)).astype(np.float32)
