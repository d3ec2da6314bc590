"""What the two-rank children (``child_ddp.py``, ``child_fsdp.py``) share: a gloo
process group on CPU over a file store, one process a rank, and the full batch.

The children run as scripts (``python tests/recorder/child_*.py``), so this
folder is ``sys.path[0]`` and they import this module by its bare name; the
ranks ``mp.spawn`` starts inherit that ``sys.path``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD_SIZE = 2


def data() -> tuple[torch.Tensor, torch.Tensor]:
    """The full batch; each rank trains on its half (``x.chunk(2)[rank]``)."""
    gen = torch.Generator().manual_seed(1)
    return torch.randn(64, 8, generator=gen), torch.randn(64, 1, generator=gen)


def _rank(rank: int, worker: Callable[[int, str], None], run_dir: str, store: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD_SIZE)
    worker(rank, run_dir)
    dist.barrier()
    dist.destroy_process_group()


def main(worker: Callable[[int, str], None], store_name: str) -> int:
    """``worker(rank, run_dir)`` on each rank, inside the process group; the run
    directory is ``sys.argv[1]``, the file store ``store_name`` beside it."""
    run_dir = sys.argv[1]
    os.makedirs(run_dir, exist_ok=True)
    store = os.path.join(os.path.dirname(os.path.abspath(run_dir)), store_name)
    mp.spawn(_rank, args=(worker, run_dir, store), nprocs=WORLD_SIZE, join=True)
    return 0
