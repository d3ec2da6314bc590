"""Batched tensor math behind the recorder: norms and sampled statistics.

Every function takes a list of tensors (one per recorded parameter) and
returns one float32 vector on the first tensor's device, without a host
sync: the recorder concatenates the vectors of a step and moves them to the
host once.

Sampling: ``update_norm`` and (by default) ``grad_zero_frac`` are measured on
a fixed random sample of ``k`` elements per tensor (all elements when the
tensor has at most ``k``). The sample is drawn once, from a private
generator, so the training's RNG state is untouched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

Tensor = torch.Tensor


def _stack(values: Sequence[Tensor], device: torch.device) -> Tensor:
    try:
        return torch.stack(values)
    except RuntimeError:  # mixed devices or dtypes: rare, so the slow way is fine
        return torch.stack([v.to(device=device, dtype=torch.float32) for v in values])


def l2_norms(tensors: Sequence[Tensor]) -> Tensor:
    """Per-tensor L2 norms in float32 (NaN/Inf when a tensor holds any)."""
    if not tensors:
        return torch.empty(0)
    return _stack(torch._foreach_norm(list(tensors), 2, dtype=torch.float32), tensors[0].device)


def abs_maxes(tensors: Sequence[Tensor]) -> Tensor:
    """Per-tensor largest absolute element (NaN when a tensor holds NaN)."""
    if not tensors:
        return torch.empty(0)
    device = tensors[0].device
    if device.type == "cpu":
        # amax and amin allocate nothing the size of a tensor; on CPU the
        # pair beats aminmax by ~30% and the foreach abs+max pair by ~2x.
        hi = _stack([torch.amax(t) for t in tensors], device).float()
        lo = _stack([torch.amin(t) for t in tensors], device).float()
        return torch.maximum(hi, -lo)
    maxes = torch._foreach_max(torch._foreach_abs(list(tensors)))
    return _stack(maxes, device).float()


def nonzero_counts(tensors: Sequence[Tensor]) -> Tensor:
    """Exact per-tensor count of non-zero elements (one full pass)."""
    device = tensors[0].device
    return _stack([torch.count_nonzero(t) for t in tensors], device).float()


def nonfinite_counts(tensors: Sequence[Tensor]) -> Tensor:
    """Exact per-tensor count of NaN/Inf elements; only called on anomalous steps."""
    device = tensors[0].device
    return _stack([(~torch.isfinite(t)).sum() for t in tensors], device).float()


class Sample:
    """A fixed random subset of each tensor's elements, gathered as one flat vector."""

    def __init__(self, shapes: Sequence[torch.Size], k: int, device: torch.device, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(seed)
        self.device = device
        self.numel = [math.prod(s) for s in shapes]
        self.counts = [min(n, k) for n in self.numel]
        self.index: list[Tensor | None] = []
        for n, c in zip(self.numel, self.counts, strict=False):
            if c == n:
                self.index.append(None)
            else:
                self.index.append(torch.randperm(n, generator=gen)[:c].sort().values.to(device))
        self.sqrt_scale = torch.tensor([math.sqrt(n / c) for n, c in zip(self.numel, self.counts, strict=False)],
                                       dtype=torch.float32, device=device)
        self.count_t = torch.tensor(self.counts, dtype=torch.float32, device=device)
        self.exact = all(i is None for i in self.index)

    def gather(self, tensors: Sequence[Tensor | None]) -> Tensor:
        """A new float32 vector holding the sampled elements (a copy, never a view); None reads as 0."""
        parts = [torch.zeros(c, device=self.device) if t is None else t.reshape(-1) if i is None
                 else t.reshape(-1).index_select(0, i)
                 for t, i, c in zip(tensors, self.index, self.counts, strict=False)]
        return torch.cat(parts).float()

    def _segment_norms(self, values: Tensor, ord: int) -> Tensor:
        # Segments are contiguous, so split views + one foreach norm beat a
        # scatter (index_add_ is slow on CPU).
        return _stack(torch._foreach_norm(list(values.split(self.counts)), ord), values.device)

    def update_norms(self, before: Tensor, after: Tensor) -> Tensor:
        """Estimated per-tensor ||after - before||: sampled norm scaled by sqrt(n/k)."""
        return self._segment_norms(after - before, 2) * self.sqrt_scale

    def zero_fracs(self, tensors: Sequence[Tensor | None]) -> Tensor:
        """Estimated per-tensor fraction of elements exactly 0."""
        zeros = (self.gather(tensors) == 0).float()
        return self._segment_norms(zeros, 1) / self.count_t
