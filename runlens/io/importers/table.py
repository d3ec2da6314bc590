"""The ``table`` kind: any structured log (JSON document or lines, a delimited table) through
the structure-first reader (:mod:`runlens.io.reader`).

The CSV, CSVLogger, JSON lines and ``trainer_state.json`` importers are this
reader now: what a column means is decided by :mod:`runlens.io.reader.roles`
from its name and values, whichever tool wrote the file.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.importers._common import Imported, Series, Take
from runlens.io.reader import folders, read_table, scalars
from runlens.io.reader.build import runs_of, to_imported
from runlens.io.reader.names import is_val, tokens
from runlens.io.reader.roles import Roles, infer
from runlens.io.reader.table import Table


def signal_roles(roles: Roles) -> list[str]:
    return [p.role for p in roles.picks if p.role in ("loss", "grad_norm", "loss_scale")
            or p.role.startswith("val_loss")]


def from_table(table: Table, source: Path, *, loss: str | None = None, val_loss: str | None = None,
               step: str | None = None, run: int | None = None, kind: str = "table",
               named: dict[str, str] | None = None) -> Imported:
    """Roles for ``table`` and its series; refuses a table with no training signal, naming what it holds."""
    return table_runs(table, source, loss=loss, val_loss=val_loss, step=step, kind=kind, named=named)(run)


def table_runs(table: Table, source: Path, *, loss: str | None = None, val_loss: str | None = None,
               step: str | None = None, kind: str = "table", named: dict[str, str] | None = None) -> Take:
    """:func:`from_table` for each run of ``table``: ``take(run)``, the roles inferred once for all."""
    alias = table.aliases.get
    loss, val_loss, step = (alias(c, c) if c else c for c in (loss, val_loss, step))
    named = {k: alias(c, c) for k, c in (named or {}).items()}
    try:
        roles = infer(table, loss=loss, val_loss=val_loss, step=step, named=named)
    except KeyError as exc:
        names = ", ".join(table.names[:20]) + (" ..." if len(table.names) > 20 else "")
        role, column = exc.args
        raise ImportFailedError(f"{source}: no {role} column {column!r} (columns: {names})") from None
    if not signal_roles(roles):
        names = ", ".join(table.names[:12]) + (" ..." if len(table.names) > 12 else "")
        raise ImportFailedError(f"{source}: no training loss, validation loss or gradient norm among the "
                                f"columns of this {table.shape} table of {table.n} rows ({names or 'none'}); "
                                "name one with --loss")
    return runs_of(table, roles, source, kind)


def read(source: str | Path, *, loss: str | None = None, val_loss: str | None = None,
         step: str | None = None, run: int | None = None, conflict: str | None = None,
         lr: str | None = None, grad_norm: str | None = None) -> Imported:
    """The series of the structured log at ``source`` (a file, or a folder holding one)."""
    return parse_runs(source, loss=loss, val_loss=val_loss, step=step, conflict=conflict, lr=lr, grad_norm=grad_norm)(run)


def parse_runs(source: str | Path, *, loss: str | None = None, val_loss: str | None = None,
               step: str | None = None, conflict: str | None = None, lr: str | None = None,
               grad_norm: str | None = None) -> Take:
    """The structured log read once: ``take(run)`` is :func:`read` with ``run``."""
    path = Path(source)
    named = {k: v for k, v in (("lr", lr), ("grad_norm", grad_norm)) if v is not None}
    options: dict[str, Any] = dict(loss=loss, val_loss=val_loss, step=step, named=named)
    if path.is_dir():
        return _parse_folder(path, options)
    table = read_table(path, conflict)
    if table is None:
        raise ImportFailedError(f"{path}: not a JSON document, JSON lines or a delimited table")
    if table.n == 0:
        raise ImportFailedError(f"{path}: a {table.shape} holding no numeric rows")
    take = table_runs(table, path, **options)
    return functools.partial(_beside, take, _hyperparameters([path.parent]), None)


def _hyperparameters(where: list[Path]) -> list[tuple[dict, list[str]]]:
    """What :func:`folders.folder_config` finds in each folder, nearest first, and its notes."""
    found = []
    for folder in where:
        notes: list[str] = []
        found.append((folders.folder_config(folder, notes), notes))
    return found


def _beside(take: Take, found: list[tuple[dict, list[str]]], source: Path | None, run: int | None) -> Imported:
    """Run ``run`` with the hyperparameters ``found`` beside the log; ``source``: the folder the log
    was found in, when it was named instead of the log."""
    imp = take(run)
    for config, notes in found:
        imp.config.update(copy.deepcopy(config))  # each run its own: a run's config is its to keep
        imp.warnings.extend(notes)
    if source is not None:
        imp.source = source
    return imp


def folder_table(folder: Path) -> tuple[Table, Path, list[str]] | None:
    """The table of a log folder, the file (or folder) it came from, and notes; None when none holds a signal."""
    table = folders.dvclive(folder)
    if table is not None:
        return table, folder, []
    chosen, note = folders.lightning_version(folder)
    if chosen is not None and (table := read_table(chosen)) is not None:
        return table, chosen, [note] if note else []
    states = sorted(folder.rglob("trainer_state.json"), key=_checkpoint)
    if states and (table := read_table(states[-1])) is not None:
        return table, states[-1], ([f"{len(states)} trainer_state.json files: read {states[-1].relative_to(folder)} "
                                    "(the latest checkpoint)"] if len(states) > 1 else [])
    found, skipped, read = [], [], []
    for path in folders.candidates(folder):
        rel = path.relative_to(folder).as_posix()
        try:
            table = read_table(path)
        except ImportFailedError as exc:
            skipped.append(f"{rel} ({exc})")
            continue
        if table is not None and scalars.is_download(table):
            read.append((path, table))  # only the downloads are kept: a folder may hold large tables
        if table is None or table.n == 0 or not signal_roles(infer(table)):
            skipped.append(f"{rel} (no training signal in it)")
            continue
        found.append((table.n, path, table))
    merged = _scalar_downloads(folder, read)
    if merged is not None:
        return merged
    if not found:
        return None
    n, path, table = max(found, key=lambda f: f[0])
    notes = [f"read {path.relative_to(folder).as_posix()}, the log with the most rows"]
    others = [f"{p.relative_to(folder).as_posix()} ({k} rows)" for k, p, _ in found if p != path]
    if others or skipped:
        notes.append("not read: " + "; ".join(others + skipped)[:2000])
    return table, path, notes


def _scalar_downloads(folder: Path, read: list[tuple[Path, Table]]) -> tuple[Table, Path, list[str]] | None:
    """TensorBoard scalar downloads (one tag a file) as one table, when together they hold a signal."""
    table = scalars.folder(read)
    if table is None or not signal_roles(infer(table)):
        return None
    files = [p.relative_to(folder).as_posix() for p, _ in read]
    return table, folder, [f"read {len(files)} TensorBoard scalar CSVs as one table: {', '.join(files)}"[:2000]]


def _checkpoint(path: Path) -> tuple[int, float]:
    digits = "".join(ch for ch in path.parent.name if ch.isdigit())
    return (int(digits) if digits and path.parent.name.startswith("checkpoint") else 1 << 62, path.stat().st_mtime)


def _parse_folder(folder: Path, options: dict) -> Take:
    got = folder_table(folder)
    if got is None:
        raise ImportFailedError(f"{folder}: is a directory and no file in it holds a training loss, validation "
                                "loss or gradient norm")
    table, path, notes = got
    take = table_runs(table, path, **options)
    beside = path if path.is_dir() else path.parent  # hyperparameters beside the log, then in the folder
    return functools.partial(_beside, functools.partial(noted, take, notes),
                             _hyperparameters([beside] if beside == folder else [beside, folder]), folder)


def noted(take: Take, notes: list[str], run: int | None) -> Imported:
    imp = take(run)
    imp.warnings[:0] = notes
    return imp


def reinfer(imp: Imported) -> Imported:
    """``imp`` with its roles decided by the table reader when its own importer found no loss.

    Tracker folders and console logs name their metrics freely (``MAE loss per step``,
    ``train/box_loss`` parts, ``train_loss_local``): their series, gathered into one table on their
    steps, go through the same role inference as every structured log.
    """
    if "loss" in imp.train or any(k.startswith("val_loss") for k in imp.evals):
        return imp
    # Each training series under the name the log gave it (a role's column, ``grad_norm``, was some
    # name such as ``grad_norm_square``), so the roles decided here name the log's own columns.
    raw = imp.config.get("import_fields") or {}
    series: dict[str, Series] = {}
    for k, s in imp.train.items():
        own = raw.get(k)
        series[own if isinstance(own, str) and own not in imp.train and own not in series else k] = s
    series.update({(k if is_val(tokens(k)) else f"val_{k}"): s for k, s in imp.evals.items()})
    if not series:
        return imp
    steps = np.unique(np.concatenate([s.steps for s in series.values()]))
    values, present = {"step": steps.astype(np.float64)}, {"step": np.ones(len(steps), dtype=bool)}
    for name, s in series.items():
        pos = np.searchsorted(steps, s.steps)
        col, mask = np.full(len(steps), np.nan), np.zeros(len(steps), dtype=bool)
        col[pos], mask[pos] = s.values, True
        values[name], present[name] = col, mask
    table = Table(len(steps), values, present, f"{imp.kind} series")
    roles = infer(table, step="step")
    if not signal_roles(roles):
        return imp
    roles.index_why = imp.index_why or f"the steps {imp.kind} recorded"
    out = to_imported(table, roles, imp.source, imp.kind)
    out.warnings = imp.warnings + out.warnings
    out.config = {**imp.config, **out.config}
    out.layers, out.layer_rows, out.name, out.seed, out.events, out.error = (
        imp.layers, imp.layer_rows, imp.name, imp.seed, imp.events, imp.error)
    out.config["index_kind"] = imp.config.get("index_kind", "step")
    return out
