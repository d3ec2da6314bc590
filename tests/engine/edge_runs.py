"""Odd but legal runs every detector must survive, built in memory by ``runlens.testing.build_run``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
from engine_runs import healthy, meta

from runlens.io.run import Run
from runlens.testing import build_run


def make_run(name: str = "edge", *, status: str = "finished", layer_names=(), run_meta=None,
             **tables) -> Run:
    """A run of whole tables (column values or ``pa.Table``, ``None`` for none) by table name."""
    return build_run(name=name, status=status, layer_names=layer_names, tables=tables,
                     meta=run_meta or meta(name, status=status, layers=list(layer_names)))


def _scalars(n: int, **over) -> dict:
    steps = np.arange(n, dtype=np.int64)
    cols = {"step": steps, "time": steps * 1.0, "loss": 1.0 / (1 + steps), "lr": np.full(n, 1e-3),
            "grad_norm": np.ones(n)}
    cols.update(over)
    return cols


def _layers(steps, names, **over) -> dict:
    steps = np.repeat(np.asarray(steps, dtype=np.int64), len(names))
    k = len(steps)
    cols = {"step": steps, "layer": list(names) * (k // max(len(names), 1)),
            "grad_norm": np.ones(k), "weight_norm": np.ones(k), "update_norm": np.full(k, 1e-3),
            "nonfinite": np.zeros(k, dtype=np.int32)}
    cols.update(over)
    return cols


def _short(n: int) -> Callable[[], Run]:
    def build() -> Run:
        names = ["a.weight", "b.weight"]
        return make_run(f"{n}-steps", layer_names=names, scalars=_scalars(n),
                        layers=_layers(range(n), names) if n else None)
    return build


def _all_nan() -> Run:
    n, names = 50, ["a.weight", "b.weight"]
    nan = np.full(n, np.nan)
    lay = _layers(range(0, n, 5), names)
    lay.update(grad_norm=np.full(len(lay["step"]), np.nan), weight_norm=np.full(len(lay["step"]), np.nan))
    return make_run("all-nan", layer_names=names, scalars=_scalars(n, loss=nan, grad_norm=nan, lr=nan),
                    layers=lay, evals={"step": [10, 20], "time": [1.0, 2.0], "val_loss": [np.nan, np.nan]})


def _all_null() -> Run:
    n = 40
    null = pa.array([None] * n, pa.float64())
    return make_run("all-null", scalars=_scalars(n, loss=null, grad_norm=null, lr=null))


def _inf() -> Run:
    n, names = 80, ["a.weight", "b.weight"]
    loss = 1.0 / (1 + np.arange(n))
    loss[30:] = np.inf
    gn = np.ones(n)
    gn[::7] = np.inf
    return make_run("inf", layer_names=names, scalars=_scalars(n, loss=loss, grad_norm=gn),
                    layers=_layers(range(0, n, 4), names))


def _backwards() -> Run:
    steps = np.array([5, 4, 3, 3, 9, 0, 1], dtype=np.int64)
    return make_run("backwards", scalars=_scalars(len(steps), step=steps),
                    layers=_layers([3, 1, 2], ["a.weight"]))


def _many_layers() -> Run:
    names = [f"block{i}.weight" for i in range(10_000)]
    return make_run("10k-layers", layer_names=names, scalars=_scalars(30),
                    layers=_layers([0, 10, 20], names))


def _no_optional() -> Run:
    steps = np.arange(100, dtype=np.int64)
    return make_run("minimal", scalars={"step": steps, "time": steps * 1.0, "loss": 2.0 / (1 + steps)})


def _gappy_layers() -> Run:
    names = ["a.weight", "b.weight", "c.weight"]
    lay = {"step": [0, 0, 10, 20, 20, 20], "layer": ["a.weight", "c.weight", "b.weight", "a.weight",
                                                     "b.weight", "c.weight"],
           "grad_norm": [1.0, 2.0, None, 1.0, 1.0, 1.0], "weight_norm": [1.0] * 6}
    return make_run("gappy", layer_names=names, scalars=_scalars(30), layers=lay)


def _crashed_at_zero() -> Run:
    m = meta("crash0", status="crashed", error={"type": "RuntimeError", "message": "boom",
                                                "traceback": "", "step": None})
    return make_run("crash0", status="crashed", run_meta=m)


def _weird_meta() -> Run:
    m = {"format": "runlens-run", "format_version": 1, "status": "finished", "layers": "nope",
         "error": ["not", "a", "dict"], "config": None}
    return make_run("weird", run_meta=m, scalars=_scalars(20))


def _empty_tables() -> Run:
    return make_run("empty", scalars={"step": [], "time": [], "loss": []},
                    evals={"step": [], "time": [], "val_loss": []})


def _healthy_small() -> Run:
    cols = healthy(120, 3)
    return make_run("healthy-small", layer_names=cols["layer_names"], scalars=cols["scalars"],
                    layers=cols["layers"], evals=cols["evals"])


EDGE_RUNS: dict[str, Callable[[], Run]] = {
    "0-steps": _short(0), "1-step": _short(1), "2-steps": _short(2), "3-steps": _short(3),
    "all-nan": _all_nan, "all-null": _all_null, "inf": _inf, "steps-backwards": _backwards,
    "10000-layers": _many_layers, "no-optional-columns": _no_optional, "gappy-layers": _gappy_layers,
    "crashed-at-step-0": _crashed_at_zero, "malformed-meta": _weird_meta, "empty-tables": _empty_tables,
    "healthy-small": _healthy_small,
}
