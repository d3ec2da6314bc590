"""The ``crash_device_mismatch`` detector: tensors on different devices."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.crash.base import CrashDetector


@register
class CrashDeviceMismatch(CrashDetector):
    """The run died because an operation mixed tensors on different devices.

    What it detects:
        A crashed run whose exception says tensors live on different
        devices: ``Expected all tensors to be on the same device, but found
        at least two devices, cuda:0 and cpu!`` and its newer form (``but
        got mat2 is on cpu, different from other tensors on cuda:0``),
        ``Input type (torch.cuda.FloatTensor) and weight type
        (torch.FloatTensor) should be the same``, ``Placeholder storage has
        not been allocated on MPS device``, DataParallel's ``module must
        have its parameters and buffers on device``, and a GPU checkpoint
        loaded where CUDA is not available.

    Why it matters:
        Nothing trains until every tensor of an operation sits on one
        device. It usually means a batch was not moved to the GPU, a tensor
        was created inside ``forward`` without ``device=``, or the model was
        moved after the optimizer was built.

    How it decides:
        Only for runs whose status is ``crashed``: the recorded exception is
        matched against PyTorch's device wordings (``runlens.detectors.crash.decode.PATTERNS``);
        an ``Input type ... weight type`` error counts as a device mismatch
        when exactly one side names an accelerator (otherwise it is a dtype
        mismatch). The two devices go into the evidence when named.

        Messages recognized (from PyTorch's source): ``Expected all tensors
        to be on the same device, but found at least two devices, cuda:0
        and cpu!`` and its 2.x form ``but got mat2 is on cpu, different
        from other tensors on cuda:0``
        (aten/src/ATen/core/op_registration/adaption.cpp); ``Input type
        (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should
        be the same`` when exactly one side names an accelerator
        (aten/src/ATen/native/Convolution.cpp); ``Tensor on device meta is
        not on the expected device cpu!`` (TensorIterator.cpp); ``Input and
        hidden tensors are not at the same device`` (cudnn/RNN.cpp);
        ``Placeholder storage has not been allocated on MPS device!``;
        ``Attempting to deserialize object on a CUDA device but
        torch.cuda.is_available() is False`` (torch/serialization.py). The
        full table is ``tests/detectors/crash_cases.py``.

    What to try:
        1. Move inputs and targets to the model's device every step.
        2. Create new tensors with ``device=x.device`` (or register them as
           buffers so ``model.to`` moves them).
        3. Call ``model.to(device)`` before building the optimizer; load
           checkpoints with ``map_location``.

    Parameters:
        None: the decision is a match on the recorded exception.
    """

    code = "crash_device_mismatch"
    title = "Tensors on different devices"
