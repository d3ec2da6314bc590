"""Lightning ``CSVLogger`` output: ``metrics.csv`` (and ``hparams.yaml`` beside it).

Lightning writes one sparse row per ``log`` call site and step: training
rows carry ``train_loss`` (or ``train_loss_step`` when ``on_epoch=True``
too), validation rows ``val_loss``, ``LearningRateMonitor`` rows
``lr-<Optimizer>``; all share the ``step`` and ``epoch`` columns. The
generic CSV reader merges them by step; this module only knows where the
files are and which names Lightning uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runlens.errors import ImportFailedError
from runlens.io.importers import csv as _csv
from runlens.io.importers._common import Imported

LOSS_COLUMNS = ("train_loss_step", "train_loss", "loss_step", "loss", "train/loss")
VAL_LOSS_COLUMNS = ("val_loss", "val_loss_epoch", "val/loss", "validation_loss", "valid_loss")


def find_metrics(source: Path) -> Path:
    """``metrics.csv`` itself, or the newest one below a log directory."""
    if source.is_file():
        return source
    if source.is_dir():
        found = sorted(source.rglob("metrics.csv"), key=lambda p: p.stat().st_mtime)
        if found:
            return found[-1]
    raise ImportFailedError(f"{source}: no Lightning metrics.csv here")


def _hparams(folder: Path, warnings: list[str]) -> dict[str, Any]:
    path = folder / "hparams.yaml"
    if not path.is_file():
        return {}
    try:
        import yaml  # lightning depends on PyYAML, so it is there wherever these files are written
    except ImportError:
        warnings.append("hparams.yaml not read: PyYAML is not installed")
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 - a custom YAML tag we cannot load
        warnings.append(f"hparams.yaml not read ({type(exc).__name__})")
        return {}
    return data if isinstance(data, dict) else {}


def read(source: str | Path, *, loss: str | None = None, val_loss: str | None = None,
         **mapping: Any) -> Imported:
    """Read a Lightning CSVLogger log (``metrics.csv`` or its ``version_N`` folder)."""
    path = find_metrics(Path(source))
    warnings: list[str] = []
    header, cols = _csv.read_rows(path, conflict=None, warnings=warnings)
    if "step" not in header:
        raise ImportFailedError(f"{path}: no 'step' column: not a Lightning CSVLogger file "
                                "(try the 'csv' kind)")
    loss = loss or next((c for c in LOSS_COLUMNS if c in header), None)
    val_loss = val_loss or next((c for c in VAL_LOSS_COLUMNS if c in header), None)
    imp = _csv.build(path, header, cols, kind="lightning-csv", warnings=warnings, loss=loss,
                     val_loss=val_loss, lr_prefix="lr-", **mapping)
    hp = _hparams(path.parent, warnings)
    if hp:
        imp.config["hparams"] = hp
    imp.name = path.parent.parent.name + "/" + path.parent.name if path.parent.name.startswith("version_") else None
    return imp
