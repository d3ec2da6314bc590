"""TensorBoard's scalar CSV download (``Wall time,Step,Value``): one series per file, named by the file.

The TensorBoard UI downloads each chart as ``run-<run>-tag-<tag>.csv``
holding three columns, ``Wall time``, ``Step`` and ``Value``. The content
never says what ``Value`` is; the name does: the ``<tag>`` after the last
``-tag-``, else the file's stem (a download renamed ``loss.csv``). The run
is kept in front of the tag only when it names a split (Keras writes
``train`` and ``validation`` runs that share the tag ``epoch_loss``), since
other run names (``version_0``, ``exp1``) would read as words of the
metric. ``--loss Value`` still names the column (:attr:`Table.aliases`).

A folder of such files (one per tag: train loss, validation loss, learning
rate) is one table keyed on ``Step``, one column per file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from runlens.io.reader.names import TRAIN, is_val, tokens
from runlens.io.reader.table import MAX_COLUMNS, Table

_COLUMNS = ("wall time", "step", "value")
_TAG = "-tag-"
_SHAPE = "TensorBoard scalar CSV"


def is_scalar_csv(table: Table) -> bool:
    """Whether ``table`` has exactly TensorBoard's three download columns."""
    return tuple(n.strip().lower() for n in table.names) == _COLUMNS


def series_name(path: Path) -> str:
    """What the ``Value`` column of the download at ``path`` is, read from its file name."""
    stem = path.name
    for suffix in (".gz", ".csv", ".tsv"):
        stem = stem[: -len(suffix)] if stem.lower().endswith(suffix) else stem
    run, sep, tag = stem.rpartition(_TAG)
    if not sep or not tag:
        return stem or "Value"
    run = run[4:] if run.lower().startswith("run-") else run.removeprefix("run_")
    # Only a run that says which split it is belongs in the name (``validation/epoch_loss``).
    split = tokens(run)[-1:]
    if split and (is_val(split) or split[0] in TRAIN):
        return f"{split[0]}/{tag}"
    return tag


def is_download(table: Table) -> bool:
    """Whether ``table`` was read as a download (by :func:`named`)."""
    return table.shape == _SHAPE


def named(table: Table, path: Path) -> Table:
    """The download ``table`` with its ``Value`` column renamed after ``path`` (others unchanged)."""
    if not is_scalar_csv(table):
        return table
    value = next(n for n in table.names if n.strip().lower() == "value")
    name = series_name(path)
    if name in table.values and name != value:
        return table
    values = {(name if k == value else k): v for k, v in table.values.items()}
    present = {(name if k == value else k): v for k, v in table.present.items()}
    out = Table(table.n, values, present, _SHAPE, list(table.notes), dict(table.config))
    out.aliases = {value: name} if name != value else {}
    return out


def folder(tables: list[tuple[Path, Table]]) -> Table | None:
    """One table of several downloads (each a named :func:`named` table), keyed on their ``Step``;
    None unless at least two files are downloads."""
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for path, table in tables:
        if not is_download(table):
            continue
        step, value = table.names[1], table.names[2]
        ok = table.present[step] & table.present[value]
        name = value if value not in series else f"{value} ({path.stem})"
        series[name] = (table.values[step][ok], table.values[value][ok])
    if len(series) < 2:
        return None
    steps = np.unique(np.concatenate([s for s, _ in series.values()]))
    values = {"step": steps.astype(np.float64)}
    present = {"step": np.ones(len(steps), dtype=bool)}
    for name, (s, v) in list(series.items())[:MAX_COLUMNS]:
        col, mask = np.full(len(steps), np.nan), np.zeros(len(steps), dtype=bool)
        pos = np.searchsorted(steps, s)
        col[pos], mask[pos] = v, True  # a step written twice keeps its last value
        values[name], present[name] = col, mask
    return Table(len(steps), values, present, "folder of TensorBoard scalar CSVs")
