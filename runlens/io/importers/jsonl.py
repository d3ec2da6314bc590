"""JSON lines: one metrics object per line (detectron2 ``metrics.json``, mmdet/mmengine
``*.log.json``, ``json.dumps(metrics)`` loggers).

The step is the first step key present (``global_step``, ``step``,
``iteration``, ``iter``, ...; ``--step`` names another). mmdet/mmcv logs
count ``iter`` within each ``epoch``; there the step is the iterations of
the epochs before plus ``iter``. A line with ``"mode": "val"`` (or
``"test"``) is a validation pass at the last training step. Names are
mapped by the alias table (``total_loss`` is the training loss); nested
objects are flattened with ``/``. Lines that are not an object (a
truncated last line of a killed run) are counted and skipped.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.bounded import in_int64
from runlens.io.importers._common import Imported, Series, require_file
from runlens.io.importers._names import STEP_KEYS, Mapper
from runlens.io.importers._textline import mapping_fields, parse_mapping
from runlens.io.importers.text import _describe, _RunAcc, check_text_file

_SKIP_KEYS = frozenset({"mode", "time", "data_time", "eta_seconds", "timestamp", "memory"})


class _Steps:
    """The step of each object: a step key, or mmdet's per-epoch ``iter`` made cumulative."""

    def __init__(self, step_key: str | None) -> None:
        self.key = step_key
        self.offset = 0
        self.epoch: float | None = None
        self.epoch_max = 0
        self.last: int | None = None

    def __call__(self, d: dict, is_eval: bool) -> tuple[int | None, str | None]:
        keys = (self.key,) if self.key else STEP_KEYS
        key = next((k for k in keys if isinstance(d.get(k), (int, float)) and not isinstance(d.get(k), bool)
                    and math.isfinite(d[k])), None)
        if is_eval:
            return (self.last if self.last is not None else (int(d[key]) if key else None)), key
        if key is None:
            return None, None
        step = int(d[key])
        epoch = d.get("epoch")
        if key == "iter" and isinstance(epoch, (int, float)) and "mode" in d:
            if self.epoch is not None and epoch != self.epoch:
                self.offset += self.epoch_max
                self.epoch_max = 0
            self.epoch = epoch
            self.epoch_max = max(self.epoch_max, step)
            step += self.offset
        if in_int64(step):
            self.last = step
        return step, key


def read(source: str | Path, *, step: str | None = None, loss: str | None = None,
         val_loss: str | None = None, run: int | None = None) -> Imported:
    """Read a JSON-lines metrics file; ``step``/``loss``/``val_loss`` name keys, ``run`` picks a run."""
    path = Path(source)
    require_file(path, "jsonl")
    encoding = check_text_file(path)
    mapper, steps = Mapper(loss, val_loss), _Steps(step)
    runs, n, bad, no_step, beyond = [_RunAcc(1)], 0, 0, 0, 0
    with open(path, encoding=encoding, errors="replace") as f:
        for raw in f:
            n += 1
            if not raw.strip():
                continue
            d = parse_mapping(raw.strip())
            if d is None:
                bad += 1
                continue
            is_eval = str(d.get("mode", "train")).lower() in ("val", "test", "eval")
            s, key = steps(d, is_eval)
            if s is None:
                no_step += 1
                continue
            if not in_int64(s):  # a step of 1e300 or 2**64: unknown, not an OverflowError in the arrays
                beyond += 1
                continue
            cur = runs[-1]
            if not is_eval and cur.rows and cur.first_step is not None and s < (cur.last_step or 0) \
                    and s <= cur.first_step:
                cur = _RunAcc(n)
                runs.append(cur)
            for name, value in mapping_fields(d):
                if name == key or name in _SKIP_KEYS or name in STEP_KEYS:
                    continue
                ev, col = mapper(name, is_eval)
                cur.put(ev, col, name, s, value)
            cur.rows += 1
            cur.last_line = n
            cur.names.setdefault("step", key)
            if not is_eval:
                cur.first_step = s if cur.first_step is None else cur.first_step
                cur.last_step = s
    return _finish(path, runs, run, n, bad, no_step, step, beyond=beyond)


def _finish(path: Path, runs: list[_RunAcc], run: int | None, n: int, bad: int, no_step: int,
            step: str | None, *, beyond: int = 0) -> Imported:
    runs = [r for r in runs if r.rows]
    if not runs:
        what = f"a {step!r} key" if step else "a step key (" + ", ".join(STEP_KEYS[:4]) + ", ...)"
        raise ImportFailedError(f"{path}: no JSON object with {what} in {n} lines")
    chosen = len(runs) if run is None else run
    if not 1 <= chosen <= len(runs):
        raise ImportFailedError(f"{path}: --run {run}: the file holds {len(runs)} run(s): {_describe(runs)}")
    imp = Imported(kind="jsonl", source=path)
    if len(runs) > 1:
        imp.warnings.append(f"the file holds {len(runs)} runs (the step went back to its start): "
                            f"{_describe(runs)}; imported run {chosen}; pick another with --run N")
    if bad:
        imp.warnings.append(f"{bad} lines are not a JSON object: skipped")
    if no_step:
        imp.warnings.append(f"{no_step} objects carry no step: skipped")
    if beyond:
        imp.warnings.append(f"{beyond} objects with a step beyond what a 64-bit integer holds: skipped")
    acc = runs[chosen - 1]
    for (is_eval, col), (st, vals) in acc.series.items():
        s = Series(np.frombuffer(st, dtype=np.int64).copy(), np.frombuffer(vals, dtype=np.float64).copy())
        (imp.evals if is_eval else imp.train)[col] = s
    imp.config["import_fields"] = {"step": acc.names.get("step"),
                                   **{col: acc.names[col] for (_, col) in acc.series if col in acc.names}}
    return imp
