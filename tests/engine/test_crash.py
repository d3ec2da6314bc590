"""Crash decoding on the real PyTorch wordings, and the crash_*/killed detectors."""

from __future__ import annotations

import numpy as np
import pytest
from edge_runs import make_run
from engine_runs import healthy, meta

from runlens import analyze
from runlens.detectors.crash.decode import decode

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


@pytest.mark.parametrize("etype,message,code,detail", WORDINGS, ids=[w[1][:40] or w[0] for w in WORDINGS])
def test_decodes_real_pytorch_wordings(etype, message, code, detail):
    decoded = decode({"type": etype, "message": message, "traceback": "", "step": 3})
    assert decoded.code == code
    assert decoded.cause and decoded.advice
    if detail:
        assert detail in decoded.details


def test_message_missing_falls_back_to_the_traceback_last_line():
    tb = "Traceback (most recent call last):\n  File x\nRuntimeError: CUDA out of memory. Tried to allocate 1 GiB\n"
    assert decode({"type": "RuntimeError", "message": "", "traceback": tb}).code == "crash_oom"


def test_garbage_error_records_do_not_crash():
    for err in (None, {}, {"type": 3, "message": None}, {"message": "x" * 10_000}):
        assert decode(err).code == "crash_other"
    assert len(decode({"message": "x" * 10_000}).message) <= 400


def _crashed(message: str, etype: str = "RuntimeError", n: int = 120, status: str = "crashed"):
    cols = healthy(n, 3)
    err = {"type": etype, "message": message, "traceback": "...", "step": n}
    m = meta("c", status=status, layers=cols["layer_names"], error=err if status == "crashed" else None)
    return make_run("c", status=status, run_meta=m, scalars=cols["scalars"], layers=cols["layers"])


CRASH_CODES = {"crash_oom", "crash_shape_mismatch", "crash_device_mismatch", "crash_dtype_mismatch",
               "crash_other"}


@pytest.mark.parametrize("etype,message,code", [(w[0], w[1], w[2]) for w in WORDINGS[::4]])
def test_exactly_one_crash_finding_with_step_and_last_signals(etype, message, code):
    diagnosis = analyze(_crashed(message, etype))
    crash = [f for f in diagnosis.findings if f.code in CRASH_CODES]
    assert [f.code for f in crash] == [code]
    f = crash[0]
    assert f.severity == "error" and f.step == 120
    assert f.evidence["last_recorded_step"] == 119
    assert np.isfinite(f.evidence["last_finite_loss"]) and np.isfinite(f.evidence["last_finite_grad_norm"])
    assert f.advice


def test_crash_without_error_record_uses_the_exception_event():
    cols = healthy(50, 2)
    events = {"step": [50], "time": [1.0], "kind": ["exception"], "layer": [None], "value": [None],
              "message": ["RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"]}
    run = make_run("c", status="crashed", run_meta=meta("c", status="crashed"), scalars=cols["scalars"],
                   events=events)
    assert "crash_shape_mismatch" in [f.code for f in analyze(run).findings]


@pytest.mark.parametrize("status", ["finished", "running"])
def test_no_crash_code_unless_the_run_crashed(status):
    run = _crashed("CUDA out of memory", "torch.OutOfMemoryError", status=status)
    # the error record is there, but the run did not end in it
    run = make_run("c", status=status, run_meta=dict(run.meta, error={"type": "RuntimeError",
                                                                      "message": "CUDA out of memory"}),
                   scalars=run.scalars)
    codes = [f.code for f in analyze(run).findings]
    assert not CRASH_CODES & set(codes) and "killed" not in codes


def test_killed_run_gets_killed_not_crash():
    run = _crashed("", status="killed")
    found = [f for f in analyze(run).findings if f.code in CRASH_CODES | {"killed"}]
    assert [f.code for f in found] == ["killed"]
    assert found[0].severity == "error" and found[0].step == 120
    assert found[0].evidence["judged_by"].startswith("heartbeat")


def test_killed_detected_end_to_end_from_a_stale_heartbeat(tmp_path):
    from engine_runs import write_run

    cols = healthy(80, 2)
    write_run(tmp_path / "k", run_meta=meta("k", status="running"), scalars=cols["scalars"])
    diagnosis = analyze(tmp_path / "k")
    assert diagnosis.status == "killed"
    assert "killed" in [f.code for f in diagnosis.findings]


def test_a_wrapped_error_shows_the_original_line():
    msg = ("Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
           "  File \"x.py\", line 1\nRuntimeError: stack expects each tensor to be equal size, but got [3] at "
           "entry 0 and [1] at entry 3\n")
    decoded = decode({"type": "RuntimeError", "message": msg})
    assert decoded.message.startswith("RuntimeError: stack expects each tensor")


def test_killed_run_with_the_recorders_sigterm_note():
    cols = healthy(80, 2)
    events = {"step": [79], "time": [1.0], "kind": ["user"], "layer": [None], "value": [None],
              "message": ["SIGTERM received at step 80; buffered rows flushed"]}
    run = make_run("k", status="killed", run_meta=meta("k", status="running"), scalars=cols["scalars"],
                   events=events)
    (f,) = [f for f in analyze(run).findings if f.code == "killed"]
    assert "SIGTERM" in f.evidence["sigterm"] and f.step == 80
