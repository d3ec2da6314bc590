"""What the generator measures in torch while it trains: the ground truth of a label.

The probe never reads the recorder's tables: it takes its own readings from
the model and optimizer, at the moments they are true.

- after backward (accumulated, before clipping): the global gradient norm and
  the gradient norm of the first and of the last weight matrix;
- around ``optimizer.step()``: every parameter's update ``||w_after -
  w_before||`` and its weight norm, so a parameter the optimizer never
  touches is seen as exactly-zero updates, and the update-to-weight ratio
  is the one the optimizer really applied (momentum, Adam's scaling,
  decoupled weight decay included);
- the training loss of every step and each validation loss.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn


class Probe:
    def __init__(self, model: nn.Module) -> None:
        self.params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.mats = [i for i, (_, p) in enumerate(self.params) if p.dim() > 1]
        self.loss: list[float] = []
        self.grad_norm: list[float] = []
        self.grad_first: list[float] = []
        self.grad_last: list[float] = []
        self.update_ratio: list[float] = []  # ||all updates|| / ||all weights||
        self.weight_norm: list[float] = []
        self.val_step: list[int] = []
        self.val_loss: list[float] = []
        self.max_update = np.zeros(len(self.params))  # per parameter, over the whole run
        self.max_grad = np.zeros(len(self.params))
        self._before: list[torch.Tensor] = []

    @torch.no_grad()
    def after_backward(self) -> None:
        norms = [float(p.grad.norm()) if p.grad is not None else 0.0 for _, p in self.params]
        self.max_grad = np.maximum(self.max_grad, np.nan_to_num(norms, nan=np.inf))
        self.grad_norm.append(math.sqrt(sum(n * n for n in norms)))
        self.grad_first.append(norms[self.mats[0]] if self.mats else math.nan)
        self.grad_last.append(norms[self.mats[-1]] if self.mats else math.nan)

    @torch.no_grad()
    def before_step(self) -> None:
        self._before = [p.detach().clone() for _, p in self.params]

    @torch.no_grad()
    def after_step(self, loss: float) -> None:
        deltas = [float((p - b).norm()) for (_, p), b in zip(self.params, self._before, strict=True)]
        self.max_update = np.maximum(self.max_update, np.nan_to_num(deltas, nan=np.inf))
        w = math.sqrt(sum(float(b.norm()) ** 2 for b in self._before))
        u = math.sqrt(sum(d * d for d in deltas))
        self.update_ratio.append(u / w if w > 0 else math.nan)
        self.weight_norm.append(w)
        self.loss.append(float(loss))

    def validation(self, step: int, loss: float) -> None:
        self.val_step.append(step)
        self.val_loss.append(float(loss))

    def arrays(self) -> dict[str, np.ndarray]:
        names = np.array([n for n, _ in self.params])
        return {"loss": np.array(self.loss), "grad_norm": np.array(self.grad_norm[: len(self.loss)]),
                "grad_first": np.array(self.grad_first[: len(self.loss)]),
                "grad_last": np.array(self.grad_last[: len(self.loss)]),
                "update_ratio": np.array(self.update_ratio), "weight_norm": np.array(self.weight_norm),
                "val_step": np.array(self.val_step, dtype=np.int64), "val_loss": np.array(self.val_loss),
                "param_names": names, "param_max_update": self.max_update, "param_max_grad": self.max_grad,
                "param_is_matrix": np.array([p.dim() > 1 for _, p in self.params])}

    def save(self, path: Path) -> None:
        np.savez_compressed(path, **self.arrays())


def load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}
