"""Columns of healthy-looking runs and run folders of them, for engine tests.

``write_run(dir, scalars=..., layers=...)`` writes run.json and one part per
table (or several: pass a list of column dicts, or ``(rank, seq, columns)``
tuples) through the tests' one writer (``tests/runs.py``). ``healthy(...)``
gives the columns of a healthy-looking run: a loss that decays with noise and
then settles, stable gradient norms, slowly moving weights, a validation loss
that follows training.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from runlens.testing import format_table as to_table  # noqa: F401 - the name the engine tests import
from runlens.testing import run_meta
from tests import runs


def meta(name: str = "run", *, status: str = "finished", layers: list[str] = (), **extra: Any) -> dict:
    """run.json of a finished run written elsewhere (another host), ``extra`` keys replacing values."""
    return run_meta(name, status=status, layers=layers, **{
        "heartbeat_at": "2026-01-01T00:00:00+00:00", "host": "elsewhere", "config": {"lr": 0.001},
        "environment": {"python": "3.12"}, **extra})


def write_part(root: Path, table: str, columns: Mapping[str, Any] | pa.Table, rank: int = 0,
               seq: int = 0) -> Path:
    return runs.write_part(root, table, columns, rank, seq)


def write_run(root: os.PathLike | str, *, run_meta: dict | None = None, **tables: Any) -> Path:
    return runs.write_run(root, tables, meta=run_meta or meta(Path(root).name))


def healthy(n: int = 600, n_layers: int = 4, *, seed: int = 0, layers_every: int = 10,
            evals_every: int = 50) -> dict[str, Any]:
    """Columns (and layer names) of a run that trains well: nothing should fire on it."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n, dtype=np.int64)
    loss = 0.3 + 2.0 * np.exp(-steps / (n / 6)) + rng.normal(0, 0.02, n) * np.exp(-steps / n)
    grad = 1.0 + 0.5 * np.exp(-steps / (n / 4)) + rng.normal(0, 0.05, n)
    scalars = {"step": steps, "time": 1.7e9 + steps * 0.1, "loss": loss, "lr": np.full(n, 1e-3),
               "grad_norm": np.abs(grad), "epoch": steps // 100}
    names = [f"layer{i}.weight" for i in range(n_layers)]
    ls = steps[::layers_every]
    rows = len(ls) * n_layers
    lay_step = np.repeat(ls, n_layers)
    lay_name = names * len(ls)
    base = np.tile(np.linspace(0.2, 0.3, n_layers), len(ls))
    weight = np.tile(np.linspace(5, 6, n_layers), len(ls)) * (1 + 0.1 * lay_step / n)
    layers = {"step": lay_step, "layer": lay_name,
              "grad_norm": base * np.exp(rng.normal(0, 0.1, rows)),
              "weight_norm": weight, "update_norm": weight * 1e-3 * np.exp(rng.normal(0, 0.1, rows)),
              "grad_abs_max": base * 0.1, "grad_zero_frac": np.zeros(rows),
              "nonfinite": np.zeros(rows, dtype=np.int32)}
    es = steps[evals_every - 1::evals_every]
    evals = {"step": es, "time": 1.7e9 + es * 0.1, "val_loss": loss[es] + 0.05}
    return {"scalars": scalars, "layers": layers, "evals": evals, "layer_names": names}


def write_healthy(root: os.PathLike | str, n: int = 600, n_layers: int = 4, **kw: Any) -> Path:
    cols = healthy(n, n_layers, **kw)
    return write_run(root, run_meta=meta(Path(root).name, layers=cols["layer_names"]),
                     scalars=cols["scalars"], layers=cols["layers"], evals=cols["evals"])


def live_meta(**extra: Any) -> dict:
    """run.json of a run still being written by this very process."""
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc).isoformat()
    return meta(status="running", heartbeat_at=now, started_at=now, host=socket.gethostname(),
                pid=os.getpid(), **extra)


HEALTHY_VARIANTS = ("base", "noisy", "cosine_lr", "amp_skips", "no_layers", "short", "long", "dense_evals")


def healthy_variant(root: os.PathLike | str, variant: str, seed: int = 0) -> Path:
    """A healthy run in one of several shapes real healthy runs take; nothing may fire on any."""
    n = {"short": 150, "long": 20_000}.get(variant, 1200)
    cols = healthy(n, 4, seed=seed, layers_every=50 if variant == "long" else 10,
                   evals_every=10 if variant == "dense_evals" else max(n // 12, 1))
    s, steps = cols["scalars"], cols["scalars"]["step"]
    rng = np.random.default_rng(1000 + seed)
    if variant == "noisy":
        # minibatch noise scales with the loss level, as it does in practice
        s["loss"] = (s["loss"] * np.exp(rng.normal(0, 0.08, n))).astype(float)
    if variant == "cosine_lr":
        s["lr"] = 1e-3 * 0.5 * (1 + np.cos(np.pi * steps / n))
    if variant == "amp_skips":
        _amp_skips(cols, [0, 1, 2, 3, n // 3])
    layers = None if variant == "no_layers" else cols["layers"]
    return write_run(root, run_meta=meta(Path(root).name, layers=cols["layer_names"]),
                     scalars=s, layers=layers, evals=cols["evals"])


def _amp_skips(cols: dict, skipped: list[int]) -> None:
    """GradScaler behaviour: inf gradients on the skipped steps, the scale halved each time."""
    s, lay = cols["scalars"], cols["layers"]
    n = len(s["step"])
    s["step_skipped"] = np.isin(s["step"], skipped).astype(np.int64)
    s["grad_norm"] = np.where(s["step_skipped"] == 1, np.inf, s["grad_norm"])
    s["loss_scale"] = 65536.0 / 2.0 ** np.cumsum(s["step_skipped"])
    hit = np.isin(lay["step"], skipped)
    lay["grad_norm"] = np.where(hit, np.inf, lay["grad_norm"])
    lay["nonfinite"] = np.where(hit, 7, lay["nonfinite"]).astype(np.int32)
    assert len(s["loss_scale"]) == n
