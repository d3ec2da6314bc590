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

The recorder reads it on the steps it records layers: the first training
forward after such a step's start gets a gradient hook on its output (the
tensor, the ``logits`` of a model output, or a tuple's first tensor), which
keeps three device numbers; the recorder turns them into host floats with the
step's other readings. Nothing is kept when the output's rows do not sum to
zero (not a softmax cross-entropy: a regression, a sigmoid, probabilities).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

HEAD_ROWS = 64  # rows whose sums are checked: enough to reject a non-softmax output, cheap on any vocabulary


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
        self._tol = 0.0
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
            self._tol = row_sum_tolerance(logits.dtype)
            logits.register_hook(self._grad)
        except Exception:  # noqa: BLE001
            self.remove()

    def _grad(self, grad: torch.Tensor) -> None:
        try:  # likewise for the user's backward
            self._read(grad)
        except Exception:  # noqa: BLE001
            self._stats = None

    def _read(self, grad: torch.Tensor) -> None:
        with torch.no_grad():
            rows = grad.detach().reshape(-1, grad.shape[-1])
            # amax and amin per row: the largest entry in size without a temporary as large as the logits
            top, bottom = rows.amax(dim=1), rows.amin(dim=1)
            largest = torch.maximum(top, -bottom)
            head = rows[:HEAD_ROWS].float()
            sums = head.sum(dim=1).abs() / head.abs().sum(dim=1).clamp_min(1e-38)
            self._stats = torch.stack([(largest > 0).sum().float(), largest.max().float(), sums.max()])

    def take(self, backward_passes: int) -> dict[str, float | int]:
        """``ce_grad_scale`` (N times the largest entry, N the rows with a gradient) and the step's
        ``backward_passes``, when the last armed read saw a softmax cross-entropy; else nothing."""
        stats, self._stats = self._stats, None
        if stats is None:
            return {}
        rows, largest, row_sum = stats.tolist()
        if not (rows >= 1 and largest > 0 and math.isfinite(largest) and row_sum <= self._tol):
            return {}
        return {"ce_grad_scale": rows * largest, "backward_passes": max(int(backward_passes), 1)}

    def remove(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
