"""What ``_training.train`` measures in torch while it trains: the ground truth ``_verify`` reads.

The recorder's tables are what runlens grades; the labels must not come from
them (nor from runlens), so the training loop takes its own readings at the
moments they are true and writes them to ``truth-<attempt>.npz`` in the run
directory:

- after backward, before clipping: the global gradient norm and each weight
  matrix's gradient norm (matrices in depth order: registration order);
- around ``optimizer.step()`` (and the hand-applied weight decay): each
  matrix's weight norm before the step and the norm of what the step changed;
- the loss of every step, each validation loss, and the exception a step
  raised (type and message as torch raised it).

Per-matrix readings are taken every ``layers_every`` steps, as the recorder's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn


class Truth:
    def __init__(self, model: nn.Module, out_dir: str | Path, attempt: int, every: int = 1) -> None:
        named = [(n, p) for n, p in model.named_parameters() if p.dim() > 1]
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.path = Path(out_dir) / f"truth-{attempt}.npz"
        self.every = max(1, every)
        self.step: list[int] = []
        self.loss: list[float] = []
        self.grad_norm: list[float] = []
        self.layer_step: list[int] = []
        self.layer_grad: list[list[float]] = []
        self.layer_weight: list[list[float]] = []
        self.layer_update: list[list[float]] = []
        self.val_step: list[int] = []
        self.val_loss: list[float] = []
        self.raised: dict | None = None
        self._grads: list[float] = []
        self._before: list[torch.Tensor] | None = None
        self._global = math.nan

    @torch.no_grad()
    def after_backward(self, model: nn.Module, step: int) -> None:
        norms = [float(p.grad.norm()) for p in model.parameters() if p.grad is not None]
        self._global = math.sqrt(sum(n * n for n in norms)) if norms else 0.0
        if step % self.every == 0:
            self._grads = [float(p.grad.norm()) if p.grad is not None else 0.0 for p in self.params]
            self._before = [p.detach().clone() for p in self.params]

    @torch.no_grad()
    def after_update(self, step: int, loss: float) -> None:
        self.step.append(step)
        self.loss.append(float(loss))
        self.grad_norm.append(self._global)
        if self._before is not None:
            self.layer_step.append(step)
            self.layer_grad.append(self._grads)
            self.layer_weight.append([float(b.norm()) for b in self._before])
            self.layer_update.append([float((p - b).norm()) for p, b in zip(self.params, self._before, strict=True)])
            self._before = None

    def validation(self, step: int, loss: float) -> None:
        self.val_step.append(step)
        self.val_loss.append(float(loss))

    def crashed(self, step: int, exc: BaseException) -> None:
        self.raised = {"type": type(exc).__name__, "message": str(exc)[:2000], "step": step}

    def save(self) -> None:
        shape = (len(self.layer_step), len(self.names))
        np.savez_compressed(
            self.path, step=np.array(self.step, dtype=np.int64), loss=np.array(self.loss),
            grad_norm=np.array(self.grad_norm), layer_step=np.array(self.layer_step, dtype=np.int64),
            layer_grad=np.array(self.layer_grad, dtype=np.float64).reshape(shape),
            layer_weight=np.array(self.layer_weight, dtype=np.float64).reshape(shape),
            layer_update=np.array(self.layer_update, dtype=np.float64).reshape(shape),
            val_step=np.array(self.val_step, dtype=np.int64), val_loss=np.array(self.val_loss),
            names=np.array(self.names), raised=np.array(json.dumps(self.raised)))


def load(run: str | Path) -> list[dict]:
    """The attempts' truth files of a run, oldest first."""
    paths = sorted(Path(run).glob("truth-*.npz"), key=lambda p: int(p.stem.split("-")[1]))
    return [load_file(p) for p in paths]


def load_file(path: str | Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    d["raised"] = json.loads(str(d["raised"]))
    d["names"] = [str(n) for n in d["names"]]
    return d
