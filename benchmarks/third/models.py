"""The third generator's six tasks: architectures neither earlier generator has.

Each task draws its own synthetic data from a seed and builds a model for it:

- ``mixer``: an MLP-Mixer over 4x4 patches of 8x8 two-channel images, 5 classes;
- ``tagger``: a bidirectional GRU tagging each token of a 12-token sequence, 4 tags;
- ``bag``: an ``EmbeddingBag`` (fastText-style) classifier of 20-word bags, 3 classes;
- ``resreg``: a residual MLP with LayerNorm, regression under MSE;
- ``moe``: a mixture of four experts with a softmax gate, 6 classes;
- ``sepconv``: a depthwise-separable CNN with GroupNorm on 12x12 images, 4 classes.

``Task.k`` is the class count (``None`` for the regression task). ``Task.x``/``y``
hold the training set and ``Task.vx``/``vy`` the validation set; the first
module of every model is its ``stem`` (the layer closest to the input).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

TASKS = ("mixer", "tagger", "bag", "resreg", "moe", "sepconv")
# Each model's default hidden width (the constructors' own defaults), which ``--vary`` scales.
WIDTHS = {"mixer": 32, "tagger": 32, "bag": 32, "resreg": 48, "moe": 32, "sepconv": 16}


def gen(seed: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 104_729 + salt)


class Mixer(nn.Module):
    def __init__(self, k: int, width: int = 32, dropout: float = 0.0) -> None:
        super().__init__()
        self.stem = nn.Linear(2 * 4 * 4, width)  # one token per 4x4 patch
        self.token_mix = nn.Sequential(nn.LayerNorm(width), nn.Linear(4, 16), nn.GELU(), nn.Linear(16, 4))
        self.chan_mix = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.GELU(),
                                      nn.Dropout(dropout), nn.Linear(2 * width, width))
        self.head = nn.Linear(width, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        p = x.unfold(2, 4, 4).unfold(3, 4, 4).permute(0, 2, 3, 1, 4, 5).reshape(b, 4, 32)
        h = self.stem(p)
        h = h + self.token_mix[1:](self.token_mix[0](h).transpose(1, 2)).transpose(1, 2)
        h = h + self.chan_mix(h)
        return self.head(h.mean(1))


class Tagger(nn.Module):
    def __init__(self, k: int, vocab: int = 24, width: int = 32, dropout: float = 0.0) -> None:
        super().__init__()
        self.stem = nn.Embedding(vocab, width)
        self.rnn = nn.GRU(width, width, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(2 * width, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.rnn(self.stem(x))[0]))  # (B, T, K)


class Bag(nn.Module):
    def __init__(self, k: int, vocab: int = 300, width: int = 32, dropout: float = 0.0) -> None:
        super().__init__()
        self.stem = nn.EmbeddingBag(vocab, width, mode="mean")
        self.body = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Dropout(dropout))
        self.head = nn.Linear(width, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(x)))


class ResReg(nn.Module):
    def __init__(self, d: int = 12, width: int = 48, blocks: int = 3, dropout: float = 0.0) -> None:
        super().__init__()
        self.stem = nn.Linear(d, width)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.SiLU(),
                                                  nn.Dropout(dropout)) for _ in range(blocks))
        self.head = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(h).squeeze(-1)


class MoE(nn.Module):
    def __init__(self, k: int, d: int = 10, width: int = 32, experts: int = 4, dropout: float = 0.0) -> None:
        super().__init__()
        self.stem = nn.Linear(d, width)
        self.gate = nn.Linear(width, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Dropout(dropout))
                                     for _ in range(experts))
        self.head = nn.Linear(width, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.stem(x))
        w = torch.softmax(self.gate(h), -1)
        mix = torch.stack([e(h) for e in self.experts], -1)
        return self.head((mix * w[:, None, :]).sum(-1))


class SepConv(nn.Module):
    def __init__(self, k: int, width: int = 16, dropout: float = 0.0) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, padding=1)
        self.dw = nn.Conv2d(width, width, 3, padding=1, groups=width)
        self.pw = nn.Conv2d(width, 2 * width, 1)
        self.norm = nn.GroupNorm(4, 2 * width)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(2 * width, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.stem(x))
        h = F.relu(self.norm(self.pw(self.dw(h))))
        return self.head(self.drop(h.mean((2, 3))))


class Task:
    """One task's data (train and validation) and model factory."""

    def __init__(self, name: str, seed: int, n: int = 2048, label_noise: float = 0.05) -> None:
        if name not in TASKS:
            raise ValueError(f"unknown task {name!r}")
        self.name, self.seed = name, seed
        self.k = {"mixer": 5, "tagger": 4, "bag": 3, "resreg": None, "moe": 6, "sepconv": 4}[name]
        x, y = getattr(self, f"_draw_{name}")(n + n // 4, gen(seed, 1))
        if self.k is not None and label_noise > 0:
            g = gen(seed, 2)
            flip = torch.rand(y.shape, generator=g) < label_noise
            y = torch.where(flip, torch.randint(0, self.k, y.shape, generator=g), y)
        self.x, self.y, self.vx, self.vy = x[:n], y[:n], x[n:], y[n:]

    def build(self, dropout: float = 0.0, width: int | None = None) -> nn.Module:
        """The task's model; ``width`` overrides its hidden width (``None``: the default in :data:`WIDTHS`)."""
        torch.manual_seed(self.seed)
        w = {"width": width} if width is not None else {}
        return {"mixer": lambda: Mixer(5, dropout=dropout, **w), "tagger": lambda: Tagger(4, dropout=dropout, **w),
                "bag": lambda: Bag(3, dropout=dropout, **w), "resreg": lambda: ResReg(dropout=dropout, **w),
                "moe": lambda: MoE(6, dropout=dropout, **w),
                "sepconv": lambda: SepConv(4, dropout=dropout, **w)}[self.name]()

    def loss(self, out: torch.Tensor, y: torch.Tensor, reduction: str = "mean",
             label_smoothing: float = 0.0) -> torch.Tensor:
        if self.k is None:
            return F.mse_loss(out, y, reduction=reduction)
        return F.cross_entropy(out.reshape(-1, self.k), y.reshape(-1), reduction=reduction,
                               label_smoothing=label_smoothing)

    def accuracy(self, out: torch.Tensor, y: torch.Tensor) -> float:
        if self.k is None:  # regression: the share of variance explained stands in
            return float(1 - F.mse_loss(out, y) / y.var().clamp_min(1e-12))
        return float((out.reshape(-1, self.k).argmax(1) == y.reshape(-1)).float().mean())

    # -- data -----------------------------------------------------------------------------------

    def _draw_mixer(self, n: int, g: torch.Generator):
        protos = torch.randn(5, 2, 8, 8, generator=gen(self.seed, 3))
        y = torch.randint(0, 5, (n,), generator=g)
        return protos[y] * 0.8 + torch.randn(n, 2, 8, 8, generator=g), y

    def _draw_tagger(self, n: int, g: torch.Generator):
        x = torch.randint(0, 24, (n, 12), generator=g)
        prev = torch.cat([torch.zeros(n, 1, dtype=torch.long), x[:, :-1]], 1)
        return x, (x + prev) % 4  # the tag needs the token and its left neighbour

    def _draw_bag(self, n: int, g: torch.Generator):
        y = torch.randint(0, 3, (n,), generator=g)
        common = torch.randint(0, 240, (n, 20), generator=g)
        cue = 240 + y[:, None] * 20 + torch.randint(0, 20, (n, 20), generator=g)
        use_cue = torch.rand(n, 20, generator=g) < 0.25
        return torch.where(use_cue, cue, common), y

    def _draw_resreg(self, n: int, g: torch.Generator):
        x = torch.randn(n, 12, generator=g)
        w = torch.randn(12, generator=gen(self.seed, 4)) / math.sqrt(12)
        return x, torch.sin(2 * (x @ w)) + 0.3 * x[:, 0] * x[:, 1] + 0.05 * torch.randn(n, generator=g)

    def _draw_moe(self, n: int, g: torch.Generator):
        x = torch.randn(n, 10, generator=g)
        w = torch.randn(10, 6, generator=gen(self.seed, 5))
        region = (x[:, 0] > 0).long()
        logits = torch.where(region[:, None] == 1, x @ w, -(x @ w))
        return x, logits.argmax(1)

    def _draw_sepconv(self, n: int, g: torch.Generator):
        y = torch.randint(0, 4, (n,), generator=g)
        img = 0.7 * torch.randn(n, 1, 12, 12, generator=g)
        r, c = (y // 2) * 6, (y % 2) * 6
        for i in range(n):
            img[i, 0, r[i]:r[i] + 4, c[i]:c[i] + 4] += 1.5
        return img, y
