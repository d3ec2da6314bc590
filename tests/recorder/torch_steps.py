"""The smallest training loop the recorder tests record: a squared-output loss on random inputs."""

from __future__ import annotations

import torch


def train_steps(rec, model: torch.nn.Module, opt: torch.optim.Optimizer, steps: int, batch: tuple[int, ...]) -> None:
    """``steps`` optimizer steps on ``torch.randn(*batch)``, each recorded with ``rec.step``."""
    for _ in range(steps):
        opt.zero_grad()
        loss = model(torch.randn(*batch)).pow(2).mean()
        loss.backward()
        opt.step()
        rec.step(loss)
