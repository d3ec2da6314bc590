"""Synthetic per-layer runs for the gradient and weight detector tests.

A "network" here is ``n_layers`` modules, each with a weight matrix and a
bias, whose log10 norms follow a per-module level plus a time trend plus
noise. ``make_run`` turns the matrices into a ``Run`` in memory through
``runlens.testing.build_run``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from runlens.detectors import REGISTRY, Context
from runlens.diagnosis import CurveVerdict
from runlens.io.run import Run
from runlens.testing import build_run


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
    params = [(j, "weight", 1.0) for j in range(m)]
    if biases:
        params = [p for j in range(m) for p in ((j, "weight", 1.0), (j, "bias", 1 / 30))]
    meta_layers = []
    for idx, (j, kind, _) in enumerate(params):
        shape = [64, 64] if kind == "weight" else [64]
        meta_layers.append({"name": f"l{j}.{kind}", "index": idx, "module": f"l{j}", "kind": "Linear",
                            "shape": shape, "numel": int(np.prod(shape))})

    def per_param(values: np.ndarray, scaled: bool = True) -> np.ndarray:
        return np.stack([values[:, j] * (scale if scaled else 1.0) for j, _, scale in params], axis=1)

    null = per_param(np.zeros((n, m), bool) if null_grad is None else np.asarray(null_grad, bool), False)
    zeros = np.zeros((n, m)) if zero_frac is None else zero_frac
    layers = {"grad_norm": np.ma.masked_array(per_param(grad), null), "weight_norm": per_param(weight),
              **({} if update is None else {"update_norm": per_param(update)}),
              "grad_zero_frac": np.ma.masked_array(per_param(zeros, False), null)}
    loss = np.ones(n) if loss is None else np.asarray(loss, dtype=float)
    sc_steps = steps if len(loss) == n else np.arange(len(loss))  # scalars may be denser than layers
    extra = {k: pa.array(v, pa.float64()) for k, v in (scalars or {}).items()}
    return build_run(loss=loss, steps=sc_steps, scalars=extra, layers=layers, layer_steps=steps,
                     layer_names=[d["name"] for d in meta_layers], meta={"layers": meta_layers})


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
    return build_run(name=run.path, status=run.status, meta=run.meta,
                     tables={"scalars": sc, "evals": run.evals, "layers": run.layers, "events": run.events})


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
    loss = np.ones(n) if loss is None else np.asarray(loss, dtype=float)
    sc_steps = steps if len(loss) == n else np.arange(len(loss))
    extra = {} if lr is None else {"lr": np.broadcast_to(np.asarray(lr, dtype=float), len(sc_steps))}
    return build_run(loss=loss, steps=sc_steps, scalars=extra,
                     layers={"grad_norm": grad, "weight_norm": weight}, layer_names=[d["name"] for d in meta_layers], layer_steps=steps,
                     meta={"layers": meta_layers, "config": config or {}})


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
