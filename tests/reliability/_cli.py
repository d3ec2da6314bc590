"""Plumbing for the round-2 campaign: the real CLI as a subprocess, small runs, snapshots.

Every case runs ``python -m runlens ...`` in a child process, exactly as a
user runs it, and reads its exit status and raw bytes (a terminal escape is
a byte, and a traceback is text on stderr that an in-process runner hides).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from runlens.testing import build_run
from tests.runs import write_part
from tests.runs import write_run as write_folder

from ._harness import Tally, child_env

LAYERS = ("embed.weight", "hidden.weight", "head.weight")
T0 = 1_767_225_600.0


@dataclass
class Figures(Tally):
    """What the round-2 campaign counts; every "must be 0" figure of docs/reliability.md."""

    injections: int = 0
    rows_lost_or_duplicated: int = 0
    writes_outside: int = 0
    one_line_errors: int = 0
    exits: Counter = field(default_factory=Counter)
    by_class: Counter = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)

    def problem(self, kind: str, text: str) -> None:
        self.count(kind, f"{kind}: {text}")

    def ok(self) -> bool:
        return not (self.tracebacks or self.injections or self.rows_lost_or_duplicated or self.writes_outside)


def drop_dac() -> list[str]:
    """A command prefix under which root obeys file permissions (``setpriv`` drops the
    override capabilities); empty for a normal user, who obeys them anyway. None: impossible."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"] if setpriv else None


def cli(figures: Figures, label: str, *args: str, allowed=(0, 2), prefix=(), preexec=None,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``runlens ARGS`` as a user would; a traceback or an unexpected exit is counted."""
    env = child_env()
    env.update(NO_COLOR="1", LC_ALL="C.UTF-8", COLUMNS="100")
    cmd = [*prefix, sys.executable, "-m", "runlens", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, timeout=300, preexec_fn=preexec, cwd=cwd)
    figures.cases += 1
    figures.by_class[label.split(":")[0]] += 1
    figures.exits[proc.returncode] += 1
    if b"Traceback (most recent call last)" in proc.stderr or proc.returncode not in allowed:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        figures.problem("tracebacks", f"{label}: exit {proc.returncode}: {tail[0][:160]}")
    elif proc.returncode == 2:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        if len(lines) == 1 and lines[0].startswith(b"runlens: "):
            figures.one_line_errors += 1
        else:
            figures.problem("tracebacks", f"{label}: exit 2 without one 'runlens: ' line: {proc.stderr[:160]!r}")
    return proc


def write_run(root: Path, over: dict | None = None, *, steps: int = 240, seed: int = 0, **meta_over) -> Path:
    """A small format-v1 run (pyarrow only): a decaying loss, three layers, evals."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps)
    loss = 0.3 + 2.0 * np.exp(-t / (steps / 6)) + 0.02 * rng.standard_normal(steps)
    meta = {"format": "runlens-run", "format_version": 1, "run_id": f"{seed:032x}",
            "name": root.name, "status": "finished", "started_at": "2026-01-01T00:00:00+00:00",
            "ended_at": "2026-01-01T00:04:00+00:00", "heartbeat_at": "2026-01-01T00:04:00+00:00",
            "flush_every": 100, "flush_seconds": 30, "host": "elsewhere", "pid": 1,
            "config": {"lr": 0.01}, "seed": seed, "environment": {"python": "3.11"},
            "layers": [{"name": n, "index": i, "module": n.split(".")[0], "kind": "Linear",
                        "shape": [8, 8], "numel": 64} for i, n in enumerate(LAYERS)],
            "attempts": [{"started_at": "2026-01-01T00:00:00+00:00", "first_step": 0}], "error": None}
    meta.update(over or {})
    meta.update(meta_over)
    # ensure_ascii (json.dumps's default) keeps a lone surrogate as the JSON escape a hostile writer would produce
    layers = {"grad_norm": np.tile([0.5, 1.0, 2.0], (len(t[::10]), 1)), "weight_norm": np.full((len(t[::10]), 3), 5.0)}
    es = t[39::40]
    run = build_run(loss=loss, lr=np.full(steps, 0.01), grad_norm=0.5 + 0.1 * rng.random(steps), t0=T0,
                    step_time=0.5, val_loss=loss[es] + 0.05, val_steps=es, layers=layers, layer_names=LAYERS,
                    layer_steps=t[::10], meta=meta)
    return write_folder(root, run)


def part(root: Path, table: str, columns: dict | pa.Table, seq: int = 0) -> Path:
    """One part of rank 0: a ``pa.Table`` as it is, column values with the types pyarrow infers
    (cases hand a column off the format on purpose)."""
    return write_part(root, table, columns if isinstance(columns, pa.Table) else pa.table(columns), seq=seq)


def snapshot(base: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """``relative path -> sha1`` of every file below ``base`` (symlinks by their target),
    folders in ``skip`` left out: what a command may not change."""
    out: dict[str, str] = {}
    skip = tuple(os.path.abspath(s) for s in skip)
    for folder, dirs, files in os.walk(base):
        if os.path.abspath(folder).startswith(skip):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                out[path] = "-> " + os.readlink(path)
                continue
            try:
                with open(path, "rb") as fh:
                    out[path] = hashlib.sha1(fh.read()).hexdigest()
            except OSError:
                out[path] = "unreadable"
    return out


def count_changes(figures: Figures, label: str, before: dict[str, str], after: dict[str, str]) -> None:
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    for path in changed:
        figures.problem("writes_outside", f"{label}: {path} changed outside the output folder")


def stray_temps(folder: Path) -> list[str]:
    """Temporary files a failed write left behind (dot-names ending in .tmp)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and ".tmp" in p.name)
