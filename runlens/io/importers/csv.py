"""Generic CSV / Parquet of per-step columns (Keras ``CSVLogger``, pandas dumps, W&B exports).

Columns are found by name: the first existing candidate of each role wins
unless the caller names it. A file without any step column (Keras writes
one row per epoch and no index) uses the row index as the step.

A file holding git merge-conflict markers contains two versions of the
log at once; importing both would splice two runs into one curve, so the
importer takes one side: the last in the file (``theirs``) unless the
caller picks ``conflict="ours"``, and says which side it took.
"""

from __future__ import annotations

import csv as _csv
import re
from pathlib import Path
from typing import Any

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.bounded import bounded_steps
from runlens.io.importers._common import Imported, Series, column_name, parse_float, require_file

STEP_COLUMNS = ("step", "global_step", "iteration", "iter", "it", "trainer/global_step")
EPOCH_COLUMNS = ("epoch", "epochs")
LOSS_COLUMNS = ("loss", "train_loss", "train/loss", "training_loss", "train_loss_step", "trn_loss")
VAL_LOSS_COLUMNS = ("val_loss", "eval_loss", "val/loss", "eval/loss", "validation_loss", "valid_loss",
                    "validation/loss", "val_loss_epoch", "test_loss")
LR_COLUMNS = ("lr", "learning_rate", "train/learning_rate", "lr-Adam", "lr-AdamW", "lr-SGD")
GRAD_NORM_COLUMNS = ("grad_norm", "gradient_norm", "train/grad_norm", "grad_2.0_norm_total", "norm")

_CONFLICT = re.compile(r"^(<{7}|={7}|>{7})(\s|$)")


def _pick(header: list[str], given: str | None, candidates: tuple[str, ...], role: str) -> str | None:
    if given is not None:
        if given not in header:
            raise ImportFailedError(f"no {role} column {given!r}; columns are: {', '.join(header)}")
        return given
    lower = {h.lower(): h for h in header}
    for c in candidates:
        if c.lower() in lower:
            return lower[c.lower()]
    return None


def resolve_conflicts(lines: list[str], source: Path, side: str | None, warnings: list[str]) -> list[str]:
    """``lines`` without merge-conflict blocks, keeping ``side``; refuse when no side was chosen."""
    marks = [(i + 1, m.group(1)[0]) for i, line in enumerate(lines) if (m := _CONFLICT.match(line))]
    if not marks:
        return lines
    where = ", ".join(f"{n}" for n, _ in marks[:6])
    if side is None:
        # Two versions of the log, like two runs in one: take the last in the file and say so.
        side = "theirs"
        warnings.append(f"git merge-conflict markers at lines {where}: the file holds two versions of the "
                        "log; imported the last one ('theirs'); pick the other with --conflict ours")
    elif side not in ("ours", "theirs"):
        raise ImportFailedError(f"{source}: --conflict must be 'ours' or 'theirs', not {side!r}")
    kept, state = [], None  # state: None outside a block, "ours" / "theirs" inside
    for line in lines:
        m = _CONFLICT.match(line)
        if m and m.group(1)[0] == "<":
            state = "ours"
        elif m and m.group(1)[0] == "=" and state == "ours":
            state = "theirs"
        elif m and m.group(1)[0] == ">":
            state = None
        elif state is None or state == side:
            kept.append(line)
    if not any("merge-conflict" in w for w in warnings):
        warnings.append(f"git merge-conflict markers at lines {where}: imported the {side!r} side only")
    return kept


def read_rows(path: Path, *, conflict: str | None, warnings: list[str]) -> tuple[list[str], dict[str, list]]:
    """Header and columns (lists of float or None) of a CSV or Parquet file."""
    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise ImportFailedError(f"{path}: not a readable Parquet file ({exc})") from exc
        cols: dict[str, list[Any]] = {}
        for name in table.column_names:
            try:
                cols[name] = table.column(name).cast("float64").to_pylist()
            except Exception:  # noqa: BLE001 - a text column: not a metric
                warnings.append(f"column {name!r} is not numeric: not imported")
        return list(cols), cols
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ImportFailedError(f"{path}: cannot read ({exc})") from exc
    lines = resolve_conflicts(text.splitlines(), path, conflict, warnings)
    reader = _csv.reader(line for line in lines if line.strip())
    header = next(reader, None)
    if not header:
        raise ImportFailedError(f"{path}: empty CSV file")
    header = [h.strip() for h in header]
    cols = {h: [] for h in header}
    bad = 0
    for row in reader:
        if len(row) != len(header):
            bad += 1
            continue
        for h, cell in zip(header, row, strict=True):
            cols[h].append(parse_float(cell))
    if bad:
        warnings.append(f"{bad} rows whose number of cells differs from the header: skipped")
    return header, cols


def _series(steps: np.ndarray, values: list) -> Series | None:
    """The rows of one column that hold a number (an empty cell is 'not logged here')."""
    keep = np.array([v is not None for v in values], dtype=bool)
    if not keep.any():
        return None
    vals = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return Series(steps[keep], vals[keep])


def build(path: Path, header: list[str], cols: dict[str, list], *, kind: str, warnings: list[str],
          step: str | None = None, loss: str | None = None, val_loss: str | None = None,
          lr: str | None = None, grad_norm: str | None = None, epoch: str | None = None,
          lr_prefix: str | None = None) -> Imported:
    """Turn named columns into an :class:`Imported`: roles by name, the rest as user scalars."""
    n = len(next(iter(cols.values()), []))
    step_col = _pick(header, step, STEP_COLUMNS, "step")
    epoch_col = _pick(header, epoch, EPOCH_COLUMNS, "epoch")
    roles = {"loss": _pick(header, loss, LOSS_COLUMNS, "loss"),
             "val_loss": _pick(header, val_loss, VAL_LOSS_COLUMNS, "validation loss"),
             "lr": _pick(header, lr, LR_COLUMNS, "learning-rate"),
             "grad_norm": _pick(header, grad_norm, GRAD_NORM_COLUMNS, "gradient-norm")}
    if roles["lr"] is None and lr_prefix:
        roles["lr"] = next((h for h in header if h.startswith(lr_prefix)), None)
    imp = Imported(kind=kind, source=path, warnings=warnings)
    if step_col is not None:
        raw = cols[step_col]
        if any(v is None for v in raw):
            warnings.append(f"{sum(v is None for v in raw)} rows without a {step_col!r}: skipped")
        steps = bounded_steps(raw, repr(step_col), warnings)  # a step of 2**63 must not overflow numpy
        how = f"column {step_col!r}"
    elif epoch_col is not None and len({v for v in cols[epoch_col] if v is not None}) == n:
        steps = bounded_steps(cols[epoch_col], repr(epoch_col), warnings)
        how = f"column {epoch_col!r} (one row per epoch)"
    else:
        steps = np.arange(n, dtype=np.int64)
        how = "row index (the file has no step column)"
        if epoch_col is None:
            cols = {**cols, "epoch": [float(i) for i in range(n)]}
            epoch_col = "epoch"
    imp.config["import_columns"] = {"step": how, **{k: v for k, v in roles.items() if v}}
    valid = steps >= 0
    used = {c for c in (step_col, *roles.values()) if c}
    for role, col in roles.items():
        if col is None:
            continue
        s = _series(steps[valid], [v for v, ok in zip(cols[col], valid, strict=True) if ok])
        if s is not None:
            (imp.evals if role == "val_loss" else imp.train)[role] = s
    if epoch_col is not None and epoch_col not in used:
        s = _series(steps[valid], [v for v, ok in zip(cols[epoch_col], valid, strict=True) if ok])
        if s is not None:
            imp.train["epoch"] = s
        used.add(epoch_col)
    for col in header:
        if col in used or col not in cols:
            continue
        s = _series(steps[valid], [v for v, ok in zip(cols[col], valid, strict=True) if ok])
        if s is None:
            warnings.append(f"column {col!r} holds no numbers: not imported")
            continue
        target = imp.evals if _is_eval(col) else imp.train
        target[column_name(col)] = s
    return imp


def _is_eval(col: str) -> bool:
    c = col.lower()
    return c.startswith(("val", "eval", "valid", "test")) or "/val" in c


def read(source: str | Path, *, conflict: str | None = None, **mapping: Any) -> Imported:
    """Read a generic CSV/Parquet file; ``mapping`` names columns (step=, loss=, val_loss=, lr=, ...)."""
    path = Path(source)
    require_file(path, "csv")
    warnings: list[str] = []
    header, cols = read_rows(path, conflict=conflict, warnings=warnings)
    return build(path, header, cols, kind="csv", warnings=warnings, **mapping)
