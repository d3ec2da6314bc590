"""The ``table`` kind: any structured log (JSON document or lines, a delimited table) through
the structure-first reader (:mod:`runlens.io.reader`).

The CSV, CSVLogger, JSON lines and ``trainer_state.json`` importers are this
reader now: what a column means is decided by :mod:`runlens.io.reader.roles`
from its name and values, whichever tool wrote the file.
"""

from __future__ import annotations

from pathlib import Path

from runlens.errors import ImportFailedError
from runlens.io.importers._common import Imported
from runlens.io.reader import read_table
from runlens.io.reader.build import to_imported
from runlens.io.reader.roles import infer
from runlens.io.reader.table import Table


def signal_roles(roles) -> list[str]:
    return [p.role for p in roles.picks if p.role in ("loss", "grad_norm", "loss_scale")
            or p.role.startswith("val_loss")]


def from_table(table: Table, source: Path, *, loss: str | None = None, val_loss: str | None = None,
               step: str | None = None, run: int | None = None, kind: str = "table") -> Imported:
    """Roles for ``table`` and its series; refuses a table with no training signal, naming what it holds."""
    try:
        roles = infer(table, loss=loss, val_loss=val_loss, step=step)
    except KeyError as exc:
        names = ", ".join(table.names[:20]) + (" ..." if len(table.names) > 20 else "")
        raise ImportFailedError(f"{source}: no column {exc.args[0]!r} (columns: {names})") from None
    if not signal_roles(roles):
        names = ", ".join(table.names[:12]) + (" ..." if len(table.names) > 12 else "")
        raise ImportFailedError(f"{source}: a {table.shape} table of {table.n} rows with no loss, validation "
                                f"loss or gradient norm among its columns ({names or 'none'}); "
                                "name one with --loss")
    return to_imported(table, roles, source, kind, run=run)


def read(source: str | Path, *, loss: str | None = None, val_loss: str | None = None,
         step: str | None = None, run: int | None = None) -> Imported:
    """The series of the structured log at ``source``."""
    path = Path(source)
    table = read_table(path)
    if table is None:
        raise ImportFailedError(f"{path}: not a JSON document, JSON lines or a delimited table")
    if table.n == 0:
        raise ImportFailedError(f"{path}: a {table.shape} holding no numeric rows")
    return from_table(table, path, loss=loss, val_loss=val_loss, step=step, run=run)
