"""The bug cases: models, synthetic data, each bug's switch, and the criterion that measures it.

A case is ``make(fixed) -> (Loop, truth)`` where ``truth(measured, loop)``
returns ``(holds, figures)``: whether the bug, as the criterion in
``CRITERIA`` states it, was measured in torch during training. The buggy run
must satisfy it and its fixed twin must not; the generator refuses either
run otherwise. The criteria were written before any detector ran on these
runs and read torch, never a detector's threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from benchmarks.bugs._loop import Loop

CRITERIA = {
    "softmax_before_cross_entropy": "the model's outputs sum to 1 on every row (a softmax inside the model), "
                                    "the last 20% of training losses never go below ln(1+(K-1)/e) - 0.01 and "
                                    "the late training accuracy is >= 0.9",
    "validation_leak": "one validation input feature is the label, and zeroing it at the end raises the "
                       "validation loss at least 5x (the model reads the label)",
    "validation_in_train_mode": "model.training is True at every validation pass and the train-mode validation "
                                "loss is >= 1.1x the eval-mode one on average",
    "parameters_without_gradient": "some trainable parameters had .grad None after every backward while others "
                                   "had a gradient",
    "parameters_not_in_optimizer": "some trainable parameters are in no optimizer param group and are bit-for-bit "
                                   "unchanged at the end while having received gradients",
    "lr_schedule_collapse": "the scheduler stepped once per optimizer step and the rate used fell below 1e-4 of "
                            "its start by the end of the second epoch",
    "clipping_removes_updates": "on the median step clip_grad_norm_ leaves at most 1e-3 of the pre-clip "
                                "gradient norm",
    "data_not_shuffled": "the batch order is identical in every epoch and the mean share of a batch's majority "
                         "class is >= 0.9",
    "inputs_not_normalized": "the input features' standard deviations span at least 3 decades",
    "accumulation_unscaled": "on the median step the accumulated gradient's norm is above the largest "
                             "micro-batch gradient norm (each of its mean loss): a mean of the micro-batch "
                             "gradients cannot exceed its largest term, a sum can",
    "weight_decay_collapse": "the decay term wd*||w|| exceeds the applied gradient norm on >= 50% of steps and "
                             "the median parameter-tensor norm ends at <= 0.1 of its start",
}


# -- data ------------------------------------------------------------------------------------
def blobs(n: int, d: int, k: int, seed: int, spread: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(k, d, generator=g) * 1.5
    y = torch.arange(n) % k
    y = y[torch.randperm(n, generator=g)]
    return centers[y] + spread * torch.randn(n, d, generator=g), y


def images(n: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    templates = torch.randn(k, 1, 8, 8, generator=g)
    y = torch.randint(0, k, (n,), generator=g)
    return templates[y] + 0.8 * torch.randn(n, 1, 8, 8, generator=g), y


def tokens(n: int, k: int, seed: int, t: int = 12, vocab: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """Class c: token c appears three times among random tokens."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, k, (n,), generator=g)
    x = torch.randint(k, vocab, (n, t), generator=g)
    for i in range(n):
        pos = torch.randperm(t, generator=g)[:3]
        x[i, pos] = y[i]
    return x, y


def waves(n: int, k: int, seed: int, length: int = 32, noise: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, k, (n,), generator=g)
    t = torch.arange(length).float()
    phase = torch.rand(n, 1, generator=g) * 6.28
    x = torch.sin((y[:, None].float() + 1) * 0.35 * t + phase) + noise * torch.randn(n, length, generator=g)
    return x[:, None, :], y


def split(x: torch.Tensor, y: torch.Tensor, n_val: int):
    return x[n_val:], y[n_val:], x[:n_val], y[:n_val]


# -- models ----------------------------------------------------------------------------------
def mlp(d: int, k: int, hidden: int = 32, softmax: bool = False) -> nn.Module:
    layers: list[nn.Module] = [nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                               nn.Linear(hidden, k)]
    return nn.Sequential(*layers, *([nn.Softmax(dim=-1)] if softmax else []))


class BNCNN(nn.Module):
    def __init__(self, k: int, detach_stem: bool = False) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(16, k)
        self.detach_stem = detach_stem

    def forward(self, x):
        h = self.stem(x)
        return self.head(self.body(h.detach() if self.detach_stem else h))


class LSTMClassifier(nn.Module):
    def __init__(self, k: int, vocab: int = 16, dropout: float = 0.0) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, 16)
        self.lstm = nn.LSTM(16, 32, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(32, k)

    def forward(self, x):
        out, _ = self.lstm(self.emb(x))
        return self.head(self.drop(out[:, -1]))


class TinyDecoder(nn.Module):
    """Decoder-only: causal self-attention, the last position classifies."""

    def __init__(self, k: int, vocab: int = 16, t: int = 12, d: int = 32) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(t, d) * 0.1)
        self.block = nn.TransformerEncoderLayer(d, 2, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, k)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(t))

    def forward(self, x):
        return self.head(self.block(self.emb(x) + self.pos, src_mask=self.mask, is_causal=True)[:, -1])


def conv1d(k: int, channels: int = 1) -> nn.Module:
    return nn.Sequential(nn.Conv1d(channels, 8, 5, padding=2), nn.ReLU(), nn.Conv1d(8, 16, 5, padding=2), nn.ReLU(),
                         nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(16, k))


def autoencoder(d: int = 16) -> nn.Module:
    return nn.Sequential(nn.Linear(d, 8), nn.ReLU(), nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 8), nn.ReLU(),
                         nn.Linear(8, d))


Truth = Callable[[dict[str, Any], Loop], tuple[bool, dict[str, Any]]]
Case = Callable[[bool], tuple[Loop, Truth]]
