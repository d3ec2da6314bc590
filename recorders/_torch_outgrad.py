"""How much the loss was scaled, read off the gradient that reaches the model's logits.

A softmax cross-entropy averaged over N rows sends each row of logits the
gradient ``c * (p - y) / N``: its entries sum to zero along the classes and
none is larger than ``c / N`` in size, where ``c`` is whatever the loss was
multiplied by (1 for a plain mean, ``1/K`` for a loss divided by K
accumulation steps, N for a sum). So ``N * max|grad|`` is a lower bound on
``c``, reached when some row is confidently wrong (early in training, or any
misclassified sample). With K micro-batches per optimizer step a bound above
``1/K`` proves the loss was not divided by K, whatever the optimizer, the
learning rate or the model; nothing else the log holds can tell it (the same
update results from a loss divided by K at K times the rate).

The same read tells whether the loss's input was logits at all. Logits
confined to [0, 1] (a model ending in softmax or sigmoid, fed to a loss that
applies log-softmax again) cap how far the loss can fall; the forward side
writes ``logits_in_unit_interval`` (1 when every checked entry lies in
[0, 1]) and ``logits_sum_to_one`` (1 when, besides, every checked row sums
to 1: a softmax's output; a model that learned nothing can output nearly
equal logits that happen to lie in [0, 1], never rows that sum to 1). A
softmax applied between the model and the loss leaves the output unbounded
but squeezes its gradient: each entry of ``J^T (q - y)``, J the
softmax's Jacobian, is at most about ``p(1 - p) <= 1/4`` of a plain
cross-entropy's, so ``ce_grad_scale`` never climbs to the ``(K-1)/K`` a
plain cross-entropy's worst row reaches early in training.

The recorder reads it on the steps it records layers: the first training
forward after such a step's start gets a gradient hook on its output (the
tensor, the ``logits`` of a model output, or a tuple's first tensor). The
hooks leave six device numbers that ride whole in the step's one host
transfer (no transfer, and no device work beyond their reductions, of their
own); :func:`settle` turns them into the columns on the host, or writes none
when the output's rows did not sum to zero (not a softmax cross-entropy: a
regression, a sigmoid with BCE, a loss on log-probabilities).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

HEAD_ROWS = 64  # rows whose sums are checked: enough to reject a non-softmax output, cheap on any vocabulary
COLUMNS = ("ce_grad_scale", "logits_in_unit_interval", "logits_sum_to_one", "backward_passes")
# The raw readings (six device numbers) and their tolerances, carried whole in the step's one transfer
# and turned into COLUMNS on the host by settle().
READINGS, TOLERANCES = "_outgrad", "_outgrad_tolerances"


def logits_of(out: Any) -> torch.Tensor | None:
    """The tensor a classification loss reads from ``out``: itself, its ``logits``, or a tuple's first."""
    if isinstance(out, torch.Tensor):
        return out
    logits = out.get("logits") if isinstance(out, dict) else getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    return None


def unit_sum_tolerance(dtype: torch.dtype) -> float:
    """How far from 1 a softmax output's row may sum in ``dtype`` (16-bit floats round each entry)."""
    return 1e-3 if dtype in (torch.float32, torch.float64) else 2e-2


def row_sum_tolerance(dtype: torch.dtype) -> float:
    """How far from zero a softmax row's gradient may sum, relative to its L1 norm, in ``dtype``."""
    return max(1e-4, 4 * float(torch.finfo(dtype).eps)) if dtype.is_floating_point else 0.0


class OutputGradWatch:
    """One armed read of the output's gradient per recorded step (see the module docstring).

    The forward hook exists only while armed (from a recorded step's start to its first training
    forward), so other forwards pay nothing."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self._stats: torch.Tensor | None = None
        self._bounded: torch.Tensor | None = None
        self._tol = self._unit_tol = 0.0
        self._hook: Any = None

    @property
    def armed(self) -> bool:
        return self._hook is not None

    @armed.setter
    def armed(self, on: bool) -> None:
        if on and self._hook is None:
            self._hook = self.model.register_forward_hook(self._forward)
        elif not on:
            self.remove()

    def _forward(self, module: nn.Module, args: Any, out: Any) -> None:
        try:  # a hook that raised would break the user's forward: recording never breaks training
            if not module.training:
                return  # a validation forward: wait for training's
            logits = logits_of(out)
            if (logits is None or not logits.requires_grad or logits.dim() < 2 or logits.shape[-1] < 2
                    or logits.numel() == 0):
                return
            self.remove()
            self._tol, self._unit_tol = row_sum_tolerance(logits.dtype), unit_sum_tolerance(logits.dtype)
            with torch.no_grad():
                head = logits.detach().reshape(-1, logits.shape[-1])[:HEAD_ROWS]
                low, high = torch.aminmax(head)
                off_one = (head.sum(dim=1, dtype=torch.float32) - 1).abs().amax()  # accumulate in fp32, no copy
                self._bounded = torch.stack([low.float(), high.float(), off_one])
            logits.register_hook(self._grad)
        except Exception:  # noqa: BLE001
            self.remove()

    def _grad(self, grad: torch.Tensor) -> None:
        try:  # likewise for the user's backward
            self._read(grad)
        except Exception:  # noqa: BLE001
            self._stats = self._bounded = None

    def _read(self, grad: torch.Tensor) -> None:
        with torch.no_grad():
            rows = grad.detach().reshape(-1, grad.shape[-1])
            # amax and amin per row: the largest entry in size without a temporary as large as the logits
            top, bottom = rows.amax(dim=1), rows.amin(dim=1)
            largest = torch.maximum(top, -bottom)
            head = rows[:HEAD_ROWS]
            sums = (head.sum(dim=1, dtype=torch.float32).abs()
                    / head.abs().sum(dim=1, dtype=torch.float32).clamp_min(1e-38))
            self._stats = torch.stack([(largest > 0).sum().float(), largest.max().float(), sums.max()])

    def take(self, backward_passes: int) -> dict[str, Any]:
        """The last armed read for the step's one host transfer: its six device numbers (``READINGS``,
        one tensor), their tolerances and the step's ``backward_passes``; empty when nothing was read.
        :func:`settle` turns them into columns on the host, so the device does no more work here."""
        stats, self._stats = self._stats, None
        bounded, self._bounded = self._bounded, None
        if stats is None or bounded is None:
            return {}
        return {READINGS: torch.cat([stats, bounded.to(stats.dtype)]), TOLERANCES: (self._tol, self._unit_tol),
                "backward_passes": max(int(backward_passes), 1)}

    def remove(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None


def settle(columns: dict[str, Any]) -> dict[str, Any]:
    """``columns`` on the host with the raw readings of :meth:`OutputGradWatch.take` turned into
    ``ce_grad_scale``, ``logits_in_unit_interval`` and ``logits_sum_to_one``; none of them, nor
    ``backward_passes``, when the read saw no softmax cross-entropy (rows of the gradient that do
    not sum to zero)."""
    if READINGS not in columns:
        return columns
    out = {k: v for k, v in columns.items() if k not in (READINGS, TOLERANCES)}
    rows, largest, row_sum, low, high, off_one = (float(v) for v in columns[READINGS])
    row_tol, unit_tol = columns.get(TOLERANCES) or (0.0, 0.0)
    scale = rows * largest
    if not (rows >= 1 and largest > 0 and math.isfinite(scale) and row_sum <= row_tol):
        out.pop("backward_passes", None)
        return out
    unit = low >= 0 and high <= 1
    out |= {"ce_grad_scale": scale, "logits_in_unit_interval": float(unit),
            "logits_sum_to_one": float(unit and off_one <= unit_tol)}
    return out
