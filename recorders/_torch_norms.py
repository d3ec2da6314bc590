"""Batched tensor math behind the recorder: norms and sampled statistics.

Every function takes a list of tensors (one per recorded parameter) and
returns one vector on the first tensor's device, without a host sync: the
recorder concatenates the vectors of a step and moves them to the host
once. L2 norms come back in float64 and are right for elements from 1e-30
to 1e30 in every floating dtype (see :func:`l2_norms`).

Sampling: ``update_norm`` and (by default) ``grad_zero_frac`` are measured on
a fixed random sample of ``k`` elements per tensor (all elements when the
tensor has at most ``k``). The sample is drawn once, from a private
generator, so the training's RNG state is untouched.

:class:`Layout` is the recorder's fast path: small tensors stacked by shape
(a few kernels for any number of them), large ones reduced chunk by chunk
while the chunk is in cache (:func:`norms_and_maxes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

Tensor = torch.Tensor


def _stack(values: Sequence[Tensor], device: torch.device) -> Tensor:
    try:
        return torch.stack(list(values))
    except RuntimeError:  # mixed devices or dtypes: rare, so the slow way is fine
        return torch.stack([v.to(device=device, dtype=torch.float32) for v in values])


# A float32 element below 2**-63 squares to under float32's normal range (its share of the sum is
# lost) and one above 2**64 squares to inf. A float32 norm n of m elements is therefore within float32
# rounding of the truth when it is finite and n >= sqrt(m) * 2**-51: the share lost is then under
# 2**-24 of n**2. Norms outside that are recomputed in float64.
TRUSTED_FROM = 2.0 ** -51


def _fast_dtype(t: Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def checked(norms: Tensor, numel: Sequence[int], exact: Callable[[list[int]], Tensor]) -> Tensor:
    """CPU float32 ``norms`` as float64, those float32 cannot be trusted for replaced by ``exact(indices)``.

    On CPU float64 reductions of float32 data run ~10x slower than float32 ones (measured: 8 512x512
    tensors, 3.0 ms against 0.3 ms), so the fast pass stays float32 and only tiny or overflowing
    norms pay for float64; reading the flags is free there (host tensors, no device to wait for).
    """
    out = norms.double()
    bound = torch.tensor(numel, dtype=torch.float64).sqrt() * TRUSTED_FROM
    doubtful = ~(out >= bound) & ~out.isnan() | out.isinf()
    idx = doubtful.nonzero().flatten().tolist()
    if idx:
        out[idx] = exact(idx).double()
    return out


def l2_norms(tensors: Sequence[Tensor]) -> Tensor:
    """Per-tensor L2 norms in float64 (NaN/Inf when a tensor holds any).

    On an accelerator the fused multi-tensor kernel accumulates in the output dtype, float64, a
    memory-bound pass like the float32 one; on CPU a float32 pass checked by :func:`checked`.
    """
    if not tensors:
        return torch.empty(0, dtype=torch.float64)
    device = tensors[0].device
    if device.type != "cpu":
        return _stack(torch._foreach_norm(list(tensors), 2, dtype=torch.float64), device)
    if any(t.dtype == torch.float64 for t in tensors):
        fast = torch.stack([torch.linalg.vector_norm(t, dtype=_fast_dtype(t)).double() for t in tensors])
    else:
        fast = _stack(torch._foreach_norm(list(tensors), 2, dtype=torch.float32), device)
    return checked(fast, [t.numel() for t in tensors],
                   lambda idx: torch.stack([torch.linalg.vector_norm(tensors[i], dtype=torch.float64)
                                            for i in idx]))


def row_norms(m: Tensor) -> Tensor:
    """L2 norm of each row of a matrix, float64, with :func:`l2_norms`' guarantees."""
    if m.device.type != "cpu" or m.dtype == torch.float64:
        return torch.linalg.vector_norm(m, dim=1, dtype=torch.float64)
    fast = torch.linalg.vector_norm(m, dim=1, dtype=torch.float32)
    return checked(fast, [m.shape[1]] * m.shape[0],
                   lambda idx: torch.linalg.vector_norm(m[idx], dim=1, dtype=torch.float64))


def difference(after: Tensor, before: Tensor) -> Tensor:
    """``after - before`` in at least float32 (half-precision differences would round)."""
    if after.dtype in (torch.float32, torch.float64) and after.dtype == before.dtype:
        return after - before
    return after.float() - before.float()


SMALL = 1 << 16  # elements: below this a tensor's kernel-launch cost outweighs its data


def abs_maxes(tensors: Sequence[Tensor]) -> Tensor:
    """Per-tensor largest absolute element (NaN when a tensor holds NaN).

    On an accelerator: the inf-norm, one fused multi-tensor pass (no
    temporary). On CPU the inf-norm takes a slow path (10x the alternatives,
    measured on 8 512x512 tensors); there large tensors take ``amax`` and
    ``amin`` (neither allocates; ~35% faster than ``torch.aminmax``) and
    small ones one foreach abs + max pair (2x faster than two calls per
    tensor on 1,000 tensors of 1,024 elements, 3x slower on large ones).
    """
    if not tensors:
        return torch.empty(0)
    device = tensors[0].device
    if device.type != "cpu":
        wide = torch.float64 if any(t.dtype == torch.float64 for t in tensors) else torch.float32
        return _stack(torch._foreach_norm(list(tensors), math.inf, dtype=wide), device)
    if any(t.numel() == 0 for t in tensors):  # an empty shard: max of nothing is 0 here
        return torch.stack([t.abs().max().float() if t.numel() else torch.zeros((), device=device)
                            for t in tensors])
    small = [i for i, t in enumerate(tensors) if t.numel() <= SMALL]
    if len(small) == len(tensors):
        return _stack(torch._foreach_max(torch._foreach_abs(list(tensors))), device).float()
    out = torch.empty(len(tensors), dtype=torch.float32)
    if small:
        out[small] = _stack(torch._foreach_max(torch._foreach_abs([tensors[i] for i in small])), device).float()
    big = [i for i, t in enumerate(tensors) if t.numel() > SMALL]
    hi = _stack([torch.amax(tensors[i]) for i in big], device).float()
    lo = _stack([torch.amin(tensors[i]) for i in big], device).float()
    out[big] = torch.maximum(hi, -lo)
    return out


CHUNK = 1 << 18  # elements (1 MiB of float32): read twice while it sits in a core's L2 cache


def norms_and_maxes(tensors: Sequence[Tensor], abs_max: bool) -> tuple[Tensor, Tensor | None]:
    """Per-tensor L2 norms and (``abs_max``) largest absolute elements of large tensors.

    On CPU each chunk of a tensor is reduced by all three kernels (norm,
    ``amax``, ``amin``) back to back, so only the first reads memory and the
    others hit the cache: measured right after backward on the MLP's
    512x512 gradients, 1.1 ms against 2.2 ms for a norm pass then a max pass.
    On an accelerator the fused multi-tensor kernels do better.
    """
    if tensors[0].device.type != "cpu" or any(t.numel() == 0 for t in tensors):
        return l2_norms(tensors), abs_maxes(tensors) if abs_max else None
    norms, maxes = [], []
    for t in tensors:
        n, m = [], []
        for c in t.reshape(-1).split(CHUNK):
            n.append(torch.linalg.vector_norm(c, dtype=_fast_dtype(c)))
            if abs_max:  # NaN propagates through amax and amin
                m.append(torch.maximum(torch.amax(c), -torch.amin(c)))
        norms.append(n[0].double() if len(n) == 1 else torch.linalg.vector_norm(torch.stack(n).double()))
        if abs_max:
            maxes.append(m[0] if len(m) == 1 else torch.stack(m).amax())
    exact = checked(torch.stack(norms), [t.numel() for t in tensors],
                    lambda idx: torch.stack([torch.linalg.vector_norm(tensors[i], dtype=torch.float64)
                                             for i in idx]))
    return exact, torch.stack(maxes).float() if abs_max else None


def nonzero_counts(tensors: Sequence[Tensor]) -> Tensor:
    """Exact per-tensor count of non-zero elements (one full pass)."""
    device = tensors[0].device
    return _stack([torch.count_nonzero(t) for t in tensors], device).float()


def nonfinite_counts(tensors: Sequence[Tensor]) -> Tensor:
    """Exact per-tensor count of NaN/Inf elements; only called on anomalous steps."""
    device = tensors[0].device
    return _stack([(~torch.isfinite(t)).sum() for t in tensors], device).float()


class LocalNorms:
    """The norm functions over whole (unsharded) tensors; a sharded model swaps in its own."""

    l2 = staticmethod(l2_norms)
    abs_max = staticmethod(abs_maxes)
    nonzero = staticmethod(nonzero_counts)
    nonfinite = staticmethod(nonfinite_counts)

    @staticmethod
    def local(t: Tensor) -> Tensor:
        return t

    def device(self, params: Sequence[Tensor]) -> torch.device:
        return params[0].device if params else torch.device("cpu")


class Sample:
    """A fixed random subset of each tensor's elements, gathered as one flat vector.

    Random elements, not contiguous runs (which would gather faster, with
    fewer cache lines): updates are often row-structured, and runs see far
    fewer distinct rows (docs/recorder.md has the measurements).
    """

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
        # A rank's shard of a small parameter may be empty (c == 0): it adds nothing.
        self.sqrt_scale = torch.tensor([math.sqrt(n / c) if c else 0.0
                                        for n, c in zip(self.numel, self.counts, strict=False)],
                                       dtype=torch.float32, device=device)
        self.count_t = torch.tensor(self.counts, dtype=torch.float32, device=device)
        self.exact = all(i is None for i in self.index)

    def gather(self, tensors: Sequence[Tensor | None]) -> Tensor:
        """A new float32 vector holding the sampled elements (a copy, never a view); None reads as 0."""
        parts = [torch.zeros(c, device=self.device) if t is None else t.reshape(-1) if i is None
                 else t.reshape(-1).index_select(0, i)
                 for t, i, c in zip(tensors, self.index, self.counts, strict=False)]
        out = torch.cat(parts)
        return out if out.dtype == torch.float64 else out.float()

    def _segment_norms(self, values: Tensor, ord: int) -> Tensor:
        # Segments are contiguous, so split views + one foreach norm beat a
        # scatter (index_add_ is slow on CPU).
        return _stack(torch._foreach_norm(list(values.split(self.counts)), ord), values.device)

    def update_norms(self, before: Tensor, after: Tensor) -> Tensor:
        """Estimated per-tensor ||after - before|| (float64): sampled norm scaled by sqrt(n/k)."""
        return l2_norms(list((after - before).split(self.counts))) * self.sqrt_scale.double()

    def zero_fracs(self, tensors: Sequence[Tensor | None]) -> Tensor:
        """Estimated per-tensor fraction of elements exactly 0."""
        zeros = (self.gather(tensors) == 0).float()
        return self._segment_norms(zeros, 1) / self.count_t.clamp_min(1)


class Layout:
    """The parameters grouped for batched reductions, so small tensors cost no per-tensor kernels.

    Tensors of at most ``small`` elements are stacked by shape into one
    ``(m, n)`` matrix per shape; each statistic is then one reduction over
    the matrix's rows, whatever the number of tensors (a 1,000-tensor
    model pays for a handful of kernels, not thousands). Such tensors are
    small enough to take whole: their update norms and zero fractions are
    exact. Larger tensors keep one kernel each (their data, not the launch,
    dominates) and the sampled statistics of :class:`Sample`. Results come
    back in parameter order through one precomputed permutation.
    """

    def __init__(self, shapes: Sequence[torch.Size], small: int, zero_k: int, device: torch.device) -> None:
        numel = [math.prod(s) for s in shapes]
        self.usable = bool(shapes) and all(n > 0 for n in numel)  # an empty shard takes the general path
        by_shape: dict[tuple[int, ...], list[int]] = {}
        self.large: list[int] = []
        for i, (shape, n) in enumerate(zip(shapes, numel, strict=True)):
            if n <= small:
                by_shape.setdefault(tuple(shape), []).append(i)
            else:
                self.large.append(i)
        self.groups = list(by_shape.values())
        order = [i for g in self.groups for i in g] + self.large
        inverse = [0] * len(order)
        for pos, i in enumerate(order):
            inverse[i] = pos
        self.inverse = torch.tensor(inverse, dtype=torch.long, device=device)
        big = [shapes[i] for i in self.large]
        self.update = Sample(big, small, device)
        self.zero = Sample(big, zero_k, device, seed=1)
        # Elements each zero fraction was measured on (a sharded model's weighted mean needs them).
        self.zero_count_t = self._order([torch.full((len(g),), float(numel[g[0]]), device=device)
                                         for g in self.groups] + [self.zero.count_t])

    def _order(self, parts: list[Tensor]) -> Tensor:
        # Norms stay float64 (cat promotes the float32 pieces beside them).
        parts = [p if p.dtype == torch.float64 else p.float() for p in parts if p.numel()]
        return torch.cat(parts)[self.inverse] if parts else torch.empty(0)

    def _mats(self, tensors: Sequence[Tensor]) -> list[Tensor]:
        return [torch.stack([tensors[i] for i in g]).reshape(len(g), -1) for g in self.groups]

    def _big(self, tensors: Sequence[Tensor]) -> list[Tensor]:
        return [tensors[i] for i in self.large]

    def l2(self, tensors: Sequence[Tensor]) -> Tensor:
        """Per-tensor L2 norms, in parameter order."""
        big = self._big(tensors)
        return self._order([row_norms(m) for m in self._mats(tensors)] + ([l2_norms(big)] if big else []))

    def grad_stats(self, grads: Sequence[Tensor], abs_max: bool) -> tuple[Tensor, Tensor | None, Tensor]:
        """``(L2 norms, largest |element| or None, zero fractions)`` of every gradient, one stack per shape."""
        mats, big = self._mats(grads), self._big(grads)
        l2 = [row_norms(m) for m in mats]
        # amax and amin do not allocate; NaN propagates through both.
        amax = [torch.maximum(m.amax(1), -m.amin(1)) for m in mats] if abs_max else []
        zero = [(m == 0).view(torch.uint8).sum(1, dtype=torch.int32) / m.shape[1] for m in mats]
        if big:
            norms, maxes = norms_and_maxes(big, abs_max)
            l2.append(norms)
            if maxes is not None:
                amax.append(maxes)
            zero.append(self.zero.zero_fracs(big))
        return self._order(l2), self._order(amax) if abs_max else None, self._order(zero)

    def before(self, weights: Sequence[Tensor]) -> tuple[list[Tensor], Tensor | None]:
        """Copies of the small weights whole and of the large ones' samples, for :meth:`weight_stats`."""
        big = self._big(weights)
        return self._mats(weights), self.update.gather(big) if big else None

    def weight_stats(self, weights: Sequence[Tensor], before: tuple[list[Tensor], Tensor | None]) -> tuple[
            Tensor, Tensor]:
        """``(weight L2 norms, update norms)`` in parameter order; ``before`` from :meth:`before`."""
        mats, big = self._mats(weights), self._big(weights)
        norms = [row_norms(m) for m in mats]
        update = [row_norms(difference(m, b)) for m, b in zip(mats, before[0], strict=True)]
        if big:
            assert before[1] is not None, "before() gathers the large weights whenever there are any"
            norms.append(l2_norms(big))
            update.append(self.update.update_norms(before[1], self.update.gather(big)))
        return self._order(norms), self._order(update)
