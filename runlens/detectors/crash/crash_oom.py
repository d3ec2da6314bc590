"""The ``crash_oom`` detector: the run died of an out-of-memory error."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.crash import decode as crash
from runlens.detectors.crash.base import CrashDetector


@register
class CrashOom(CrashDetector):
    """The run died because a device (GPU, MPS, CPU) could not allocate memory.

    What it detects:
        A crashed run whose recorded exception is an out-of-memory error:
        ``torch.OutOfMemoryError`` / ``CUDA out of memory. Tried to allocate
        ...``, ``CUBLAS_STATUS_ALLOC_FAILED``, ``MPS backend out of memory``,
        ``DefaultCPUAllocator: can't allocate memory``, a Python
        ``MemoryError``, HIP/XPU out of memory, or a DataLoader worker killed
        by the system (the kernel's OOM killer).

    Why it matters:
        The step's activations, gradients and optimizer state did not fit.
        When it happens late in a run rather than on the first step, memory
        grew over time: typically a tensor that still carries its graph is
        kept across steps (``losses.append(loss)``), or sequence lengths vary
        and a long batch finally arrived.

    How it decides:
        Only for runs whose status is ``crashed``: run.json's ``error`` type
        and message are matched against PyTorch's out-of-memory wordings
        (``runlens.detectors.crash.decode.PATTERNS``). The evidence carries the size the
        allocator asked for and the device's capacity when the message names
        them, the step it died at and the last finite loss and gradient norm.

        The numbers decide the advice. A single allocation of 2 TiB or more
        (more than any accelerator holds, and more than nearly any host), or
        of 64x or more the capacity the message states, is not a batch that
        is slightly too big: the size itself is wrong (a broadcast of (N,1)
        against (1,N), a length read from corrupt data). Such a crash keeps
        the code but gets pattern ``implausible_allocation``,
        ``allocation_larger_than_any_device: true`` in the evidence, and
        advice to print the shapes instead of reducing the batch size.

        Messages recognized (from PyTorch's source): ``CUDA out of memory.
        Tried to allocate 20.00 MiB. GPU 0 has a total capacity of ...``
        and its 1.x form ``(GPU 0; 15.78 GiB total capacity; ...)``
        (c10/cuda/CUDACachingAllocator.cpp); ``DefaultCPUAllocator: can't
        allocate memory: you tried to allocate N bytes`` and, on Windows,
        ``DefaultCPUAllocator: not enough memory: ...``
        (c10/core/impl/alloc_cpu.cpp); ``MPS backend out of memory (MPS
        allocated: ..., max allowed: ...). Tried to allocate ...``
        (aten/src/ATen/mps/MPSAllocator.mm); ``CUBLAS_STATUS_ALLOC_FAILED``;
        ``CUDA error: out of memory``. The full table, with the file each
        wording comes from, is ``tests/detectors/crash_cases.py``.

    What to try:
        1. Reduce the batch size; keep the effective batch with gradient
           accumulation.
        2. Mixed precision (``torch.autocast``) and activation checkpointing.
        3. Keep scalars, not tensors, across steps (``loss.item()``) and call
           ``optimizer.zero_grad(set_to_none=True)``.
        4. For a late OOM with variable-length inputs, cap or bucket the
           sequence lengths.

    Parameters:
        None: the decision is a match on the recorded exception.
    """

    code = "crash_oom"
    title = "Out of memory"

    def headline(self, decoded: crash.Decoded, step: int | None) -> str:
        line = super().headline(decoded, step)
        if decoded.kind != "implausible_allocation":
            return line
        size = decoded.cause.split(" of ", 1)[1].split(" was ", 1)[0]
        return f"{line}: a single {size} allocation, larger than any device (a shape bug)"
