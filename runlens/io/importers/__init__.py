"""Importers: logs written by other tools, turned into format-v1 runs.

Each kind has one module with a ``read(source, **options) -> Imported``;
:func:`import_run` reads and writes through :class:`recorders.writer.RunWriter`,
so an imported run is a run like any other. The run's ``config`` says
where it came from (``imported_from``), which columns or tags became which
role (``import_columns`` / ``import_tags``), and what could not be mapped
(``import_warnings``, a list of readable lines).

Kinds: ``tensorboard`` (event files), ``lightning-csv`` (CSVLogger
``metrics.csv``), ``hf`` (``trainer_state.json`` or Trainer console
output), ``csv`` (generic CSV/Parquet, Keras ``CSVLogger``), ``text``
(llm.c, Megatron, ``word_language_model`` and ``step N | loss X`` lines).
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

from runlens.errors import ImportFailedError

__all__ = ["KINDS", "detect_kind", "import_run", "read"]

KINDS = {
    "tensorboard": "runlens.io.importers.tensorboard",
    "lightning-csv": "runlens.io.importers.lightning_csv",
    "hf": "runlens.io.importers.hf",
    "csv": "runlens.io.importers.csv",
    "text": "runlens.io.importers.text",
}

_HF_LINE = re.compile(r"\{'(loss|eval_loss)': '?(?:[-+]?[0-9]|nan|inf)")
_TEXT_LINE = re.compile(r"^s:\d+ t[re]l:|iteration\s+\d+\s*/\s*\d+\s*\||\|\s*epoch\s+\d+\s*\|\s*\d+\s*/|"
                        r"^\s*step[\s:]+\d+", re.MULTILINE | re.IGNORECASE)


def _head(path: Path, n: int = 262_144) -> str:
    with open(path, "rb") as f:
        return f.read(n).decode("utf-8", "replace")


def _detect_file(path: Path) -> str | None:
    name = path.name.lower()
    if "tfevents" in name:
        return "tensorboard"
    if name == "trainer_state.json":
        return "hf"
    if name.endswith((".parquet", ".pq")):
        return "csv"
    if name.endswith(".json"):
        try:
            return "hf" if "log_history" in json.loads(path.read_text(encoding="utf-8")) else None
        except (ValueError, OSError, TypeError):
            return None
    head = _head(path)
    if name.endswith(".csv"):
        header = head.splitlines()[0] if head else ""
        cols = {c.strip() for c in header.split(",")}
        return "lightning-csv" if {"step", "epoch"} <= cols and name == "metrics.csv" else "csv"
    if _HF_LINE.search(head):
        return "hf"
    if _TEXT_LINE.search(head):
        return "text"
    return None


def detect_kind(path: str | Path) -> str | None:
    """The importer kind that reads ``path`` (a file or folder), or None when none does.

    A folder holding a ``run.json`` is a runlens run already: None.
    """
    p = Path(path)
    if p.is_file():
        return _detect_file(p)
    if not p.is_dir() or (p / "run.json").exists():
        return None
    if next(p.rglob("*tfevents*"), None) is not None:
        return "tensorboard"
    if next(p.rglob("trainer_state.json"), None) is not None:
        return "hf"
    if next(p.rglob("metrics.csv"), None) is not None:
        return "lightning-csv"
    return None


def read(kind: str, source: str | Path, **options: Any):
    """The :class:`~runlens.io.importers._common.Imported` for ``source`` read as ``kind``."""
    module = KINDS.get(kind)
    if module is None:
        raise ImportFailedError(f"unknown import kind {kind!r}; kinds are: {', '.join(KINDS)}")
    if not Path(source).exists():
        raise ImportFailedError(f"{source}: no such file or folder")
    try:
        return importlib.import_module(module).read(source, **{k: v for k, v in options.items() if v is not None})
    except TypeError as exc:  # an option this kind does not take
        if "unexpected keyword argument" in str(exc):
            raise ImportFailedError(f"the {kind} importer does not take that option ({exc})") from exc
        raise


def import_run(kind: str, source: str | Path, out_dir: str | Path, **options: Any) -> Path:
    """Import ``source`` as ``kind`` into a new run at ``out_dir``; the run's path.

    Raises :class:`~runlens.errors.ImportFailedError` when the source cannot
    be read as that kind, has no training loss, or ``out_dir`` already holds
    a run.
    """
    from runlens.io.importers._common import write_imported

    return write_imported(read(kind, source, **options), out_dir)
