"""Importers: logs written by other tools, turned into format-v1 runs.

Each kind has one module with a ``read(source, **options) -> Imported``;
:func:`load` builds the run in memory (what ``analyze`` uses); only
:func:`import_run` (``runlens import``) writes a run to disk. The run's ``config`` says
where it came from (``imported_from``), which columns or tags became which
role (``import_columns`` / ``import_tags``), and what could not be mapped
(``import_warnings``, a list of readable lines).

Kinds: ``table`` (any structured log, by its structure: a JSON document
or JSON lines, a delimited table; ``csv``, ``lightning-csv`` and ``jsonl``
are other names for it), ``tensorboard`` (event files), ``hf`` (Trainer
console output; a ``trainer_state.json`` is a table), ``text`` (any console
log with step-carrying lines), ``mlflow`` (an MLflow file store), ``wandb``
(a W&B chart CSV export or an offline ``.wandb`` file), ``markdown`` (a
metrics table in notes, an issue or a PR comment).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runlens.errors import ImportFailedError
from runlens.io.reader.names import is_val, tokens

if TYPE_CHECKING:
    from runlens.io.importers._common import Imported, Take
    from runlens.io.run import Run

__all__ = ["KINDS", "detect_kind", "import_run", "load", "options_of", "parse_runs", "read"]

# csv, lightning-csv and jsonl are names for the structure-first table reader: kept so that
# `runlens import csv ...` goes on working; what each column means is decided the same way for all.
KINDS = {
    "tensorboard": "runlens.io.importers.tensorboard",
    "lightning-csv": "runlens.io.importers.table",
    "hf": "runlens.io.importers.hf",
    "csv": "runlens.io.importers.table",
    "text": "runlens.io.importers.text",
    "jsonl": "runlens.io.importers.table",
    "mlflow": "runlens.io.importers.mlflow",
    "wandb": "runlens.io.importers.wandb",
    "markdown": "runlens.io.importers.markdown",
    "table": "runlens.io.importers.table",
}


def detect_kind(path: str | Path) -> str | None:
    """The importer kind that reads ``path`` (a file or folder), or None when none does.

    Chosen from the content (:mod:`runlens.io.importers.sniff`), not the name;
    :func:`runlens.io.importers.sniff.sniff` also says why a path was not
    recognised. A folder holding a ``run.json`` is a runlens run already: None.
    """
    from runlens.io.importers.sniff import sniff

    return sniff(path).kind


# The generic override names (``runlens analyze --loss KEY``) in each kind's own words.
_RENAMES = {"tensorboard": {"loss": "loss_tag", "val_loss": "val_loss_tag", "lr": "lr_tag",
                            "grad_norm": "grad_norm_tag"}}


def read(kind: str, source: str | Path, **options: Any) -> Imported:
    """The :class:`~runlens.io.importers._common.Imported` for ``source`` read as ``kind``."""
    return parse_runs(kind, source, **options)(None)


def parse_runs(kind: str, source: str | Path, **options: Any) -> Take:
    """``source`` read once as ``kind``: ``take(None)`` is :func:`read` with these options, ``take(i)``
    the same with ``run=i``, each run of a source holding several taken from that one read.

    A kind whose module has no ``parse_runs`` (its sources hold one run, or each run is its own
    files) is read again at each take, as :func:`read` reads it.
    """
    renames = _RENAMES.get(kind, {})
    options = {renames.get(k, k): v for k, v in options.items()}
    module = KINDS.get(kind)
    if module is None:
        raise ImportFailedError(f"unknown import kind {kind!r}; kinds are: {', '.join(KINDS)}")
    if not Path(source).exists():
        raise ImportFailedError(f"{source}: no such file or folder")
    mod = importlib.import_module(module)
    given = {k: v for k, v in options.items() if v is not None}
    _refuse_unknown(kind, mod.read, given)
    if not hasattr(mod, "parse_runs"):
        return functools.partial(_reread, mod, source, given)
    chosen = given.pop("run", None)
    return functools.partial(_taken, mod.parse_runs(source, **given), chosen)


def _reread(mod: Any, source: str | Path, given: dict[str, Any], run: int | None) -> Imported:
    return _finished(mod.read(source, **(given if run is None else {**given, "run": run})))


def _taken(take: Take, chosen: int | None, run: int | None) -> Imported:
    return _finished(take(chosen if run is None else run))


def options_of(kind: str) -> tuple[str, ...]:
    """The options ``kind``'s importer takes: its ``read``'s keyword-only parameters, in their order
    (the one list: ``runlens import`` refuses the others from it too)."""
    module = KINDS.get(kind)
    if module is None:
        raise ImportFailedError(f"unknown import kind {kind!r}; kinds are: {', '.join(KINDS)}")
    return _keywords(importlib.import_module(module).read)


def _keywords(read_: Callable[..., Any]) -> tuple[str, ...]:
    return tuple(p.name for p in inspect.signature(read_).parameters.values()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _refuse_unknown(kind: str, read_: Callable[..., Any], given: dict[str, Any]) -> None:
    """Refuse an option the kind's ``read`` does not take before the source is read: one check, in one
    set of words, for a source parsed once and one read whole (``read``'s own TypeError is never met)."""
    takes = _keywords(read_)
    unknown = [k for k in given if k not in takes]
    if unknown:
        raise ImportFailedError(f"the {kind} importer does not take the option(s) {', '.join(map(repr, unknown))}; "
                                f"it takes: {', '.join(takes) or 'no options'}")


def _finished(imp: Imported) -> Imported:
    from runlens.io.importers.table import reinfer

    return _said_roles(reinfer(imp))


_ROLE_COLUMNS = ("loss", "val_loss", "lr", "grad_norm", "loss_scale", "epoch")


def _said_roles(imp: Imported) -> Imported:
    """``config.import_roles`` for a source whose importer mapped names by its own table (console logs,
    TensorBoard, MLflow, W&B, Markdown): the same record of which name took which role, and why."""
    if "import_roles" in imp.config:
        return imp
    names = imp.config.get("import_fields") or imp.config.get("import_columns") or imp.config.get("import_tags") or {}
    roles: dict[str, dict[str, Any]] = {}
    for col in [*imp.train, *imp.evals]:
        if col in _ROLE_COLUMNS or col.startswith("val_loss@"):
            src = names.get(col) if isinstance(names.get(col), str) else col
            why = f"{src!r} is a name the {imp.kind} importer reads as {col}"
            if col.startswith("val_loss") and not is_val(tokens(str(src))):
                why += " (logged on the lines of a validation pass)"
            roles[col] = {"columns": [src], "how": "column", "why": why}
    index = imp.config.get("index_kind", "step")
    why = imp.index_why or f"the steps the {imp.kind} source recorded"
    loss = roles.get("loss", {}).get("columns", [""])[0]
    if loss.rsplit("/", 1)[-1].startswith("epoch_"):  # Keras writes epoch_loss at step = epoch
        index, why = "epoch", f"{loss!r} is logged once per epoch, at the epoch's number"
    roles["index"] = {"columns": [], "how": index, "why": why}
    imp.config["import_roles"] = roles
    # The summary says which name became the loss, as the table reader's "roles:" lines do: a
    # console log's ``loss`` may be any of several fields on its lines.
    imp.warnings[:0] = [f"roles: {col} <- {r['columns'][0]}: {r['why']}" for col, r in roles.items()
                        if col == "loss" or col.startswith("val_loss")]
    imp.config.setdefault("index_kind", index)
    return imp


def import_run(kind: str, source: str | Path, out_dir: str | Path, **options: Any) -> Path:
    """Import ``source`` as ``kind`` into a new run at ``out_dir``; the run's path.

    Raises :class:`~runlens.errors.ImportFailedError` when the source cannot
    be read as that kind, has no training loss, or ``out_dir`` already holds
    a run.
    """
    from runlens.io.importers._common import write_imported

    return write_imported(read(kind, source, **options), out_dir)


def load(kind: str, source: str | Path, shown: str, columns: Mapping[str, Any] | None = None,
         **options: Any) -> Run:
    """The in-memory :class:`~runlens.io.run.Run` of ``source`` read as ``kind`` (nothing written)."""
    from runlens.io.importers.memory import to_run

    return to_run(read(kind, source, **options), shown, columns)
