"""Folders of logs read by structure: dvclive, Lightning versions, trainer output folders.

- **dvclive**: ``plots/metrics/<path>.tsv`` files (``step`` and one value
  column each) are one table, each metric named by its path
  (``train/loss``, ``eval/loss``), so the roles read ``eval`` as validation.
- **Lightning**: ``version_N/metrics.csv``; the highest ``N`` is read and
  the others are named in a note.
- **Trainer output folders** holding several files (``config.json`` +
  ``metrics.jsonl``, ``trainer_state.json`` in checkpoints, ``log.txt``):
  every structured file is read; the one whose roles hold a training signal
  with the most rows is the run; every other file is named with why it was
  not used. A ``config.json``/``config.yaml`` beside it goes into ``config``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from runlens.io.bounded import loads_json
from runlens.io.reader.table import Table

_VERSION = re.compile(r"^version_(\d+)$")
_SKIP_SUFFIXES = (".png", ".jpg", ".jpeg", ".pt", ".pth", ".bin", ".safetensors", ".ckpt", ".h5", ".pkl",
                  ".npy", ".npz", ".onnx", ".zip", ".tar", ".model")
MAX_FILES = 2000  # files looked at below one folder
MAX_FILE = 64 << 20  # a file in a trainer's output folder larger than this is data or weights, not its log


def dvclive(folder: Path) -> Table | None:
    """The metrics of a dvclive folder (``plots/metrics/**.tsv``) as one table keyed on ``step``."""
    root = next((p for p in (folder / "plots" / "metrics", folder / "dvclive" / "plots" / "metrics")
                 if p.is_dir()), None)
    if root is None:
        return None
    from runlens.io.reader import delimited

    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for tsv in sorted(root.rglob("*.tsv"))[:MAX_FILES]:
        text = tsv.read_text(encoding="utf-8", errors="replace")
        found = delimited.sniff(text.splitlines())
        if found is None:
            continue
        t = delimited.read_text(text, *found)
        value = next((c for c in t.names if c not in ("step", "timestamp")), None)
        if "step" not in t.values or value is None:
            continue
        ok = t.present["step"] & t.present[value]
        name = tsv.relative_to(root).with_suffix("").as_posix()
        series[name] = (t.values["step"][ok], t.values[value][ok])
    if not series:
        return None
    steps = np.unique(np.concatenate([s for s, _ in series.values()]))
    values = {"step": steps.astype(np.float64)}
    present = {"step": np.ones(len(steps), dtype=bool)}
    for name, (s, v) in series.items():
        col = np.full(len(steps), np.nan)
        pos = np.searchsorted(steps, s)
        col[pos] = v
        mask = np.zeros(len(steps), dtype=bool)
        mask[pos] = True
        values[name], present[name] = col, mask
    return Table(len(steps), values, present, "dvclive folder")


def lightning_version(folder: Path) -> tuple[Path | None, str | None]:
    """The ``metrics.csv`` of the latest Lightning version below ``folder`` and a note naming the others."""
    versions = []
    for m in folder.rglob("metrics.csv"):
        match = _VERSION.match(m.parent.name)
        versions.append((int(match.group(1)) if match else -1, m))
    if not versions:
        return None, None
    versions.sort()
    chosen = versions[-1][1]
    note = (f"{len(versions)} metrics.csv files below {folder}: read {chosen.relative_to(folder)} (the latest version)"
            if len(versions) > 1 else None)
    return chosen, note


def candidates(folder: Path) -> list[Path]:
    """The files below ``folder`` that may be logs (weights, images and archives left out)."""
    out: list[Path] = []
    for p in sorted(folder.rglob("*")):
        if len(out) >= MAX_FILES:
            break
        if p.is_file() and not p.name.startswith(".") and not p.name.lower().endswith(_SKIP_SUFFIXES) \
                and p.stat().st_size <= MAX_FILE:
            out.append(p)
    return out


def folder_config(folder: Path, notes: list[str]) -> dict:
    """Hyperparameters beside the logs: ``config.json``, Lightning's ``hparams.yaml``."""
    out = {}
    path = folder / "config.json"
    if path.is_file() and path.stat().st_size <= (4 << 20):
        try:
            doc = loads_json(path.read_text(encoding="utf-8", errors="replace"))
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            out["config_json"] = doc
    hp = _hparams(folder / "hparams.yaml", notes)
    if hp:
        out["hparams"] = hp
    return out


def _hparams(path: Path, notes: list[str]) -> dict:
    if not path.is_file() or path.stat().st_size > (4 << 20):
        return {}
    try:
        import yaml  # Lightning depends on PyYAML, so it is there wherever these files are written
    except ImportError:
        notes.append("hparams.yaml not read: PyYAML is not installed")
        return {}
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        # Aliases can expand exponentially ("billion laughs"): hyperparameters never need them.
        if any(isinstance(ev, yaml.AliasEvent) for ev in yaml.parse(text, Loader=yaml.SafeLoader)):
            notes.append("hparams.yaml not read: it uses YAML aliases")
            return {}
        data = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - a custom YAML tag we cannot load
        notes.append(f"hparams.yaml not read ({type(exc).__name__})")
        return {}
    return data if isinstance(data, dict) else {}
