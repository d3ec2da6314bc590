"""The crash cases shared by the tests of the crash package and of ``killed``.

``PYTORCH`` and ``WORDINGS`` are tables of error texts with the code each decodes to; each crash
code's test file runs its own rows (``pytorch_rows``, ``wording_rows``) through the checks below,
and ``crash/test_decode.py`` checks that the tables cover every code. ``crashed`` builds a run that
ended in an error record.
"""

from __future__ import annotations

import pytest
from edge_runs import make_run
from engine_runs import healthy, meta

from runlens.detectors.crash.decode import decode

OOM, SHAPE, DEVICE, DTYPE, OTHER = ("crash_oom", "crash_shape_mismatch", "crash_device_mismatch",
                                    "crash_dtype_mismatch", "crash_other")

# (source in pytorch/pytorch, exception type, message, code)
PYTORCH = [
    # -- out of memory: CUDA, CPU, MPS
    ("c10/cuda/CUDACachingAllocator.cpp", "torch.OutOfMemoryError",
     "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 15.78 GiB of which "
     "3.25 MiB is free. Of the allocated memory 14.90 GiB is allocated by PyTorch, and 112.40 MiB is reserved "
     "by PyTorch but unallocated.", OOM),
    ("c10/cuda/CUDACachingAllocator.cpp (1.x wording)", "RuntimeError",
     "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.2 GiB already "
     "allocated; 3.25 MiB free; 14.5 GiB reserved in total by PyTorch)", OOM),
    ("c10/core/impl/alloc_cpu.cpp", "RuntimeError",
     "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
     "allocate 34359738368 bytes. Error code 12 (Cannot allocate memory)", OOM),
    ("c10/core/impl/alloc_cpu.cpp (Windows)", "RuntimeError",
     "[enforce fail at C:\\actions-runner\\_work\\pytorch\\c10\\core\\impl\\alloc_cpu.cpp:81] data. "
     "DefaultCPUAllocator: not enough memory: you tried to allocate 19909509120 bytes.", OOM),
    ("aten/src/ATen/mps/MPSAllocator.mm", "RuntimeError",
     "MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.00 GB, max allowed: 18.13 GB). "
     "Tried to allocate 256.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper "
     "limit for memory allocations (may cause system failure).", OOM),
    ("aten/src/ATen/cuda/CublasHandlePool.cpp", "RuntimeError",
     "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", OOM),
    ("c10/cuda/CUDAException.cpp", "RuntimeError", "CUDA error: out of memory\nCUDA kernel errors might be "
     "asynchronously reported at some other API call", OOM),
    # -- shapes and sizes
    ("aten/src/ATen/native/LinearAlgebra.cpp", "RuntimeError",
     "mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)", SHAPE),
    ("aten/src/ATen/ExpandUtils.cpp (infer_size_impl)", "RuntimeError",
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1", SHAPE),
    ("aten/src/ATen/ExpandUtils.cpp (inferExpandGeometry)", "RuntimeError",
     "The expanded size of the tensor (3) must match the existing size (4) at non-singleton dimension 1.  "
     "Target sizes: [2, 3].  Tensor sizes: [2, 4]", SHAPE),
    ("aten/src/ATen/InferSize.h", "RuntimeError", "shape '[3, -1]' is invalid for input of size 10", SHAPE),
    ("aten/src/ATen/native/LossNLL.cpp", "ValueError",
     "Expected input batch_size (4) to match target batch_size (5).", SHAPE),
    ("aten/src/ATen/native/LossNLL.cpp", "RuntimeError",
     "0D or 1D target tensor expected, multi-target not supported", SHAPE),
    ("torch/nn/functional.py (binary_cross_entropy_with_logits)", "ValueError",
     "Target size (torch.Size([4])) must be the same as input size (torch.Size([4, 1]))", SHAPE),
    ("torch/nn/modules/rnn.py (RNNBase.check_input)", "RuntimeError",
     "input.size(-1) must be equal to input_size. Expected 8, got 9", SHAPE),
    ("torch/nn/modules/rnn.py (RNNBase.check_hidden_size)", "RuntimeError",
     "Expected hidden size (1, 2, 16), got [1, 2, 15]", SHAPE),
    ("torch/nn/modules/rnn.py (LSTM.check_forward_args)", "RuntimeError",
     "Expected hidden[1] size (1, 2, 16), got [1, 2, 17]", SHAPE),
    ("torch/nn/modules/rnn.py (LSTM.forward)", "ValueError", "LSTM: Expected input to be 2D or 3D, got 4D instead",
     SHAPE),
    ("torch/nn/modules/rnn.py (RNN.forward)", "ValueError",
     "RNN: Expected input to be 2D or 3D, got 4D tensor instead", SHAPE),
    ("aten/src/ATen/native/Convolution.cpp (check_shape_forward)", "RuntimeError",
     "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 1, 8, 8] to have 3 channels, but got 1 "
     "channels instead", SHAPE),
    ("aten/src/ATen/native/Convolution.cpp", "RuntimeError",
     "Calculated padded input size per channel: (3 x 3). Kernel size: (5 x 5). Kernel size can't be greater "
     "than actual input size", SHAPE),
    ("aten/src/ATen/native/Pool.h", "RuntimeError",
     "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is too small", SHAPE),
    ("aten/src/ATen/native/layer_norm.h", "RuntimeError",
     "Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[2, 8]", SHAPE),
    ("aten/src/ATen/native/Normalization.cpp", "RuntimeError", "running_mean should contain 6 elements not 8",
     SHAPE),
    ("aten/src/ATen/native/TensorShape.cpp (cat)", "RuntimeError",
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 "
     "in the list.", SHAPE),
    ("aten/src/ATen/native/TensorShape.cpp (stack)", "RuntimeError",
     "stack expects each tensor to be equal size, but got [3] at entry 0 and [4] at entry 1", SHAPE),
    ("c10/core/WrapDimMinimal.cpp", "IndexError",
     "Dimension out of range (expected to be in range of [-2, 1], but got 5)", SHAPE),
    ("torch/nn/modules/module.py (load_state_dict)", "RuntimeError",
     "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc.weight: copying a param with shape "
     "torch.Size([10, 512]) from checkpoint, the shape in current model is torch.Size([100, 512]).", SHAPE),
    # -- devices
    ("aten/src/ATen/core/op_registration/adaption.cpp (common_device_check_failure)", "RuntimeError",
     "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when "
     "checking argument for argument mat1 in method wrapper_CUDA_addmm)", DEVICE),
    ("aten/src/ATen/core/op_registration/adaption.cpp (2.x wording)", "RuntimeError",
     "Expected all tensors to be on the same device, but got mat2 is on cpu, different from other tensors on "
     "cuda:0 (when checking argument in method wrapper_CUDA_mm)", DEVICE),
    ("aten/src/ATen/native/Convolution.cpp (check_input_same_type_as_parameters)", "RuntimeError",
     "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same", DEVICE),
    ("aten/src/ATen/native/Convolution.cpp (check_input_same_type_as_parameters)", "RuntimeError",
     "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or input "
     "should be a MKLDNN tensor and weight is a dense tensor", DEVICE),
    ("aten/src/ATen/TensorIterator.cpp (compute_types)", "RuntimeError",
     "Tensor on device meta is not on the expected device cpu!", DEVICE),
    ("torch/serialization.py (validate_cuda_device)", "RuntimeError",
     "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are "
     "running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
     "storages to the CPU.", DEVICE),
    ("aten/src/ATen/native/mps/OperationUtils.mm", "RuntimeError",
     "Placeholder storage has not been allocated on MPS device!", DEVICE),
    ("aten/src/ATen/native/cudnn/RNN.cpp", "RuntimeError",
     "Input and hidden tensors are not at the same device, found input tensor at cuda:0 and hidden tensor at "
     "cpu", DEVICE),
    # -- dtypes: matmul, convolution, losses' targets, indexing and in-place ops
    ("aten/src/ATen/native/LinearAlgebra.cpp (addmm)", "RuntimeError",
     "mat1 and mat2 must have the same dtype, but got Double and Float", DTYPE),
    ("aten/src/ATen/native/LinearAlgebra.cpp (addmm_impl_cpu_)", "RuntimeError",
     "expected m1 and m2 to have the same dtype, but got: float != double", DTYPE),
    ("aten/src/ATen/native/LinearAlgebra.cpp (addmm_impl_cpu_, autocast bf16)", "RuntimeError",
     "expected m1 and m2 to have the same dtype, but got: c10::BFloat16 != float", DTYPE),
    ("aten/src/ATen/native/LinearAlgebra.cpp (bmm); torch/_meta_registrations.py", "RuntimeError",
     "expected scalar type Float but found Double", DTYPE),
    ("aten/src/ATen/native/LossNLL.cpp (1.x wording)", "RuntimeError",
     "expected scalar type Long but found Float", DTYPE),
    ("aten/src/THNN (0.4-1.x)", "RuntimeError", "Expected object of scalar type Long but got scalar type Float "
     "for argument #2 'target' in call to _thnn_nll_loss_forward", DTYPE),
    ("aten/src/ATen/native/Convolution.cpp (check_input_same_type_as_parameters)", "RuntimeError",
     "Input type (double) and bias type (float) should be the same", DTYPE),
    ("aten/src/ATen/native/Convolution.cpp (check_input_same_type_as_parameters)", "RuntimeError",
     "Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same", DTYPE),
    ("aten/src/ATen/native/LossNLL.cpp (nll_loss_forward)", "RuntimeError",
     "expected target dtype to be Long or Byte, but got Float", DTYPE),
    ("aten/src/ATen/native/LossNLL.cpp (nll_loss_forward)", "RuntimeError",
     "expected target dtype to be Long or Byte, but got Int", DTYPE),
    ("aten/src/ATen/native/LossNLL.cpp (cross_entropy_loss_prob_target)", "RuntimeError",
     "Expected floating point type for target with class probabilities, got Long", DTYPE),
    ("aten/src/ATen/TensorIterator.cpp (compute_types, check_all_same_dtype)", "RuntimeError",
     "Found dtype Long but expected Float", DTYPE),
    ("aten/src/ATen/TensorIterator.cpp (compute_types, canCast)", "RuntimeError",
     "result type Float can't be cast to the desired output type Long", DTYPE),
    ("aten/src/ATen/native/TensorAdvancedIndexing.cpp (index_put_)", "RuntimeError",
     "Index put requires the source and destination dtypes match, got Float for the destination and Double "
     "for the source.", DTYPE),
    ("aten/src/ATen/native/TensorAdvancedIndexing.cpp (index_add_)", "RuntimeError",
     "index_add_(): self (Float) and source (Double) must have the same scalar type", DTYPE),
    ("aten/src/ATen/native/TensorAdvancedIndexing.cpp (index_select)", "RuntimeError",
     "index_select(): Expected dtype int32 or int64 for index", DTYPE),
    ("aten/src/ATen/native/ScatterGatherChecks.h (gather)", "RuntimeError",
     "gather(): Expected dtype int32/int64 for index", DTYPE),
    ("aten/src/ATen/native/ScatterGatherChecks.h (scatter)", "RuntimeError",
     "scatter(): Expected self.dtype to be equal to src.dtype", DTYPE),
    ("aten/src/ATen/native/IndexingUtils.h; torch/_meta_registrations.py", "IndexError",
     "tensors used as indices must be long, int, byte or bool tensors", DTYPE),
    ("aten/src/ATen/native/TensorAdvancedIndexing.cpp (masked_fill_)", "RuntimeError",
     "masked_fill_ only supports boolean masks, but got mask with dtype float", DTYPE),
    ("aten/src/ATen/TensorUtils.cpp (checkScalarTypes)", "RuntimeError",
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
     "torch.FloatTensor instead (while checking arguments for embedding)", DTYPE),
    ("aten/src/ATen/native/Onehot.cpp", "RuntimeError",
     "one_hot is only applicable to index tensor of type LongTensor.", DTYPE),
    ("aten/src/ATen/Dispatch.h (AT_DISPATCH)", "RuntimeError",
     "\"addmm_impl_cpu_\" not implemented for 'Half'", DTYPE),
    ("c10/util/TypeCast.h (checked_convert)", "RuntimeError",
     "value cannot be converted to type at::Half without overflow", DTYPE),
    # -- indices out of range, autograd: crash_other with a specific cause
    ("aten/src/ATen/native/TensorAdvancedIndexing.cpp (index_select_out_cpu_)", "IndexError",
     "index out of range in self", OTHER),
    ("aten/src/ATen/native/LossNLL.cpp", "IndexError", "Target 5 is out of bounds.", OTHER),
    ("aten/src/ATen/native/cuda/Indexing.cu", "RuntimeError", "CUDA error: device-side assert triggered", OTHER),
    ("torch/csrc/autograd/engine.cpp", "RuntimeError",
     "element 0 of tensors does not require grad and does not have a grad_fn", OTHER),
    ("torch/csrc/autograd/saved_variable.cpp", "RuntimeError",
     "one of the variables needed for gradient computation has been modified by an inplace operation: "
     "[torch.FloatTensor [4, 3]] is at version 2; expected version 1 instead.", OTHER),
    # -- a value went non-finite and a check stopped the run: crash_other, kind nonfinite
    ("torch/csrc/autograd/engine.cpp (anomaly mode)", "RuntimeError",
     "Function 'LogSoftmaxBackward0' returned nan values in its 0th output.", OTHER),
    ("torch/nn/utils/clip_grad.py (error_if_nonfinite=True)", "RuntimeError",
     "The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped. To "
     "disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`",
     OTHER),
    ("torch/distributions/distribution.py (validate_args)", "ValueError",
     "Expected parameter loc (Tensor of shape (64, 2)) of distribution Normal(loc: torch.Size([64, 2]), scale: "
     "torch.Size([64, 2])) to satisfy the constraint Real(), but found invalid values:\ntensor([[nan, nan]])",
     OTHER),
]

#: Messages of a value gone non-finite, with the crash kind they decode to.
NONFINITE = [(etype, message) for _, etype, message, _ in PYTORCH[-3:]] + [
    ("FloatingPointError", "Loss became infinite or NaN at iteration=1587!"),
]

# (exception type, message as PyTorch prints it, expected code, detail key or None)
WORDINGS = [
    ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
     "capacity of 79.15 GiB of which 1.19 GiB is free.", "crash_oom", "tried_to_allocate"),
    ("torch.cuda.OutOfMemoryError", "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB "
     "total capacity; 14.2 GiB already allocated)", "crash_oom", "total_capacity"),
    ("RuntimeError", "CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported",
     "crash_oom", None),
    ("RuntimeError", "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
     "crash_oom", None),
    ("RuntimeError", "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate "
     "memory: you tried to allocate 34359738368 bytes. Error code 12 (Cannot allocate memory)",
     "crash_oom", "tried_to_allocate_bytes"),
    ("RuntimeError", "MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.00 GB, "
     "max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.", "crash_oom", "tried_to_allocate"),
    ("MemoryError", "", "crash_oom", None),
    ("RuntimeError", "DataLoader worker (pid 4242) is killed by signal: Killed. ", "crash_oom", None),
    ("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)",
     "crash_shape_mismatch", "shapes"),
    ("RuntimeError", "size mismatch, m1: [64 x 512], m2: [256 x 10] at /pytorch/aten/src/TH/THMath.c:41",
     "crash_shape_mismatch", None),
    ("RuntimeError", "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc.weight: copying a "
     "param with shape torch.Size([10, 512]) from checkpoint, the shape in current model is "
     "torch.Size([100, 512]).", "crash_shape_mismatch", None),
    ("RuntimeError", "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
     "dimension 1", "crash_shape_mismatch", "sizes"),
    ("RuntimeError", "shape '[64, -1, 7]' is invalid for input of size 1000", "crash_shape_mismatch", None),
    ("ValueError", "Expected input batch_size (64) to match target batch_size (32).",
     "crash_shape_mismatch", None),
    ("RuntimeError", "Given groups=1, weight of size [64, 3, 3, 3], expected input[8, 1, 28, 28] to have "
     "3 channels, but got 1 channels instead", "crash_shape_mismatch", None),
    ("RuntimeError", "Sizes of tensors must match except in dimension 1. Expected size 3 but got size 4 "
     "for tensor number 1 in the list.", "crash_shape_mismatch", None),
    ("RuntimeError", "stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and "
     "[1, 224, 224] at entry 5", "crash_shape_mismatch", None),
    ("ValueError", "Target size (torch.Size([32])) must be the same as input size (torch.Size([32, 1]))",
     "crash_shape_mismatch", None),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, "
     "cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
     "crash_device_mismatch", "devices"),
    ("RuntimeError", "Expected all tensors to be on the same device, but got mat2 is on cpu, different "
     "from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_mm)",
     "crash_device_mismatch", "devices"),
    ("RuntimeError", "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be "
     "the same", "crash_device_mismatch", None),
    ("RuntimeError", "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be "
     "the same or input should be a MKLDNN tensor and weight is a dense tensor",
     "crash_device_mismatch", None),
    ("RuntimeError", "Tensor on device meta is not on the expected device cpu!", "crash_device_mismatch",
     "devices"),
    ("RuntimeError", "Placeholder storage has not been allocated on MPS device!", "crash_device_mismatch", None),
    ("RuntimeError", "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
     "False. If you are running on a CPU-only machine, please use torch.load with "
     "map_location=torch.device('cpu')", "crash_device_mismatch", None),
    ("RuntimeError", "Expected object of device type cuda but got device type cpu for argument #1 'self' "
     "in call to _th_mm", "crash_device_mismatch", None),
    ("RuntimeError", "expected scalar type Float but found Double", "crash_dtype_mismatch", "dtypes"),
    ("RuntimeError", "expected scalar type Long but found Float", "crash_dtype_mismatch", "dtypes"),
    ("RuntimeError", "mat1 and mat2 must have the same dtype", "crash_dtype_mismatch", None),
    ("RuntimeError", "mat1 and mat2 must have the same dtype, but got Float and Double",
     "crash_dtype_mismatch", "dtypes"),
    ("RuntimeError", "Found dtype Long but expected Float", "crash_dtype_mismatch", "dtypes"),
    ("RuntimeError", "\"addmm_impl_cpu_\" not implemented for 'Half'", "crash_dtype_mismatch", None),
    ("RuntimeError", "\"nll_loss_forward_reduce_cuda_kernel_2d_index\" not implemented for 'Int'",
     "crash_dtype_mismatch", None),
    ("RuntimeError", "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
     "Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)",
     "crash_dtype_mismatch", None),
    ("RuntimeError", "result type Float can't be cast to the desired output type Long",
     "crash_dtype_mismatch", None),
    ("RuntimeError", "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the "
     "same", "crash_dtype_mismatch", None),
    ("RuntimeError", "Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should "
     "be the same", "crash_dtype_mismatch", None),
    ("RuntimeError", "value cannot be converted to type at::Half without overflow", "crash_dtype_mismatch", None),
    ("RuntimeError", "Expected object of scalar type Long but got scalar type Float for argument #2 "
     "'target' in call to _thnn_nll_loss_forward", "crash_dtype_mismatch", None),
    ("RuntimeError", "Given normalized_shape=[512], expected input with shape [*, 512], but got input of "
     "size[8, 10, 256]", "crash_shape_mismatch", None),
    ("RuntimeError", "input.size(-1) must be equal to input_size. Expected 10, got 20", "crash_shape_mismatch", None),
    ("RuntimeError", "The expanded size of the tensor (3) must match the existing size (4) at non-singleton "
     "dimension 1.  Target sizes: [2, 3].  Tensor sizes: [2, 4]", "crash_shape_mismatch", None),
    ("RuntimeError", "0D or 1D target tensor expected, multi-target not supported", "crash_shape_mismatch", None),
    ("RuntimeError", "Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent "
     "call last):\n  ...\nRuntimeError: stack expects each tensor to be equal size, but got [3, 32, 32] at "
     "entry 0 and [1, 32, 32] at entry 3", "crash_shape_mismatch", None),
    ("numpy.core._exceptions._ArrayMemoryError", "Unable to allocate 7.45 GiB for an array with shape "
     "(1000000000,) and data type float64", "crash_oom", None),
    ("RuntimeError", "Invalid buffer size: 64.00 GB", "crash_oom", None),
    ("RuntimeError", "Input and hidden tensors are not at the same device, found input tensor at cuda:0 and "
     "hidden tensor at cpu", "crash_device_mismatch", None),
    ("RuntimeError", "Expected floating point type for target with class probabilities, got Long",
     "crash_dtype_mismatch", None),
    ("RuntimeError", "bitwise_and_cpu not implemented for 'Float'", "crash_dtype_mismatch", None),
    ("RuntimeError", "value cannot be converted to type float without overflow", "crash_dtype_mismatch", None),
    ("RuntimeError", "Boolean value of Tensor with more than one value is ambiguous", "crash_other", None),
    ("RuntimeError", "CUDA error: an illegal memory access was encountered", "crash_other", None),
    ("RuntimeError", "CUDA error: device-side assert triggered", "crash_other", None),
    ("IndexError", "Target 10 is out of bounds.", "crash_other", None),
    ("RuntimeError", "element 0 of tensors does not require grad and does not have a grad_fn",
     "crash_other", None),
    ("KeyboardInterrupt", "", "crash_other", None),
    ("ValueError", "could not convert string to float: 'abc'", "crash_other", None),
    ("", "", "crash_other", None),
]


def crashed(message: str, etype: str = "RuntimeError", n: int = 120, status: str = "crashed"):
    cols = healthy(n, 3)
    err = {"type": etype, "message": message, "traceback": "...", "step": n}
    m = meta("c", status=status, layers=cols["layer_names"], error=err if status == "crashed" else None)
    return make_run("c", status=status, run_meta=m, scalars=cols["scalars"], layers=cols["layers"])


CRASH_CODES = {"crash_oom", "crash_shape_mismatch", "crash_device_mismatch", "crash_dtype_mismatch",
               "crash_other"}


def pytorch_rows(code: str) -> list[tuple]:
    """The rows of PYTORCH that decode to ``code``."""
    return [row for row in PYTORCH if row[3] == code]


def wording_rows(code: str) -> list[tuple]:
    """The rows of WORDINGS that decode to ``code``."""
    return [row for row in WORDINGS if row[2] == code]


def pytorch_ids(rows: list[tuple]) -> list[str]:
    return [f"{r[3]}:{r[2][:48]}" for r in rows]


def wording_ids(rows: list[tuple]) -> list[str]:
    return [w[1][:40] or w[0] for w in rows]


def wording_tests(wanted: str):
    """The two wording tests of ``wanted``'s test module, bound there to their names: its rows of
    PYTORCH and of WORDINGS each decode to it, with a cause and advice."""
    torch_rows, rows = pytorch_rows(wanted), wording_rows(wanted)

    @pytest.mark.parametrize("source,etype,message,code", torch_rows, ids=pytorch_ids(torch_rows))
    def test_pytorch_wording_decodes_to_its_code(source, etype, message, code):
        check_pytorch_wording(source, etype, message, code)

    @pytest.mark.parametrize("etype,message,code,detail", rows, ids=wording_ids(rows))
    def test_decodes_real_pytorch_wordings(etype, message, code, detail):
        check_wording(etype, message, code, detail)

    return test_pytorch_wording_decodes_to_its_code, test_decodes_real_pytorch_wordings


def check_pytorch_wording(source, etype, message, code):
    decoded = decode({"type": etype, "message": message, "traceback": ""})
    assert decoded.code == code, f"{message!r} (from {source}) decoded as {decoded.code}/{decoded.kind}"
    assert decoded.cause and decoded.advice


def check_wording(etype, message, code, detail):
    decoded = decode({"type": etype, "message": message, "traceback": "", "step": 3})
    assert decoded.code == code
    assert decoded.cause and decoded.advice
    if detail:
        assert detail in decoded.details
