"""Resource bounds: recorder memory over many steps, audit file handles."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import _harness as h

_MEMORY_CHILD = r"""
import json, os, sys, psutil, torch
from torch import nn
from recorders.torch import Recorder
torch.set_num_threads(1)
steps = int(sys.argv[2])
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
proc, samples = psutil.Process(), []
with Recorder(sys.argv[1], model, opt, flush_every=100, flush_seconds=5.0) as rec:
    for step in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        rec.step(loss, accuracy=0.5)
        if step % 100 == 0:
            rec.validation(float(loss))
        if step % (steps // 10) == 0:
            samples.append(proc.memory_info().rss)
print(json.dumps(samples))
"""


@dataclass(frozen=True)
class MemoryResult:
    steps: int
    rss_mb_at_10pct: float
    rss_mb_at_end: float
    growth_mb: float


def recorder_memory(workdir: Path, steps: int) -> MemoryResult:
    workdir.mkdir(parents=True, exist_ok=True)
    out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(workdir / "run"), str(steps)],
                         env=h.child_env(), capture_output=True, text=True, timeout=1800, check=True)
    samples = json.loads(out.stdout.strip().splitlines()[-1])
    # The first sample is taken before the first flush; growth is measured from the second.
    first, last = samples[1] / 2**20, samples[-1] / 2**20
    return MemoryResult(steps, round(first, 1), round(last, 1), round(last - first, 1))


def tiny_run_tree(root: Path, n: int) -> None:
    """``n`` minimal valid runs (run.json + one scalars part), written with the project's writer."""
    from recorders.writer import RunWriter

    for i in range(n):
        w = RunWriter(root / f"g{i // 100:03d}" / f"run{i:05d}", heartbeat=False, compact_on_close=False)
        for step in range(20):
            w.add_scalars(step, 1.0 / (step + 1))
        w.close()


@dataclass(frozen=True)
class HandlesResult:
    runs: int
    fd_limit: int
    exit_code: int
    rows: int
    detail: str = ""


def audit_handles(workdir: Path, n: int, fd_limit: int = 256) -> HandlesResult:
    """Audit ``n`` tiny runs with the process's open-file limit far below ``n``."""
    tree = workdir / "tree"
    if not tree.exists():
        tiny_run_tree(tree, n)
    code = (f"import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, ({fd_limit}, {fd_limit}));"
            "from runlens.cli import main; sys.argv=['runlens','audit',sys.argv[1],'--format','json',"
            "'--workers','2','--quiet','--fail-on','never']; main()")
    proc = subprocess.run([sys.executable, "-c", code, str(tree)], env=h.child_env(),
                          capture_output=True, text=True, timeout=1800)
    rows = 0
    try:
        rows = len(json.loads(proc.stdout))
    except ValueError:
        pass
    return HandlesResult(n, fd_limit, proc.returncode, rows, proc.stderr[-300:] if proc.returncode else "")
