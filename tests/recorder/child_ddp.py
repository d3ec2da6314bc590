"""Two-rank DDP training on gloo (CPU) with a Recorder on each rank.

Rank 0 first prints ``ref NAME NORM`` for each parameter: the gradient norm
of the full batch computed without DDP, which is what the all-reduced
gradient recorded at step 0 must equal.
"""

from __future__ import annotations

import sys

import _dist_child
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from recorders.torch import Recorder


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))


def worker(rank: int, run_dir: str) -> None:
    x, y = _dist_child.data()
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


if __name__ == "__main__":
    sys.exit(_dist_child.main(worker, "ddp-store"))
