"""An MLflow file store: ``mlruns/<experiment>/<run>/`` folders.

A run folder holds ``metrics/<key>`` files (one ``timestamp value step``
line per logged value; ``/`` in a key makes subfolders), ``params/<key>``
files (the value as text) and ``meta.yaml`` (``run_name``, ``status``,
``start_time``, ...). The source may be a run folder, an experiment folder
or the ``mlruns`` root: with several runs the most recently started is
imported (``run=N`` picks the N-th by start time) and the warnings list
them. Metric keys take roles by the reader's words; timestamps (ms) become
the ``time`` column. ``meta.yaml`` is read with PyYAML when installed,
else with a reader of its flat ``key: value`` lines (all MLflow writes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.bounded import in_int64, load_yaml
from runlens.io.importers._common import Imported, Series, record_runs
from runlens.io.importers._names import Mapper


def parse_meta(text: str) -> dict[str, Any]:
    """``meta.yaml``: PyYAML if present, else its flat ``key: value`` lines (quotes stripped)."""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        try:
            data = load_yaml(text)  # aliases refused: a billion-laughs meta.yaml is not expanded
            return data if isinstance(data, dict) else {}
        except Exception:  # noqa: BLE001 - a damaged meta.yaml: fall back to the line reader
            pass
    out: dict[str, Any] = {}
    for line in text.splitlines():
        if not line or line[0] in " \t#-" or ":" not in line:
            continue
        key, _, value = line.partition(":")
        value = value.strip().strip("'\"")
        out[key.strip()] = int(value) if value.lstrip("-").isdigit() else (value or None)
    return out


def find_runs(source: Path) -> list[Path]:
    """Run folders at or below ``source`` (a run, an experiment, or ``mlruns``), oldest first."""
    if (source / "metrics").is_dir():
        found = [source]
    else:
        found = [p.parent for p in source.glob("*/metrics") if p.is_dir()]
        found += [p.parent for p in source.glob("*/*/metrics") if p.is_dir()]
    runs = sorted(set(found), key=lambda p: (_meta(p).get("start_time") or 0, str(p)))
    if not runs:
        raise ImportFailedError(f"{source}: no MLflow run here (a folder with metrics/ and meta.yaml)")
    return runs


def _meta(run: Path) -> dict[str, Any]:
    path = run / "meta.yaml"
    return parse_meta(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else {}


def _metric(path: Path) -> tuple[Series, int, int]:
    """The metric's series, the lines that are not ``timestamp value step``, the steps beyond int64."""
    steps: list[int] = []
    values: list[float] = []
    times: list[float] = []
    bad = beyond = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.split()
        if len(parts) < 2:
            bad += bool(line.strip())
            continue
        try:
            t, v = float(parts[0]) / 1000.0, float(parts[1])
            s = int(parts[2]) if len(parts) > 2 else len(steps)
        except ValueError:
            bad += 1
            continue
        if not in_int64(s):  # the step column is int64: such a step is unknown, its line skipped
            beyond += 1
            continue
        steps.append(s)
        values.append(v)
        times.append(t)
    return Series.from_lists(steps, values, times), bad, beyond


def read(source: str | Path, *, loss: str | None = None, val_loss: str | None = None,
         run: int | None = None) -> Imported:
    """Read one run of an MLflow file store; ``loss``/``val_loss`` name metric keys."""
    src = Path(source)
    if not src.is_dir():
        raise ImportFailedError(f"{src}: not a folder: an MLflow store is a folder (mlruns/<exp>/<run>)")
    runs = find_runs(src)
    chosen = len(runs) if run is None else run
    if not 1 <= chosen <= len(runs):
        raise ImportFailedError(f"{src}: --run {run}: the store holds {len(runs)} run(s)")
    folder = runs[chosen - 1]
    meta = _meta(folder)
    imp = Imported(kind="mlflow", source=src, name=meta.get("run_name") or folder.name)
    if len(runs) > 1:
        names = ", ".join(f"{i} {_meta(r).get('run_name') or r.name}" for i, r in enumerate(runs, 1))
        imp.warnings.append(f"the store holds {len(runs)} runs ({names}); imported run {chosen} "
                            f"({folder.name}); pick another with --run N")
        record_runs(imp.config, [(_meta(r).get("run_name") or r.name, None) for r in runs], chosen, imp.warnings[-1])
    fields: dict[str, str] = {}
    mapper = Mapper(loss, val_loss)
    for path in sorted(p for p in (folder / "metrics").rglob("*") if p.is_file()):
        key = path.relative_to(folder / "metrics").as_posix()
        series, bad, beyond = _metric(path)
        if bad:
            imp.warnings.append(f"metric {key!r}: {bad} lines are not 'timestamp value step': skipped")
        if beyond:
            imp.warnings.append(f"metric {key!r}: {beyond} lines with a step beyond what a 64-bit "
                                "integer holds: skipped")
        is_eval, col = mapper(key)
        (imp.evals if is_eval else imp.train)[col] = series
        fields[col] = key
    params = {p.relative_to(folder / "params").as_posix(): p.read_text(encoding="utf-8", errors="replace").strip()
              for p in (folder / "params").rglob("*") if p.is_file()} if (folder / "params").is_dir() else {}
    imp.config.update(params)
    imp.config["mlflow"] = {k: meta[k] for k in ("run_id", "run_name", "experiment_id", "status") if k in meta}
    imp.config["import_fields"] = fields
    if not fields:
        raise ImportFailedError(f"{folder}: the MLflow run logged no metrics")
    imp.train = {k: v for k, v in imp.train.items() if len(v.steps) or not np.isnan(v.values).all()}
    return imp
