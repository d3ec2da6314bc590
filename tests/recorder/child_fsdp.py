"""Two-rank FSDP2 (``fully_shard``) training on gloo (CPU) with a Recorder on each rank.

Rank 0 first prints ``ref STEP NAME COLUMN VALUE`` lines: the statistics of
the same training done without sharding on the full batch, which the
recorded full-parameter statistics must equal. Each rank prints
``collectives N``: how many ``all_gather`` calls its ``rec.step`` calls made.
"""

from __future__ import annotations

import sys

import _dist_child
import torch
import torch.distributed as dist
from torch import nn

from recorders.torch import Recorder

STEPS = 3


def make_model() -> nn.Module:
    torch.manual_seed(0)
    # The last bias has one element: rank 1's shard of it is empty.
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))


def reference(x: torch.Tensor, y: torch.Tensor) -> None:
    ref = make_model()
    opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(STEPS):
        opt.zero_grad()
        nn.functional.mse_loss(ref(x), y).backward()
        before = {n: p.detach().clone() for n, p in ref.named_parameters()}
        stats = {n: {"grad_norm": p.grad.norm().item(), "grad_abs_max": p.grad.abs().max().item(),
                     "grad_zero_frac": (p.grad == 0).float().mean().item()} for n, p in ref.named_parameters()}
        opt.step()
        for n, p in ref.named_parameters():
            stats[n]["weight_norm"] = p.detach().norm().item()
            stats[n]["update_norm"] = (p.detach() - before[n]).norm().item()
            for col, value in stats[n].items():
                sys.stdout.write(f"ref {step} {n} {col} {value:.9g}\n")
                sys.stdout.flush()


def worker(rank: int, run_dir: str) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    x, y = _dist_child.data()
    if rank == 0:
        reference(x, y)
    mesh = init_device_mesh("cpu", (2,))
    model = make_model()
    for i in (0, 2, 4):
        fully_shard(model[i], mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    xs, ys = x.chunk(2)[rank], y.chunk(2)[rank]
    calls = {"n": 0}
    real = dist.all_gather

    def counted(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    with Recorder(run_dir, model, opt, flush_every=2, seed=0) as rec:
        for _ in range(STEPS):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(xs), ys)
            loss.backward()
            opt.step()
            dist.all_gather = counted
            rec.step(loss)
            dist.all_gather = real
    # One write per line: both ranks share the parent's pipe, and print's separate write of its newline
    # let the two ranks' lines run together ("collectives 3collectives 3"); a write under PIPE_BUF is whole.
    sys.stdout.write(f"collectives {calls['n']}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(_dist_child.main(worker, "fsdp-store"))
