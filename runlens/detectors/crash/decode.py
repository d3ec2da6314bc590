"""Decode the exception a crashed run recorded into a finding code, a cause and a fix.

run.json's ``error`` holds the exception's type, message and traceback as
the training process saw them. PyTorch's messages are stable enough to
read: each :class:`Pattern` below matches one family of wordings (CUDA, CPU
and MPS out-of-memory, the shape, device and dtype mismatches and their
relatives), names the ``crash_*`` code it belongs to, and carries the
usual cause and the fixes, most likely first. Numbers in the message
(bytes requested, the two shapes, the two devices or dtypes) are pulled
out for the evidence. The first matching pattern wins, so the order below
goes from the most specific wording to the most general.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

MESSAGE_CHARS = 400
MATCH_CHARS = 10_000
CODES = ("crash_oom", "crash_shape_mismatch", "crash_device_mismatch", "crash_dtype_mismatch", "crash_other")


@dataclass(frozen=True)
class Pattern:
    code: str
    kind: str
    regex: re.Pattern[str]
    cause: str
    advice: str
    types: tuple[str, ...] = ()  # exception type names that match on their own


@dataclass(frozen=True)
class Decoded:
    """What an exception means: the finding code, the pattern and what was read from it."""

    code: str
    kind: str
    cause: str
    advice: str
    error_type: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)


def _p(code: str, kind: str, regex: str, cause: str, advice: str, types: tuple[str, ...] = ()) -> Pattern:
    return Pattern(code, kind, re.compile(regex, re.IGNORECASE | re.DOTALL), cause, advice, types)


_OOM_ADVICE = ("Reduce the batch size (use gradient accumulation to keep the effective batch), "
               "enable mixed precision or activation checkpointing, and make sure no tensor that "
               "carries a graph is kept across steps (append loss.item(), not loss).")

# "Input type (X) and weight type (Y) should be the same" is a device mismatch
# when exactly one side names an accelerator, otherwise a dtype mismatch.
_ON_ACCEL = r"(?=[^)]*(?:cuda|mps|xpu))[^)]*"
_OFF_ACCEL = r"(?![^)]*(?:cuda|mps|xpu))[^)]*"
_ACCEL = rf"Input type \({_ON_ACCEL}\) and (?:weight|bias) type \({_OFF_ACCEL}\)"
_ACCEL_REVERSED = rf"Input type \({_OFF_ACCEL}\) and (?:weight|bias) type \({_ON_ACCEL}\)"

PATTERNS: tuple[Pattern, ...] = (
    _p("crash_oom", "cuda_oom", r"CUDA out of memory|CUBLAS_STATUS_ALLOC_FAILED|CUDA error: out of memory",
       "the GPU ran out of memory while allocating a tensor", _OOM_ADVICE,
       ("torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError", "OutOfMemoryError")),
    _p("crash_oom", "mps_oom", r"MPS backend out of memory|Invalid buffer size: [\d.]+ ?[KMGT]i?B",
       "the Apple GPU (MPS) ran out of memory", _OOM_ADVICE +
       " On MPS, PYTORCH_MPS_HIGH_WATERMARK_RATIO limits how much unified memory may be used."),
    _p("crash_oom", "cpu_oom", r"DefaultCPUAllocator: (?:can't|cannot) allocate memory|"
       r"DefaultCPUAllocator: not enough memory|std::bad_alloc|"
       r"Unable to allocate [\d.]+ ?[KMGTP]i?B for an array",
       "the host ran out of RAM while allocating a tensor",
       "Reduce the batch size or the data held in memory (stream the dataset instead of loading "
       "it whole), and fewer DataLoader workers each holding a copy.", ("MemoryError", "_ArrayMemoryError")),
    _p("crash_oom", "gpu_oom", r"(HIP|XPU|NPU) out of memory|\bout of memory\b|CUDNN_STATUS_ALLOC_FAILED|"
       r"CUFFT_ALLOC_FAILED|CUSOLVER_STATUS_ALLOC_FAILED",
       "an accelerator ran out of memory", _OOM_ADVICE),
    _p("crash_oom", "host_killed_worker", r"DataLoader worker \(pid\(?s?\)? ?[\d, ]+\) is killed by signal: Killed",
       "a DataLoader worker was killed by the system, almost always the kernel's out-of-memory killer",
       "Use fewer DataLoader workers or a smaller prefetch_factor, and avoid copying large Python "
       "objects (lists of samples) into every worker."),
    _p("crash_device_mismatch", "same_device",
       r"Expected all tensors to be on the same device|expected (?:it|.*?) to be on the same device|"
       r"is not on the expected device|must be on the same device|are not at the same device|"
       r"to have the same device as|device type for generator|"
       r"Expected object of device type|is on CPU, but expected (?:it|them) to be on GPU|"
       r"indices should be either on cpu or on the same device|"
       r"module must have its parameters and buffers on device|"
       r"Placeholder storage has not been allocated on MPS device",
       "an operation received tensors that live on different devices (e.g. the model on the GPU "
       "and a batch still on the CPU)",
       "Move the batch (inputs and targets) to the model's device every step "
       "(x = x.to(device)); create new tensors with device=...; after loading a checkpoint or "
       "building an optimizer, call model.to(device) before the optimizer is created."),
    _p("crash_device_mismatch", "input_weight_device",
       _ACCEL + r"|" + _ACCEL_REVERSED,
       "the input and the layer's weights are on different devices",
       "Move the batch to the model's device every step (x = x.to(device)), and call "
       "model.to(device) before creating the optimizer."),
    _p("crash_device_mismatch", "checkpoint_device",
       r"Attempting to deserialize object on (?:a )?CUDA device but torch\.cuda\.is_available\(\) is False",
       "a checkpoint saved on a GPU was loaded on a machine without one",
       "Load it with torch.load(path, map_location='cpu') (or the device you train on)."),
    _p("crash_dtype_mismatch", "scalar_type",
       r"expected (?:scalar type|object of scalar type) \w+ but (?:found|got)(?: scalar type)? \w+|"
       r"must have the same dtype|to have the same dtype|Found dtype \w+ but expected \w+|"
       r"\"?\w+\"? not implemented for '\w+'|can't be cast to the desired output type|"
       r"Expected floating point type for target|Only Tensors of floating point and complex dtype|"
       r"mask dtype|only supports boolean masks|Input dtype must be either|"
       r"Expected a floating point or complex tensor|can't convert np\.ndarray of type|"
       r"to have one of the following scalar types|source and destination dtypes match|"
       r"cannot be converted to type \S+ without overflow|expected both vectors to have same dtype|"
       r"Input type \(\S+\) and (?:weight|bias) type \(\S+\) should be the same|"
       r"expected target dtype to be|tensors used as indices must be|"
       r"Expected dtype int32(?: or |/)int64 for index|Expected self\.dtype to be equal to src\.dtype|"
       r"must have the same scalar type|only applicable to index tensor of type|"
       r"expected \w+ and \w+ to have the same dtype",
       "an operation received tensors of different dtypes (e.g. float64 data from numpy into a "
       "float32 model, or integer targets where floats are expected)",
       "Convert at the boundary: x = x.float() (numpy arrays are float64), targets .long() for "
       "cross-entropy and .float() for MSE/BCE; under autocast let the loss run in float32."),
    _p("crash_shape_mismatch", "shape",
       r"shapes cannot be multiplied|size mismatch|The size of tensor a \(\d+\) must match|"
       r"shape '\[[^\]]*\]' is invalid for input of size|Expected input batch_size|"
       r"Sizes of tensors must match|stack expects each tensor to be equal size|"
       r"to have \d+ channels, but got \d+ channels|Expected \d+D .*input|"
       r"Expected \d+-dimensional input|must be the same as input size|different to the input size|"
       r"inconsistent tensor size|shape mismatch|Dimension out of range|"
       r"only batches of spatial targets supported|doesn't match the broadcast shape|"
       r"Expected target size|expected sequence of length|expected input with shape|"
       r"Expected size for first two dimensions|must be equal to input_size|Expected hidden(?:\[\d+\])? size|"
       r"Expected input to be 2D or 3D|running_mean should contain \d+ elements|"
       r"must match the existing size|Kernel size can't be greater than actual input size|"
       r"Output size is too small|multi-target not supported|does not match the shape of the indexed|"
       r"number of dims don't match|view size is not compatible|too many indices for tensor",
       "two tensors' shapes do not fit the operation (a layer's input size, a reshape, a "
       "batch of targets that does not match the outputs)",
       "Print x.shape before the failing layer; check the in_features of the first Linear after a "
       "flatten, the number of output classes against the labels, the reshape arguments, and "
       "that inputs and targets come from the same batch; drop_last=True for a ragged last batch."),
    _p("crash_other", "device_side_assert", r"device-side assert triggered|Target -?\d+ is out of bounds|"
       r"index out of range in self|srcIndex < srcSelectDimSize",
       "an index was out of range: usually a class label >= the number of outputs, or a token id "
       ">= the embedding size",
       "Check that labels lie in [0, num_classes) and token ids in [0, vocab_size); rerun on the "
       "CPU (or with CUDA_LAUNCH_BLOCKING=1) to see the exact failing operation."),
    _p("crash_other", "autograd",
       r"does not require grad and does not have a grad_fn|backward through the graph a second time|"
       r"modified by an inplace operation",
       "the autograd graph was used in a way it does not allow",
       "Check for detached tensors or torch.no_grad() around the loss, in-place ops on tensors "
       "needed for backward (x += ..., relu(inplace=True)), and graphs reused across steps."),
    _p("crash_other", "nonfinite",
       r"returned nan values in its \d+\w* output|is non-finite, so it cannot be clipped|"
       r"to satisfy the constraint [^\n]*but found invalid values|Loss became infinite or NaN|"
       r"\bloss (?:is|became|was) (?:nan|inf)\b|"
       # A NaN printed as a value in the message (torchdiffeq's ``underflow in dt nan``): the check that
       # failed was handed a number that had gone non-finite, whatever it says it checks.
       r"(?<![\w.'\"\\])nan(?![\w.'\"(])",
       "a value went NaN or Inf during training and a check stopped the run (anomaly detection, "
       "clip_grad_norm_ with error_if_nonfinite, a distribution's argument check, a loop's own loss check, "
       "a solver's step that became NaN)",
       "Find the first non-finite value: lower the learning rate or add warmup, clip gradients, keep the "
       "loss in float32 under autocast, guard log/sqrt/division with an epsilon, and check the batch at "
       "that step for NaN inputs or labels; a policy's NaN parameters come from its network's outputs.",
       ("FloatingPointError",)),
    _p("crash_other", "distributed", r"NCCL|ProcessGroup|Watchdog caught collective operation timeout",
       "a collective operation between ranks failed or timed out (one rank stalled or died)",
       "Look at the other ranks' logs for the first failure; make every rank run the same number "
       "of steps; raise the process-group timeout only once a hang is ruled out."),
    _p("crash_other", "interrupted", r"(?!)", "the run was interrupted by the user (Ctrl-C)",
       "Nothing to fix if this was intended.", ("KeyboardInterrupt",)),
)

_FALLBACK = Pattern("crash_other", "other", re.compile("$^"), "the training code raised an exception",
                    "Read the traceback's last frames in run.json's error; rerun the failing step "
                    "alone (same batch, same seed) to reproduce it.")


def decode(error: Mapping[str, Any] | None) -> Decoded:
    """Which ``crash_*`` code an exception record belongs to, and why."""
    error = error if isinstance(error, Mapping) else {}
    etype = str(error.get("type") or "")
    message = str(error.get("message") or "")
    text = message or _last_line(str(error.get("traceback") or ""))
    # Both ends of a huge message are kept: wrappers put the original error last.
    probe = text if len(text) <= 2 * MATCH_CHARS else text[:MATCH_CHARS] + "\n" + text[-MATCH_CHARS:]
    pattern, where = _FALLBACK, None
    for p in PATTERNS:
        where = _matches(p, etype, probe)
        if where is not None:
            pattern = p
            break
    details = _details(probe)
    decoded = Decoded(code=pattern.code, kind=pattern.kind, cause=pattern.cause, advice=pattern.advice,
                      error_type=etype or "unknown", message=_clip(_line_at(probe, where) or text),
                      details=details)
    specific = _specific_cause(details)
    if specific and pattern.code == "crash_shape_mismatch":
        decoded = replace(decoded, cause=f"{specific}: {decoded.cause}")
    if pattern.code == "crash_oom" and implausible_allocation(details.get("tried_to_allocate_bytes"),
                                                              details.get("total_capacity_bytes")):
        decoded = replace(decoded, kind="implausible_allocation", cause=_HUGE_CAUSE.format(
            size=_human(details["tried_to_allocate_bytes"])), advice=_HUGE_ADVICE,
            details={**details, "allocation_larger_than_any_device": True})
    return decoded


# One tensor this large exists on no device: no accelerator holds 2 TiB and
# few hosts do, so the size itself is wrong. A capacity the message states
# sharpens the test: a batch that is too big overshoots by a small factor,
# a shape bug by orders of magnitude.
ANY_DEVICE_BYTES = 2 * 1024**4
OVER_CAPACITY = 64
_HUGE_CAUSE = ("a single allocation of {size} was requested: more than any device holds, so the size "
               "itself is wrong (a broadcast of shapes like (N,1) against (1,N), a length read from "
               "corrupt data, a dimension multiplied in by mistake), not a batch slightly too big")
_HUGE_ADVICE = ("Find the failing line in the traceback and print the shapes that go into it: check "
                "broadcasting (x - y with x of shape (N,) and y of shape (N,1) gives (N,N)), lengths or "
                "sizes read from the data, and view/expand/repeat arguments. Reducing the batch size "
                "will not fix an allocation this large.")


def implausible_allocation(requested: float | None, capacity: float | None = None) -> bool:
    """An allocation no batch-size change explains: >= 2 TiB, or >= 64x the device's stated capacity."""
    if not requested or requested <= 0:
        return False
    if requested >= ANY_DEVICE_BYTES:
        return True
    return capacity is not None and capacity > 0 and requested >= OVER_CAPACITY * capacity


_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


def size_bytes(text: str) -> float | None:
    """``"2.00 GiB"``, ``"256.00 MB"``, ``"512 bytes"`` in bytes (PyTorch's allocators count in 1024s)."""
    m = re.fullmatch(r"\s*([\d.]+)\s*(bytes|b|[kmgtp])?i?b?\s*", text, re.IGNORECASE)
    if not m:
        return None
    try:
        return float(m.group(1)) * _UNITS[(m.group(2) or "").lower()]
    except ValueError:
        return None


def _human(n: float) -> str:
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0].lower()]
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} bytes"


def _matches(p: Pattern, etype: str, text: str) -> int | None:
    """Where ``p`` matched ``text`` (0 when the exception type alone matched), else None."""
    short = etype.rsplit(".", 1)[-1]
    if p.types and (etype in p.types or short in p.types):
        return 0
    m = p.regex.search(text) if text else None
    return m.start() if m else None


def _line_at(text: str, pos: int | None) -> str:
    """The line of ``text`` holding ``pos``: for a wrapped error, the original one, not the wrapper."""
    if not pos:
        return ""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start:end if end >= 0 else len(text)]


def _details(text: str) -> dict[str, Any]:
    """Numbers named in the message: sizes, shapes, devices, dtypes."""
    out: dict[str, Any] = {}
    m = re.search(r"Tried to allocate ([\d.]+ ?(?:[KMGTP]i?B|bytes))", text)
    if m:
        out["tried_to_allocate"] = m.group(1)
        out["tried_to_allocate_bytes"] = size_bytes(m.group(1))
    m = re.search(r"you tried to allocate (\d+) bytes", text)
    if m:
        out["tried_to_allocate_bytes"] = int(m.group(1))
    m = (re.search(r"([\d.]+ ?[KMGTP]i?B) total capacity", text)
         or re.search(r"total capacity of ([\d.]+ ?[KMGTP]i?B)", text)
         or re.search(r"max allowed: ([\d.]+ ?[KMGTP]i?B)", text))
    if m:
        out["total_capacity"] = m.group(1)
        out["total_capacity_bytes"] = size_bytes(m.group(1))
    m = re.search(r"\((\d+x\d+) and (\d+x\d+)\)", text)
    if m:
        out["shapes"] = [m.group(1), m.group(2)]
    m = re.search(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)", text)
    if m:
        out["batch_sizes"] = [int(m.group(1)), int(m.group(2))]
    m = re.search(r"must be equal to input_size\. Expected (\d+), got (\d+)", text)
    if m:
        out["input_size"] = [int(m.group(1)), int(m.group(2))]
    m = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", text)
    if m:
        out["sizes"] = [int(m.group(1)), int(m.group(2))]
    m = (re.search(r"found at least two devices, ([\w:]+) and ([\w:]+)", text)
         or re.search(r"but got \w+ is on ([\w:]+), different from other tensors on ([\w:]+)", text)
         or re.search(r"on device ([\w:]+) is not on the expected device ([\w:]+)", text))
    if m:
        out["devices"] = [m.group(1), m.group(2)]
    m = (re.search(r"expected scalar type (\w+) but found (\w+)", text, re.I)
         or re.search(r"Found dtype (\w+) but expected (\w+)", text)
         or re.search(r"same dtype, but got:? (\w+) (?:and|!=) (\w+)", text))
    if m:
        out["dtypes"] = [m.group(1), m.group(2)]
    return out


def _specific_cause(details: Mapping[str, Any]) -> str:
    """The mismatch in the message's own numbers, in words."""
    if "shapes" in details:
        (rows, inner), (k, n) = (tuple(s.split("x")) for s in details["shapes"])
        return (f"a matrix product got {inner} features per row where the layer takes {k} (first operand {rows}x{inner}, "
                f"second {k}x{n})")
    if "batch_sizes" in details:
        a, b = details["batch_sizes"]
        return f"the model produced {a} predictions for {b} targets"
    if "input_size" in details:
        want, got = details["input_size"]
        return f"the recurrent layer takes {want} features per time step but got {got}"
    return ""


def _last_line(traceback: str) -> str:
    lines = [ln.strip() for ln in traceback.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 3] + "..."


def last_signals(run: Any) -> dict[str, Any]:
    """The last healthy readings before a run stopped: step, finite loss, grad norm, lr."""
    steps = run.steps("scalars")
    out: dict[str, Any] = {"last_recorded_step": int(steps.max()) if len(steps) else None}
    for name in ("loss", "grad_norm", "lr"):
        values = run.column("scalars", name)
        if values is None or not len(values):
            continue
        ok = np.flatnonzero(np.isfinite(values))
        if len(ok):
            out[f"last_finite_{name}"] = float(values[ok[-1]])
            out[f"last_finite_{name}_step"] = int(steps[ok[-1]])
    return out


def died_at(run: Any) -> int | None:
    """The step being executed when the run stopped (error.step, else one past the last row)."""
    err = run.error or {}
    step = err.get("step")
    if isinstance(step, int) and not isinstance(step, bool):
        return step
    steps = run.steps("scalars")
    return int(steps.max()) + 1 if len(steps) else None
