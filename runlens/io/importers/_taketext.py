"""A scanned console log's run as an import: its series placed on the index the reading found (steps,
epochs, rows), its events and error, and the warnings that say what the reading chose."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.importers._carry import carried
from runlens.io.importers._common import Imported, Series
from runlens.io.importers._epochlines import lines_in_epochs
from runlens.io.importers._roundline import first_of_runs
from runlens.io.importers._runacc import RunAcc, describe, reading_warnings


def take_run(path: Path, runs: list[RunAcc], n_lines: int, skipped: int, markers: Counter,
             run: int | None) -> Imported:
    """Run ``run`` (1-based; None: the last) of a scanned log as an import: its series, events, index."""
    markers = Counter(markers)  # counts popped below: the next run taken needs them whole
    config: dict[str, Any] = {}
    chosen = len(runs) if run is None else run
    if not 1 <= chosen <= len(runs):
        raise ImportFailedError(f"{path}: --run {run}: the log holds {len(runs)} run(s): {describe(runs)}")
    warnings, partial = reading_warnings(runs, run, chosen, markers, config, n_lines, skipped)
    acc = runs[chosen - 1]
    imp = Imported(kind="text", source=path, warnings=warnings, config=config)
    total = acc.per_epoch()
    within = lines_in_epochs(acc) if total is None else None
    for (is_eval, col), (steps, values) in acc.series.items():
        # No copy: the ndarray keeps the array alive through its buffer, and nothing appends any more.
        at = np.frombuffer(steps, dtype=np.int64)
        if within is not None:
            at = within.place(at, is_eval)
        s = Series(at if total is None else at // total + 1, np.frombuffer(values, dtype=np.float64))
        (imp.evals if is_eval else imp.train)[col] = first_of_runs(s, col, warnings) if is_eval else s
    imp.events, imp.error = acc.watch.all_events(), acc.watch.error
    if within is not None:
        imp.events, imp.error = within.events(imp.events, imp.error)
    if total is not None:
        imp.events = [(step // total + 1, kind, value, text) for step, kind, value, text in acc.watch.all_events()]
        if imp.error is not None and isinstance(imp.error["step"], int):
            imp.error = {**imp.error, "step": imp.error["step"] // total + 1}
        first, last = (acc.first_step or 0) // total + 1, (acc.last_step or 0) // total + 1
        imp.config["index_kind"] = "epoch"
        imp.index_why = (f"the counter i/{total} starts again every epoch and every training line kept closes "
                         f"an epoch ({total}/{total}): the epochs as logged ({first}..{last}) are the index")
    elif within is not None:
        imp.config["index_kind"], imp.index_why = within.index()
    elif markers.get("bare"):
        imp.config["index_kind"] = "row"
        imp.index_why = ("no line carries a step or names a loss: the values printed alone on their lines, "
                         "numbered from 0 in order, are the index")
        warnings.append(f"{markers['bare']} values printed alone on their lines are read as the training loss "
                        "(no line names one); `runlens import text --loss NAME` reads a named field instead")
    elif markers.get("numbered"):
        imp.config["index_kind"] = "row"
        imp.index_why = "no line carries a step: the lines with a training loss, numbered from 0 in order, are the index"
    elif acc.by_epoch and acc.by_epoch == acc.other_train:  # one value per epoch, a mean over its batches
        imp.config["index_kind"] = "epoch"
        imp.index_why = "every training line's only counter is its epoch: the epochs as logged are the index"
    warnings += carried(markers)
    imp.config["log_style"] = dict(markers.most_common())
    imp.config["import_fields"] = {col: acc.names[col] for (_, col) in acc.series if col in acc.names}
    imp.config["text_lines"] = {"read": n_lines, "skipped": skipped + partial, "runs": len(runs), "run": chosen}
    return imp
