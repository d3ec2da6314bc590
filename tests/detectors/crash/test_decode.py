"""The crash decoder (runlens/detectors/crash/decode.py) against the error texts PyTorch raises.

``PYTORCH`` (in ``crash_cases``; each crash code's test file runs its own rows) is the table of
wordings collected from PyTorch's source
(pytorch/pytorch; the file each comes from is named beside it): the
``TORCH_CHECK`` messages of the dtype, shape, device and out-of-memory checks,
of the loss functions, the recurrent layers and the indexing ops. The ``LIVE``
cases raise the same errors in the installed torch (CPU), so a rewording in a
new release shows up here instead of in a user's report.
"""

from __future__ import annotations

import pytest
from crash_cases import DEVICE, DTYPE, OOM, OTHER, PYTORCH, SHAPE

from runlens.detectors.crash.decode import decode, implausible_allocation, size_bytes


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


def test_message_missing_falls_back_to_the_traceback_last_line():
    tb = "Traceback (most recent call last):\n  File x\nRuntimeError: CUDA out of memory. Tried to allocate 1 GiB\n"
    assert decode({"type": "RuntimeError", "message": "", "traceback": tb}).code == "crash_oom"


def test_garbage_error_records_do_not_crash():
    for err in (None, {}, {"type": 3, "message": None}, {"message": "x" * 10_000}):
        assert decode(err).code == "crash_other"
    assert len(decode({"message": "x" * 10_000}).message) <= 400


def test_a_wrapped_error_shows_the_original_line():
    msg = ("Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
           "  File \"x.py\", line 1\nRuntimeError: stack expects each tensor to be equal size, but got [3] at "
           "entry 0 and [1] at entry 3\n")
    decoded = decode({"type": "RuntimeError", "message": msg})
    assert decoded.message.startswith("RuntimeError: stack expects each tensor")
