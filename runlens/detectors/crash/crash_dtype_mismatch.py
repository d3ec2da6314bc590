"""The ``crash_dtype_mismatch`` detector: tensors of incompatible dtypes."""

from __future__ import annotations

from runlens.detectors._base import register
from runlens.detectors.crash.base import CrashDetector


@register
class CrashDtypeMismatch(CrashDetector):
    """The run died because an operation received tensors of the wrong dtype.

    What it detects:
        A crashed run whose exception is a dtype error: ``expected scalar
        type Float but found Double``, ``mat1 and mat2 must have the same
        dtype``, ``Found dtype Long but expected Float``, ``"addmm" not
        implemented for 'Half'``, ``Expected tensor for argument #1 'indices'
        to have one of the following scalar types: Long, Int``, ``result
        type Float can't be cast to the desired output type Long``,
        ``Input type (torch.FloatTensor) and weight type
        (torch.DoubleTensor) should be the same``, ``value cannot be
        converted to type at::Half without overflow``.

    Why it matters:
        Data arrives in a dtype the model or loss does not take: numpy
        arrays are float64 while modules are float32; cross-entropy wants
        integer class targets, MSE and BCE want float ones; half precision
        cannot hold a large constant such as ``-1e9`` in a mask.

    How it decides:
        Only for runs whose status is ``crashed``: the recorded exception is
        matched against PyTorch's dtype wordings (``runlens.detectors.crash.decode.PATTERNS``);
        the dtypes named in the message go into the evidence.

        Messages recognized (from PyTorch's source): ``mat1 and mat2 must
        have the same dtype``, ``expected m1 and m2 to have the same
        dtype`` (also bf16 autocast against float32) and ``expected scalar
        type Float but found Double`` (aten/src/ATen/native/LinearAlgebra.cpp);
        ``Expected object of scalar type Long but got scalar type Float``
        (PyTorch 0.4-1.x); convolution's ``Input type (double) and bias type
        (float) should be the same`` when both sides are on one device;
        the loss functions' target checks ``expected target dtype to be
        Long or Byte, but got Float`` and ``Expected floating point type
        for target with class probabilities`` (LossNLL.cpp); TensorIterator's
        ``Found dtype Long but expected Float`` and the in-place cast check
        ``result type Float can't be cast to the desired output type Long``
        (aten/src/ATen/TensorIterator.cpp); the indexing ops' ``Index put
        requires the source and destination dtypes match``, ``index_add_():
        ... must have the same scalar type``, ``index_select(): Expected
        dtype int32 or int64 for index``, ``masked_fill_ only supports
        boolean masks`` (TensorAdvancedIndexing.cpp), ``gather(): Expected
        dtype int32/int64 for index`` and ``scatter(): Expected self.dtype
        to be equal to src.dtype`` (ScatterGatherChecks.h), ``tensors used
        as indices must be long, int, byte or bool tensors``
        (IndexingUtils.h); embedding's ``to have one of the following scalar
        types: Long, Int`` (TensorUtils.cpp); ``one_hot is only applicable
        to index tensor of type LongTensor`` (Onehot.cpp); ``"op" not
        implemented for 'Half'`` (Dispatch.h); ``cannot be converted to
        type ... without overflow``. The full table is
        ``tests/detectors/crash_cases.py``.

    What to try:
        1. Convert at the data boundary: ``x.float()`` for inputs from
           numpy, ``y.long()`` for classification targets, ``y.float()`` for
           regression and BCE targets.
        2. Under autocast, compute the loss in float32 and use
           ``torch.finfo(dtype).min`` instead of hard-coded large constants.

    Parameters:
        None: the decision is a match on the recorded exception.
    """

    code = "crash_dtype_mismatch"
    title = "Tensor dtype mismatch"
