"""The ``crash_shape_mismatch`` detector: the run died of a tensor shape mismatch."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.crash.base import CrashDetector


@register
class CrashShapeMismatch(CrashDetector):
    """The run died because two tensors' shapes did not fit an operation.

    What it detects:
        A crashed run whose exception is a shape or size mismatch:
        ``mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)``,
        ``size mismatch`` (also when loading a state dict), ``The size of
        tensor a (3) must match the size of tensor b (4)``, ``shape '[...]'
        is invalid for input of size N``, ``Expected input batch_size (64)
        to match target batch_size (32)``, channel-count, dimensionality and
        ``torch.cat``/``stack`` size errors.

    Why it matters:
        The model as written cannot process the data it is given: usually a
        Linear layer's ``in_features`` does not match the flattened output
        before it, the number of classes does not match the labels, or a
        ragged last batch meets a hard-coded reshape.

    How it decides:
        Only for runs whose status is ``crashed``: the recorded exception's
        message is matched against PyTorch's shape wordings
        (``runlens.detectors.crash.decode.PATTERNS``); the shapes or sizes named in the
        message go into the evidence with the step it died at.

        The cause says the mismatch in the message's own numbers where it
        can: "a matrix product got 512 features per row where the layer
        takes 256", "the model produced 64 predictions for 32 targets", "the
        recurrent layer takes 8 features per time step but got 9".

        Messages recognized (from PyTorch's source): ``mat1 and mat2 shapes
        cannot be multiplied`` (aten/src/ATen/native/LinearAlgebra.cpp);
        ``The size of tensor a (3) must match the size of tensor b (4) at
        non-singleton dimension`` and ``The expanded size of the tensor``
        (aten/src/ATen/ExpandUtils.cpp); ``shape '[...]' is invalid for
        input of size`` (aten/src/ATen/InferSize.h); the loss functions'
        ``Expected input batch_size (..) to match target batch_size (..)``
        and ``multi-target not supported`` (aten/src/ATen/native/LossNLL.cpp)
        and ``Target size (...) must be the same as input size``
        (torch/nn/functional.py); the recurrent layers' ``input.size(-1)
        must be equal to input_size``, ``Expected hidden size`` /
        ``Expected hidden[1] size`` and ``Expected input to be 2D or 3D``
        (torch/nn/modules/rnn.py); convolution's ``expected input[...] to
        have 3 channels`` and ``Kernel size can't be greater than actual
        input size`` (aten/src/ATen/native/Convolution.cpp); ``Output size
        is too small`` (Pool.h); ``Given normalized_shape=`` (layer_norm.h);
        ``running_mean should contain N elements`` (Normalization.cpp);
        ``Sizes of tensors must match except in dimension`` and ``stack
        expects each tensor to be equal size`` (TensorShape.cpp);
        ``Dimension out of range`` (c10/core/WrapDimMinimal.cpp); a state
        dict's ``size mismatch for``. The full table is
        ``tests/detectors/crash_cases.py``.

    What to try:
        1. Print ``x.shape`` before the failing layer and compare it with
           the layer's expected input (the numbers are in the evidence).
        2. Check the first Linear after a flatten, the classifier's output
           size against the number of classes, and reshape arguments.
        3. If it fails on the last batch of an epoch, use ``drop_last=True``
           or avoid hard-coded batch sizes in ``view``/``reshape``.

    Parameters:
        None: the decision is a match on the recorded exception.
    """

    code = "crash_shape_mismatch"
    title = "Tensor shape mismatch"
