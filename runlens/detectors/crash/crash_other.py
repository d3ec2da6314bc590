"""The ``crash_other`` detector: the run died of any other exception."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.crash.base import CrashDetector


@register
class CrashOther(CrashDetector):
    """The run died of an exception that is not a memory, shape, device or dtype error.

    What it detects:
        A crashed run whose recorded exception matches none of the
        ``crash_oom``, ``crash_shape_mismatch``, ``crash_device_mismatch``
        and ``crash_dtype_mismatch`` wordings. Known families still get a
        specific cause: CUDA ``device-side assert triggered`` and ``Target N
        is out of bounds`` (a label or token id out of range), autograd
        misuse (``does not have a grad_fn``, ``backward through the graph a
        second time``, in-place modification), a check that stopped a value
        gone NaN/Inf (anomaly mode's ``returned nan values``,
        ``clip_grad_norm_``'s ``is non-finite, so it cannot be clipped``, a
        distribution's ``found invalid values``, ``FloatingPointError``),
        NCCL/process-group failures, and ``KeyboardInterrupt``.

    Why it matters:
        The training code raised and the run stopped; the traceback in
        run.json says where. Everything the run logged before is still
        analysed by the other detectors.

    How it decides:
        Only for runs whose status is ``crashed`` (a finished run never gets
        a crash code): the exception is decoded by ``runlens.detectors.crash.decode.decode``
        and this detector takes what no specific pattern claimed.

        Messages recognized (from PyTorch's source), with a cause of their
        own: ``index out of range in self`` (an embedding's token id,
        TensorAdvancedIndexing.cpp), ``Target 5 is out of bounds.``
        (LossNLL.cpp), ``device-side assert triggered``, autograd's ``does
        not have a grad_fn`` and ``modified by an inplace operation``. The
        full table is ``tests/detectors/crash_cases.py``.

    What to try:
        1. Read the last frames of ``error.traceback`` in run.json.
        2. For a device-side assert, check label and token ranges, and rerun
           on the CPU to get a readable error.
        3. Reproduce the failing step alone with the same batch and seed.

    Parameters:
        None: the decision is a match on the recorded exception.
    """

    code = "crash_other"
    title = "Crashed with an exception"
