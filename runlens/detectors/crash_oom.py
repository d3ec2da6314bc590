"""The ``crash_oom`` detector: the run died of an out-of-memory error."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors._crash import CrashDetector


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
        (``runlens.detectors._crashtext.PATTERNS``). The evidence carries the size the
        allocator asked for and the device's capacity when the message names
        them, the step it died at and the last finite loss and gradient norm.

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
