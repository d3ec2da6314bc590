"""The crash decoder against the error texts PyTorch itself raises.

``PYTORCH`` is the table of wordings collected from PyTorch's source
(pytorch/pytorch; the file each comes from is named beside it): the
``TORCH_CHECK`` messages of the dtype, shape, device and out-of-memory checks,
of the loss functions, the recurrent layers and the indexing ops. The ``LIVE``
cases raise the same errors in the installed torch (CPU), so a rewording in a
new release shows up here instead of in a user's report.
"""

from __future__ import annotations

import pytest

from runlens.detectors.crash.decode import decode, implausible_allocation, size_bytes

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
]


@pytest.mark.parametrize("source,etype,message,code", PYTORCH, ids=[f"{r[3]}:{r[2][:48]}" for r in PYTORCH])
def test_pytorch_wording_decodes_to_its_code(source, etype, message, code):
    decoded = decode({"type": etype, "message": message, "traceback": ""})
    assert decoded.code == code, f"{message!r} (from {source}) decoded as {decoded.code}/{decoded.kind}"
    assert decoded.cause and decoded.advice


def test_every_code_has_collected_wordings():
    assert {row[3] for row in PYTORCH} == {OOM, SHAPE, DEVICE, DTYPE, OTHER}


# -- the sizes in an out-of-memory message --------------------------------------------------------

@pytest.mark.parametrize("text,expected", [("20.00 MiB", 20 * 2**20), ("2.00 GiB", 2 * 2**30),
                                           ("256.00 MB", 256 * 2**20), ("512 bytes", 512), ("1.5 TiB", 1.5 * 2**40),
                                           ("4.00 PiB", 4 * 2**50), ("lots", None)])
def test_size_bytes_reads_the_allocators_units(text, expected):
    assert size_bytes(text) == expected


def test_implausible_allocation_thresholds():
    tib = 2**40
    assert implausible_allocation(2 * tib) and not implausible_allocation(1.9 * tib)
    assert implausible_allocation(64 * 2**30, capacity=2**30)      # 64x the device
    assert not implausible_allocation(8 * 2**30, capacity=2**30)   # a batch 8x too big is still a batch problem
    assert not implausible_allocation(None) and not implausible_allocation(0)


def test_huge_allocation_is_advised_as_a_shape_bug_not_a_batch_size():
    # 2**45 float32 elements: what torch.empty(2**45) asks the CPU allocator for (128 TiB)
    huge = decode({"type": "RuntimeError", "message": "[enforce fail at alloc_cpu.cpp:127] err == 0. "
                   "DefaultCPUAllocator: can't allocate memory: you tried to allocate 140737488355328 bytes. "
                   "Error code 12 (Cannot allocate memory)"})
    assert huge.code == OOM and huge.kind == "implausible_allocation"
    assert "128.0 TiB" in huge.cause and "batch size will not fix" in huge.advice
    assert huge.details["allocation_larger_than_any_device"] is True
    cuda = decode({"type": "torch.OutOfMemoryError", "message": "CUDA out of memory. Tried to allocate 4096.00 GiB. "
                   "GPU 0 has a total capacity of 79.15 GiB of which 70.00 GiB is free."})
    assert cuda.kind == "implausible_allocation"


def test_ordinary_oom_keeps_the_batch_size_advice():
    small = decode({"type": "torch.OutOfMemoryError", "message": "CUDA out of memory. Tried to allocate 2.00 GiB. "
                    "GPU 0 has a total capacity of 79.15 GiB of which 1.19 GiB is free."})
    assert small.kind == "cuda_oom" and "Reduce the batch size" in small.advice
    assert small.details["tried_to_allocate_bytes"] == 2 * 2**30
    assert small.details["total_capacity_bytes"] == pytest.approx(79.15 * 2**30)
    mps = decode({"type": "RuntimeError", "message": PYTORCH[4][2]})
    assert mps.kind == "mps_oom" and mps.details["total_capacity"] == "18.13 GB"


# -- the same errors raised by the installed torch -----------------------------------------------

def _live_cases():
    torch = pytest.importorskip("torch")
    nn, F = torch.nn, torch.nn.functional
    return {
        SHAPE: [lambda: nn.Linear(10, 2)(torch.randn(4, 12)), lambda: torch.randn(3) + torch.randn(4),
                lambda: torch.randn(10).view(3, -1),
                lambda: F.cross_entropy(torch.randn(4, 3), torch.zeros(5, dtype=torch.long)),
                lambda: nn.GRU(8, 16, batch_first=True)(torch.randn(2, 5, 9)),
                lambda: nn.GRU(8, 16, batch_first=True)(torch.randn(2, 5, 8), torch.zeros(1, 2, 15)),
                lambda: nn.LSTM(8, 16)(torch.randn(5, 2, 8), (torch.zeros(1, 2, 16), torch.zeros(1, 2, 17))),
                lambda: nn.Conv2d(3, 4, 3)(torch.randn(1, 1, 8, 8)), lambda: nn.LayerNorm(16)(torch.randn(2, 8)),
                lambda: torch.stack([torch.randn(3), torch.randn(4)]),
                lambda: nn.BatchNorm1d(8)(torch.randn(4, 6))],
        DTYPE: [lambda: nn.Linear(3, 2)(torch.randn(4, 3, dtype=torch.double)),
                lambda: F.cross_entropy(torch.randn(4, 3), torch.zeros(4)),
                lambda: F.nll_loss(torch.randn(4, 3), torch.zeros(4, dtype=torch.int32)),
                lambda: nn.Embedding(10, 3)(torch.zeros(2)),
                lambda: torch.zeros(5).index_put_((torch.tensor([0, 1]),), torch.ones(2, dtype=torch.double)),
                lambda: torch.zeros(5, dtype=torch.long).add_(torch.randn(5)),
                lambda: torch.randn(5, 2).gather(1, torch.zeros(5, 1)),
                lambda: torch.randn(5).index_select(0, torch.tensor([0.0, 1.0])),
                lambda: torch.zeros(5).index_add_(0, torch.tensor([0]), torch.ones(1, dtype=torch.double)),
                lambda: F.binary_cross_entropy(torch.rand(4), torch.zeros(4, dtype=torch.long)),
                lambda: torch.randn(5)[torch.tensor([0.0, 1.0])]],
        DEVICE: [lambda: torch.randn(3) + torch.ones(3, device="meta")],
        OOM: [lambda: torch.empty(2**45, dtype=torch.float32)],
        OTHER: [lambda: nn.Embedding(10, 3)(torch.tensor([11])),
                lambda: F.cross_entropy(torch.randn(2, 3), torch.tensor([0, 5]))],
    }


def test_errors_raised_by_the_installed_torch_decode_to_their_code():
    wrong = []
    for code, makers in _live_cases().items():
        for make in makers:
            with pytest.raises(Exception) as caught:  # noqa: PT011 - each raises its own kind
                make()
            exc = caught.value
            decoded = decode({"type": type(exc).__name__, "message": str(exc)})
            if decoded.code != code:
                wrong.append((code, decoded.code, str(exc)[:120]))
    assert not wrong, wrong


@pytest.mark.parametrize("message,words", [
    ("mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)", "got 512 features per row where the layer takes 256"),
    ("Expected input batch_size (4) to match target batch_size (5).", "4 predictions for 5 targets"),
    ("input.size(-1) must be equal to input_size. Expected 8, got 9", "takes 8 features per time step but got 9"),
])
def test_shape_cause_reads_the_numbers_in_the_message(message, words):
    decoded = decode({"type": "RuntimeError", "message": message})
    assert decoded.code == SHAPE and words in decoded.cause
