"""A :class:`Table` and its :class:`Roles` turned into the importers' :class:`Imported` series.

- The index gives each row its step: the log's own number (a step counter
  stays a step, an epoch stays an epoch, ``run.json`` ``config.index_kind``
  says which), never shifted; rows without an index value are dropped.
- Several runs in one table (the counter falls back to or below where the
  run began: an appended launch) are told apart; the last run long enough
  to judge is read and the others are named in a warning. A counter that
  steps back only part of the way is a resume: later rows win.
- Rows logged twice for one step (several processes, LLaMA-Factory) keep
  the last value (the merge in :mod:`runlens.io.importers._common`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.importers._common import Imported, Series, Take, column_name, record_runs, val_set_column
from runlens.io.reader.names import is_val, tokens
from runlens.io.reader.objective import COMPLEMENT, NEGATED, complement
from runlens.io.reader.picks import Pick, Roles
from runlens.io.reader.table import Table

_MAX_EXTRA = 64  # user columns kept beside the roles (a 100,000-column table keeps its roles only)


#: The ways a role is derived from its columns rather than read as one (``import_derived`` lists them).
DERIVED = ("log", "sum", COMPLEMENT, NEGATED)


def segments(steps: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` row ranges of the runs in ``steps`` (a fall to the run's first value or below)."""
    out, start = [], 0
    if len(steps) == 0:
        return [(0, 0)]
    first = steps[0]
    for i in (np.flatnonzero(steps[1:] < steps[:-1]) + 1).tolist():  # only a fall can start a run
        # A fall to where the run began after a few rows: an interleaved duplicate in the first rows is not a run.
        if steps[i] <= first and (i - start >= 4 or steps[i] < first):
            out.append((start, i))
            start, first = i, steps[i]
    out.append((start, len(steps)))
    return out


def _combined(table: Table, pick: Pick) -> tuple[np.ndarray, np.ndarray]:
    """The values of a role and where they are present (a sum needs every part on the row)."""
    if pick.how == "sum":
        present = np.logical_and.reduce([table.present[c] for c in pick.columns])
        values = np.sum([table.values[c] for c in pick.columns], axis=0)
        return values, present
    values, present = table.column(pick.columns[0])
    if pick.how == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.log(values)
    elif pick.how == COMPLEMENT:
        values = complement(values)
    elif pick.how == NEGATED:
        values = -values
    if pick.how in (COMPLEMENT, NEGATED):
        # An average of nothing yet (a running mean's first print, "Average reward: nan"): not a value.
        leading = np.cumprod(~np.isfinite(values) | ~present).astype(bool)
        present = present & ~leading
    return values, present


def _per_step(got: tuple[np.ndarray, np.ndarray], pick: Pick, roles: Roles, steps: np.ndarray,
              has_step: np.ndarray, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """spaCy's training table (a ``#`` step column, ``LOSS <component>`` columns) prints each loss
    summed over the steps since the row before (its loop empties the sums at every evaluation), the
    first row over one step: divided by those steps, the rows are one loss on one scale."""
    values, present = got
    if roles.index != "#" or pick.role != "loss" or not all(c.startswith("LOSS ") for c in pick.columns):
        return got
    rows = np.flatnonzero(has_step)
    gaps = np.ones(len(values))
    gaps[rows] = np.maximum(np.diff(steps[rows], prepend=0), 1)
    notes.append("spaCy's losses are sums over the steps since the row before: divided by those steps")
    return values / gaps, present


def _steps(table: Table, roles: Roles, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    if roles.index is None:
        return np.arange(table.n, dtype=np.int64), np.ones(table.n, dtype=bool)
    if roles.index not in table.values:  # "epoch*iter": a counter that starts again every epoch
        epoch, counter = roles.index.split("*", 1)
        ep, ep_ok = table.column(epoch)
        it, it_ok = table.column(counter)
        present = ep_ok & it_ok
        per_epoch = np.nanmax(np.where(present, it, np.nan))
        values = (ep - np.nanmin(np.where(present, ep, np.nan))) * per_epoch + it
    else:
        values, present = table.column(roles.index)
    ok = present & np.isfinite(values)
    beyond = ok & (np.abs(np.where(ok, values, 0)) >= 2.0 ** 63)
    if beyond.any():  # no step of format v1 (int64): those rows are skipped, said so
        notes.append(f"{int(beyond.sum())} row(s) with a step beyond what a 64-bit integer holds: skipped")
        ok &= ~beyond
    return np.where(ok, values, 0).astype(np.int64), ok


def _choose_run(steps: np.ndarray, loss_rows: np.ndarray, imp: Imported, run: int | None) -> tuple[int, int]:
    runs = segments(steps)
    if run is not None and not 1 <= run <= len(runs):
        raise ImportFailedError(f"--run {run}: the log holds {len(runs)} run(s)")
    if len(runs) == 1:
        return runs[0]
    sizes = [int(loss_rows[a:b].sum()) for a, b in runs]
    if run is not None:
        pick = run - 1
    else:  # the last run long enough to judge (a relaunch that died at once is not the run)
        pick = max((i for i, n in enumerate(sizes) if n >= 3), default=int(np.argmax(sizes)))
    a, b = runs[pick]
    note = (f"{len(runs)} runs in one log (the step counter starts again at rows "
            f"{', '.join(str(r[0]) for r in runs[1:])}): read run {pick + 1}, steps {steps[a]}..{steps[b - 1]}; "
            "--run N reads another")
    imp.warnings.append(note)
    record_runs(imp.config, [(f"rows {x}-{y - 1}", (steps[x], steps[y - 1])) for x, y in runs], pick + 1, note)
    return a, b


def to_imported(table: Table, roles: Roles, source: Path, kind: str, *, run: int | None = None) -> Imported:
    """The series of ``table`` by ``roles`` (steps are the index's own numbers)."""
    return runs_of(table, roles, source, kind)(run)


def runs_of(table: Table, roles: Roles, source: Path, kind: str) -> Take:
    """``take(run)`` is :func:`to_imported` with ``run``: the steps and each role's values are
    worked out once for all the runs of the table."""
    # The table may be the reader's cached one, shared with the sniff and a later read: never written to.
    notes = list(table.notes)
    steps, has_step = _steps(table, roles, notes)
    combined = [(pick, _per_step(_combined(table, pick), pick, roles, steps, has_step, notes))
                for pick in roles.picks]
    loss_present = next((got[1] for pick, got in combined if pick.role == "loss"), None)
    loss_rows = loss_present & has_step if loss_present is not None else has_step
    return functools.partial(_take, table, roles, source, kind, (steps, has_step, loss_rows), notes, combined)


def _take(table: Table, roles: Roles, source: Path, kind: str, index: tuple[np.ndarray, np.ndarray, np.ndarray],
          notes: list[str], combined: list[tuple[Pick, tuple[np.ndarray, np.ndarray]]], run: int | None,
          ) -> Imported:
    steps, has_step, loss_rows = index
    imp = Imported(kind=kind, source=source, warnings=list(notes), config=dict(table.config))
    if roles.index is not None and not has_step.all():
        imp.warnings.append(f"{int((~has_step).sum())} rows without a {roles.index!r} value: not read")
    a, b = _choose_run(steps[has_step], loss_rows[has_step], imp, run)
    rows = np.flatnonzero(has_step)[a:b]
    for pick, (values, present) in combined:
        keep = rows[present[rows]]
        target = imp.evals if pick.role.startswith("val_loss") else imp.train
        name = val_set_column(pick.role.split("@", 1)[1]) if "@" in pick.role else pick.role
        target[name] = Series(steps[keep], values[keep])
    _extras(table, roles, steps, rows, imp)
    imp.config["index_kind"] = roles.index_kind
    imp.config["import_roles"] = {p.role: {"columns": list(p.columns), "how": p.how, "why": p.why}
                                  for p in roles.picks}
    imp.config["import_roles"]["index"] = {"columns": [roles.index] if roles.index else [],
                                           "how": roles.index_kind, "why": roles.index_why}
    imp.warnings[:0] = ["roles: " + line for line in roles.lines()]
    if any(p.how in DERIVED for p in roles.picks):
        imp.config["import_derived"] = [p.role for p in roles.picks if p.how in DERIVED]
    return imp


def _extras(table: Table, roles: Roles, steps: np.ndarray, rows: np.ndarray, imp: Imported) -> None:
    used = roles.used()
    extra = [c for c in table.names if c not in used]
    if len(extra) > _MAX_EXTRA:
        imp.warnings.append(f"{len(extra)} other columns: the first {_MAX_EXTRA} kept as user scalars")
        extra = extra[:_MAX_EXTRA]
    has_val = any(p.role.startswith("val_loss") for p in roles.picks)
    for c in extra:
        values, present = table.column(c)
        keep = rows[present[rows]]
        if not len(keep):
            continue
        val = is_val(tokens(c))
        if val and not has_val:
            continue
        name = column_name(c if not val or tokens(c)[0] in ("val", "eval", "valid") else "val_" + c)
        target = imp.evals if val else imp.train
        if name not in target:
            target[name] = Series(steps[keep], values[keep])
