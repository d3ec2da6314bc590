"""Two-rank DDP training on gloo (CPU) with a Recorder on each rank.

Rank 0 first prints ``ref NAME NORM`` for each parameter: the gradient norm
of the full batch computed without DDP, which is what the all-reduced
gradient recorded at step 0 must equal.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from recorders.torch import Recorder


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))


def data() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return torch.randn(64, 8, generator=gen), torch.randn(64, 1, generator=gen)


def worker(rank: int, run_dir: str, store: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    x, y = data()
    if rank == 0:
        ref = make_model()
        nn.functional.mse_loss(ref(x), y).backward()
        for name, p in ref.named_parameters():
            print(f"ref {name} {p.grad.norm().item():.9g}", flush=True)
    model = DDP(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xs, ys = x.chunk(2)[rank], y.chunk(2)[rank]
    with Recorder(run_dir, model, opt, flush_every=5, seed=0) as rec:
        for _ in range(12):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xs), ys)
            loss.backward()
            opt.step()
            rec.step(loss)
    dist.barrier()
    dist.destroy_process_group()


def main() -> int:
    run_dir = sys.argv[1]
    os.makedirs(run_dir, exist_ok=True)
    store = os.path.join(os.path.dirname(os.path.abspath(run_dir)), "ddp-store")
    mp.spawn(worker, args=(run_dir, store), nprocs=2, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
