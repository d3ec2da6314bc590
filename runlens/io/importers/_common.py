"""What every importer shares: series of (step, value), their merge into
format-v1 rows, and the single place that writes an imported run.

An importer reads its source into :class:`Imported` (named series, not
rows), because sources log metrics at different steps: a ``val_loss`` every
500 steps, ``lr`` on some steps only. :func:`write_imported` then aligns
them on the steps where a training loss exists, says what it had to drop,
and writes through :class:`recorders.writer.RunWriter` like any recorder.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recorders.writer import RunWriter
from runlens.errors import ImportFailedError

# Columns of the scalars table the format names; everything else is a user scalar.
SCALAR_COLUMNS = ("lr", "grad_norm", "epoch", "loss_scale", "step_skipped")
INT_COLUMNS = frozenset({"epoch", "step_skipped"})
_RESERVED = frozenset({"step", "time", "loss", "val_loss"})


@dataclass
class Series:
    """One metric as logged: parallel arrays of steps, values and (maybe) times."""

    steps: np.ndarray
    values: np.ndarray
    times: np.ndarray | None = None

    @classmethod
    def from_lists(cls, steps, values, times=None) -> Series:
        t = None if times is None else np.asarray(times, dtype=np.float64)
        return cls(np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64), t)


@dataclass
class Imported:
    """A source read into memory: training series, eval series, notes."""

    kind: str
    source: Path
    train: dict[str, Series] = field(default_factory=dict)  # "loss" plus scalar columns
    evals: dict[str, Series] = field(default_factory=dict)  # "val_loss" plus eval columns
    warnings: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)  # run.json layers, depth order
    layer_rows: dict[str, dict[str, Series]] = field(default_factory=dict)  # layer -> column -> series
    name: str | None = None
    seed: int | None = None


def column_name(raw: str) -> str:
    """A metric name made safe as a Parquet column (``train/acc`` -> ``train_acc``)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", raw).strip("_") or "value"
    if name in _RESERVED:
        name = f"{name}_"
    return name


def parse_float(text: str | None) -> float | None:
    """A float from a log cell; None for an empty cell; NaN/Inf kept as data."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _last_per_step(s: Series) -> tuple[Series, int]:
    """Keep the last value logged for each step (a resumed run logs steps again)."""
    if len(s.steps) == 0:
        return s, 0
    rev = s.steps[::-1]
    uniq, first_in_rev = np.unique(rev, return_index=True)
    idx = len(s.steps) - 1 - first_in_rev
    dup = len(s.steps) - len(uniq)
    times = None if s.times is None else s.times[idx]
    return Series(uniq, s.values[idx], times), dup


def _align(base: Series, other: Series) -> tuple[np.ndarray, int, np.ndarray]:
    """``other``'s values on ``base``'s steps, how many it logged elsewhere, and where it is present."""
    pos = np.searchsorted(base.steps, other.steps)
    pos_c = np.minimum(pos, len(base.steps) - 1)
    hit = (pos < len(base.steps)) & (base.steps[pos_c] == other.steps)
    out = np.full(len(base.steps), np.nan)
    present = np.zeros(len(base.steps), dtype=bool)
    out[pos_c[hit]] = other.values[hit]
    present[pos_c[hit]] = True
    return out, int((~hit).sum()), present


def _table(series: dict[str, Series], key: str, label: str, warnings: list[str]):
    """Rows keyed on the steps of ``series[key]``: (steps, times, {column: (values, present)})."""
    base, dup = _last_per_step(series[key])
    if dup:
        warnings.append(f"{label}: {dup} repeated steps of {key!r} (a resumed run, or several logs per "
                        "optimizer step); kept the last value of each")
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, s in series.items():
        if name == key:
            continue
        s, _ = _last_per_step(s)
        values, missed, present = _align(base, s)
        if missed:
            warnings.append(f"{label}: {missed} values of {name!r} logged at steps without a {key!r}: not imported")
        if present.any():
            columns[name] = (values, present)
    return base, columns


def write_imported(imp: Imported, out_dir: str | Path) -> Path:
    """Write ``imp`` as a format-v1 run at ``out_dir``; the run's path."""
    out = Path(out_dir)
    if (out / "run.json").exists():
        raise ImportFailedError(f"{out} already holds a run; choose a new OUT_RUN directory")
    if "loss" not in imp.train or len(imp.train["loss"].steps) == 0:
        found = ", ".join(sorted(imp.train) + sorted(imp.evals)) or "nothing"
        raise ImportFailedError(f"{imp.source}: no training loss found (found: {found}); "
                                "map the loss column/tag explicitly")
    warnings = list(imp.warnings)
    config = dict(imp.config)
    config["imported_from"] = {"kind": imp.kind, "path": str(imp.source)}
    train = _table(imp.train, "loss", "scalars", warnings)
    evals = _table(imp.evals, "val_loss", "evals", warnings) if "val_loss" in imp.evals else None
    for name in sorted(set(imp.evals) - {"val_loss"}) if evals is None else ():
        warnings.append(f"evals: {name!r} logged without a validation loss: not imported")
    if train[0].times is None or np.isnan(train[0].times).all():
        warnings.append("the source has no timestamps: the time columns hold NaN")
    config["import_warnings"] = warnings
    writer = RunWriter(out, name=imp.name or out.name, config=config, seed=imp.seed,
                       flush_every=1_000_000, flush_seconds=1e9, heartbeat=False)
    try:
        if imp.layers:
            writer.set_layers(imp.layers)
        _write_rows(writer, train, is_eval=False)
        if evals is not None:
            _write_rows(writer, evals, is_eval=True)
        _write_layers(writer, imp)
    except BaseException as exc:
        writer.close(status="crashed", error={"type": type(exc).__name__, "message": str(exc),
                                              "traceback": "", "step": None})
        raise
    writer.close(status="finished")
    return out


def _write_rows(writer: RunWriter, table, *, is_eval: bool) -> None:
    base, columns = table
    names = list(columns)
    vals = [columns[n][0].tolist() for n in names]
    pres = [columns[n][1].tolist() for n in names]
    times = base.times.tolist() if base.times is not None else None
    add = writer.add_eval if is_eval else writer.add_scalars
    for i, (step, value) in enumerate(zip(base.steps.tolist(), base.values.tolist(), strict=True)):
        extra = {}
        for n, v, p in zip(names, vals, pres, strict=True):
            if p[i]:
                extra[n] = int(v[i]) if n in INT_COLUMNS and math.isfinite(v[i]) else v[i]
        t = math.nan if times is None else times[i]
        add(step, value, time=t, **extra)


def _write_layers(writer: RunWriter, imp: Imported) -> None:
    """Per-layer rows: one ``add_layers`` call per step, every known layer in it."""
    if not imp.layer_rows:
        return
    steps = sorted({int(s) for cols in imp.layer_rows.values() for ser in cols.values() for s in ser.steps})
    lookup = {
        (layer, col): dict(zip(ser.steps.tolist(), ser.values.tolist(), strict=True))
        for layer, cols in imp.layer_rows.items() for col, ser in cols.items()
    }
    names = [layer["name"] for layer in imp.layers if layer["name"] in imp.layer_rows]
    for step in steps:
        present = [n for n in names if step in lookup.get((n, "grad_norm"), {}) or step in lookup.get((n, "weight_norm"), {})]
        if not present:
            continue
        grad = _masked([lookup.get((n, "grad_norm"), {}).get(step) for n in present])
        weight = _masked([lookup.get((n, "weight_norm"), {}).get(step) for n in present])
        writer.add_layers(step, present, grad, weight)


def _masked(values: list[float | None]) -> np.ma.MaskedArray:
    """float32 values with None masked: the writer stores masked entries as null, NaN stays NaN."""
    mask = [v is None for v in values]
    return np.ma.masked_array([0.0 if v is None else v for v in values], mask=mask, dtype=np.float32)
