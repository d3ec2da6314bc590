"""An imported log as an in-memory :class:`~runlens.io.run.Run`: format-v1 Arrow tables built
directly from the importer's series, no run written to disk and read back.

The tables are the ones :func:`~runlens.io.importers._common.write_imported`
would write (same alignment, same columns, same types), so ``runlens import``
followed by ``analyze`` and ``analyze`` of the log itself see the same run.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pyarrow as pa

from recorders import format as fmt
from runlens.io.importers._common import INT_COLUMNS, Imported, Rows, plan
from runlens.io.run import Run, wanted_columns


def _rows_table(rows: Rows, key: str, fields: Mapping[str, pa.DataType]) -> pa.Table:
    base, key_vals, key_present, columns = rows
    n = len(base.steps)
    times = base.times if base.times is not None else np.full(n, np.nan)
    arrays = {"step": pa.array(base.steps, pa.int64()), "time": pa.array(times, pa.float64()),
              key: pa.array(key_vals, pa.float64(), mask=~key_present)}
    for name, (values, present) in columns.items():
        target = fields.get(name) or (pa.int64() if name in INT_COLUMNS else pa.float64())
        if pa.types.is_integer(target):
            ok = present & np.isfinite(values)
            arrays[name] = pa.array(np.where(ok, values, 0).astype(np.int64), target, mask=~ok)
        else:
            arrays[name] = pa.array(values, target, mask=~present)
    return pa.table(arrays)


def _layers_table(imp: Imported) -> pa.Table | None:
    if not imp.layer_rows:
        return None
    steps, names, grads, weights = [], [], [], []
    for layer, cols in imp.layer_rows.items():
        g = cols.get("grad_norm")
        w = cols.get("weight_norm")
        keys = sorted(set(() if g is None else g.steps.tolist()) | set(() if w is None else w.steps.tolist()))
        gl = {} if g is None else dict(zip(g.steps.tolist(), g.values.tolist(), strict=True))
        wl = {} if w is None else dict(zip(w.steps.tolist(), w.values.tolist(), strict=True))
        for s in keys:
            steps.append(s)
            names.append(layer)
            grads.append(gl.get(s))
            weights.append(wl.get(s))
    layer = pa.array(names, pa.string()).dictionary_encode().cast(fmt.LAYERS_FIELDS["layer"])
    table = pa.table({"step": pa.array(steps, pa.int64()), "layer": layer,
                      "grad_norm": pa.array(grads, pa.float32()), "weight_norm": pa.array(weights, pa.float32())})
    return table.sort_by([("step", "ascending")])


def _events_table(imp: Imported) -> pa.Table | None:
    if not imp.events:
        return None
    steps, kinds, values, messages = zip(*imp.events, strict=True)
    return pa.table({"step": pa.array(steps, pa.int64()), "time": pa.array([math.nan] * len(steps), pa.float64()),
                     "kind": pa.array(kinds, pa.string()), "layer": pa.array([None] * len(steps), pa.string()),
                     "value": pa.array(values, pa.float64()), "message": pa.array(messages, pa.string())})


def _project(table: pa.Table | None, wanted: Iterable[str] | None, keys: tuple[str, ...]) -> pa.Table | None:
    if table is None or wanted is None:
        return table
    return table.select(wanted_columns(list(wanted), table.column_names, keys))


def to_run(imp: Imported, shown: str, columns: Mapping[str, Any] | None = None) -> Run:
    """The run ``imp`` describes, named ``shown`` (as the user gave the path)."""
    config, train, evals = plan(imp)
    tables = {"scalars": _rows_table(train, "loss", fmt.SCALARS_FIELDS),
              "evals": None if evals is None else _rows_table(evals, "val_loss", fmt.EVALS_FIELDS),
              "layers": _layers_table(imp), "events": _events_table(imp)}
    if columns is not None:
        tables = {t: (_project(tables[t], columns[t], fmt.KEYS[t] or ("step",)) if t in columns else None)
                  for t in tables}
    status = "crashed" if imp.error else "finished"
    label = imp.name or (imp.source.stem if imp.source.is_file() else imp.source.name) or "imported"
    meta = {"format": fmt.FORMAT, "format_version": fmt.FORMAT_VERSION, "run_id": uuid.uuid4().hex,
            "name": label, "status": status, "started_at": None, "ended_at": None, "heartbeat_at": None,
            "config": config, "seed": imp.seed, "environment": {}, "layers": list(imp.layers),
            "attempts": [], "error": imp.error}
    notes = tuple(f"import ({imp.kind}): {n}" for n in config["import_warnings"])
    return Run(path=shown, meta=MappingProxyType(meta), status=status, warnings=notes, **tables)
