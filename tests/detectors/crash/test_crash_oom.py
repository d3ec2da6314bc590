"""crash_oom: the out-of-memory wordings (CUDA, CPU, MPS), and the advice for an ordinary and an
implausible allocation."""

from __future__ import annotations

import pytest
from crash_cases import OOM, PYTORCH, wording_tests

from runlens.detectors.crash.decode import decode


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


test_pytorch_wording_decodes_to_its_code, test_decodes_real_pytorch_wordings = wording_tests(OOM)
