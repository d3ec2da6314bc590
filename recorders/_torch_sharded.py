"""Full-parameter statistics of a sharded model (FSDP2 ``fully_shard``, DTensor parameters).

Each rank holds a shard of every parameter and of its gradient. The
recorder computes its per-parameter pieces on the local shards (squared-norm
parts, local abs max, local zero-sample fractions with their sample sizes,
sampled update norms scaled to the local shard) and combines them across
the ranks with ONE collective per recorded step: an ``all_gather`` of the
step's combinable vector, reduced on each rank (sum of squares for norms,
max for abs max, sample-weighted mean for zero fractions, sum for counts).
Names, shapes and depth order come from the unsharded module (a DTensor's
``shape`` is the full one). Every rank must take part on the same steps, so
under sharding all ranks compute layer statistics on layer steps; only the
``layer_ranks`` write them.

Supported placements: ``Shard`` on a one-dimensional mesh (what
``fully_shard`` makes). A parameter replicated on some mesh dimension
(HSDP) would be counted once per replica: refused at construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from recorders import _torch_norms as tn

try:
    from torch.distributed.tensor import DTensor, Shard

    HAVE_DTENSOR = True
except ImportError:  # torch without distributed tensors: no parameter is one
    HAVE_DTENSOR = False

Tensor = torch.Tensor
L2, MAX, SUM, WEIGHTED = "l2", "max", "sum", "weighted"
RULES = {"pre": L2, "applied": L2, "weight": L2, "update": L2, "amax": MAX, "zero": WEIGHTED, "zero_n": SUM,
         "nonzero": SUM}


def is_sharded(params: Sequence[Tensor]) -> bool:
    return HAVE_DTENSOR and any(isinstance(p, DTensor) for p in params)


class ShardedNorms(tn.LocalNorms):
    """The recorder's norm functions on local shards, plus the one cross-rank combine."""

    sharded = True

    def __init__(self, params: Sequence[Tensor]) -> None:
        meshes = {id(p.device_mesh): p for p in params if isinstance(p, DTensor)}
        first = next(iter(meshes.values()))
        bad = [p for p in params if isinstance(p, DTensor)
               and (p.device_mesh.ndim != 1 or not all(isinstance(pl, Shard) for pl in p.placements))]
        if len(meshes) != 1 or bad:
            raise ValueError("runlens: sharded parameters must all be Shard()-placed on one 1-D device "
                             "mesh (FSDP2 fully_shard); replicated or multi-dimensional placements are "
                             "not supported")
        self.group = first.device_mesh.get_group()
        self.world = first.device_mesh.size()
        self._device = first.to_local().device

    @staticmethod
    def local(t: Tensor) -> Tensor:
        return t.to_local() if isinstance(t, DTensor) else t

    def device(self, params: Sequence[Tensor]) -> torch.device:
        return self._device

    def combine(self, pieces: list[Tensor], keys: list[tuple[str, int]]) -> list[Tensor]:
        """Pieces with the combinable ones replaced by their full-parameter values (one collective)."""
        import torch.distributed as dist

        which = [i for i, (k, _) in enumerate(keys) if k in RULES]
        if not which:
            return pieces
        # float64: a norm of 1e-22 squares to 1e-44, under float32's normal range.
        local = torch.cat([pieces[i].double() ** 2 if RULES[keys[i][0]] == L2 else pieces[i].double()
                           for i in which])
        gathered = [torch.empty_like(local) for _ in range(self.world)]
        dist.all_gather(gathered, local, group=self.group)
        stacked = torch.stack(gathered)
        parts = dict(zip((keys[i][0] for i in which), stacked.split([keys[i][1] for i in which], dim=1),
                         strict=True))
        out = list(pieces)
        for i in which:
            key, rule = keys[i][0], RULES[keys[i][0]]
            values = parts[key]
            if rule == L2:
                out[i] = values.sum(0).sqrt()
            elif rule == MAX:
                out[i] = values.amax(0)  # NaN propagates: a NaN on any rank is NaN
            elif rule == WEIGHTED and "zero_n" in parts:
                n = parts["zero_n"]
                out[i] = (values * n).sum(0) / n.sum(0).clamp_min(1)
            else:
                out[i] = values.sum(0)
        return out


def norms_for(params: Sequence[Tensor]) -> Any:
    """The norm functions for ``params``: ShardedNorms when any is a DTensor."""
    return ShardedNorms(params) if is_sharded(params) else tn.LocalNorms()
