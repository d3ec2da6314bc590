"""Synthetic tasks and the small models that learn them.

Each :class:`Task` draws seeded batches (``batch(step)``), keeps a fixed
validation set, builds its model and computes its loss. The weight matrices
of every model are registered input side first, so the first and the last
matrix of ``named_parameters()`` are the two ends of the network (the probe
compares their gradients).

- ``tabular``: 48 features on scales from 0.1 to 10, labels from a random
  tanh teacher (3 classes); a wide MLP with LayerNorm.
- ``deep``: the tabular data through a deep sigmoid or tanh stack.
- ``vit``: 16x16 noisy images with a bright 4x4 square; the class is the
  quadrant it is in; a one-block vision transformer on 4x4 patches.
- ``gru_lm``: sequences from a random Markov chain over 12 tokens; a GRU
  language model predicting the next token.
- ``vae``: 16-d points on a noisy 2-d manifold; a VAE (reconstruction + KL).
- ``infonce``: two noisy views of 32 cluster centres; an MLP encoder trained
  with InfoNCE against the other examples of the batch.
- ``rnn``: sequences of 20 steps; a ReLU RNN classifying the sign of a sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


def gen(seed: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 7_919 + salt)


@dataclass
class Setup:
    """The task-side knobs of a run (optimizer-side ones live in ``catalog.Run``)."""

    task: str
    seed: int = 0
    width: int = 64
    depth: int = 2
    activation: str = "gelu"
    init_gain: float = 1.0
    head_gain: float = 1.0  # multiplies the last layer's weights: > 1 starts the loss above chance
    n_train: int | None = None  # a finite training set (epochs over it); None: fresh data every step
    label_noise: float = 0.0
    random_labels: bool = False
    extra: dict = field(default_factory=dict)


# -- models ---------------------------------------------------------------------------------------

_ACT = {"gelu": nn.GELU, "relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


class TabularNet(nn.Module):
    def __init__(self, d_in: int, width: int, depth: int, k: int, act: str, norm: bool = True) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        fan = d_in
        for i in range(depth):
            w = width if i == 0 else max(16, width // 2)
            layers += [nn.Linear(fan, w)] + ([nn.LayerNorm(w)] if norm else []) + [_ACT[act]()]
            fan = w
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(fan, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class ViT(nn.Module):
    def __init__(self, width: int, k: int, patch: int = 4, size: int = 16) -> None:
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(patch * patch, width)
        self.pos = nn.Parameter(torch.randn((size // patch) ** 2, width) * 0.02)
        self.block = nn.TransformerEncoderLayer(width, nhead=2, dim_feedforward=2 * width, dropout=0.0,
                                                batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, k)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        b, p = img.shape[0], self.patch
        tokens = img.unfold(1, p, p).unfold(2, p, p).reshape(b, -1, p * p)
        h = self.block(self.embed(tokens) + self.pos)
        return self.head(self.norm(h.mean(1)))


class GruLM(nn.Module):
    def __init__(self, vocab: int, width: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, 16)
        self.gru = nn.GRU(16, width, batch_first=True)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(self.emb(tokens))
        return self.head(out)


class VAE(nn.Module):
    def __init__(self, d: int, width: int, z: int = 2) -> None:
        super().__init__()
        self.enc = nn.Linear(d, width)
        self.mu = nn.Linear(width, z)
        self.logvar = nn.Linear(width, z)
        self.dec1 = nn.Linear(z, width)
        self.dec2 = nn.Linear(width, d)

    def forward(self, x: torch.Tensor, g: torch.Generator | None = None) -> tuple[torch.Tensor, ...]:
        h = torch.tanh(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h).clamp(-8, 8)
        eps = torch.randn(mu.shape, generator=g) if g is not None else torch.zeros_like(mu)
        zs = mu + eps * torch.exp(0.5 * logvar)
        return self.dec2(torch.tanh(self.dec1(zs))), mu, logvar


class Encoder(nn.Module):
    def __init__(self, d: int, width: int, out: int = 16) -> None:
        super().__init__()
        self.l1 = nn.Linear(d, width)
        self.norm = nn.LayerNorm(width)
        self.l2 = nn.Linear(width, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.l2(F.gelu(self.norm(self.l1(x)))), dim=1)


class ReluRNN(nn.Module):
    def __init__(self, width: int, recurrent_gain: float) -> None:
        super().__init__()
        self.rnn = nn.RNN(4, width, batch_first=True, nonlinearity="relu")
        with torch.no_grad():
            # An orthogonal recurrence scaled by the gain: above 1 the state and its
            # gradient grow geometrically through time.
            nn.init.orthogonal_(self.rnn.weight_hh_l0)
            self.rnn.weight_hh_l0.mul_(recurrent_gain)
        self.head = nn.Linear(width, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


# -- tasks ----------------------------------------------------------------------------------------


class Task:
    """Data, model and loss of one setup; ``classes`` is K when the loss is a K-way cross-entropy."""

    classes: int | None = None

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.train_set = self.draw(setup.n_train, gen(setup.seed, 11)) if setup.n_train else None
        self.val_set = self.draw(512, gen(setup.seed, 13))

    def draw(self, n: int, g: torch.Generator) -> tuple[torch.Tensor, ...]:
        raise NotImplementedError

    def batch(self, step: int, size: int) -> tuple[torch.Tensor, ...]:
        g = gen(self.setup.seed, 100_000 + step)
        if self.train_set is None:
            return self.draw(size, g)
        idx = torch.randint(0, self.train_set[0].shape[0], (size,), generator=g)
        return tuple(t[idx] for t in self.train_set)

    def build(self) -> nn.Module:
        raise NotImplementedError

    def loss(self, model: nn.Module, batch: tuple[torch.Tensor, ...], step: int) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(model(x), y)

    def _noisy(self, y: torch.Tensor, k: int, g: torch.Generator) -> torch.Tensor:
        if self.setup.random_labels:
            return torch.randint(0, k, y.shape, generator=g)
        if self.setup.label_noise > 0:
            flip = torch.rand(y.shape, generator=g) < self.setup.label_noise
            y = torch.where(flip, torch.randint(0, k, y.shape, generator=g), y)
        return y


class Tabular(Task):
    classes = 3
    D = 48

    def __init__(self, setup: Setup) -> None:
        g = gen(setup.seed, 1)
        self.scale = 10 ** (torch.rand(self.D, generator=g) * 2 - 1)
        self.w1 = torch.randn(self.D, 24, generator=g) / math.sqrt(self.D)
        self.w2 = torch.randn(24, self.classes, generator=g) * 2.0
        super().__init__(setup)

    def draw(self, n, g):
        z = torch.randn(n, self.D, generator=g)
        y = (torch.tanh(z @ self.w1 * 2) @ self.w2).argmax(1)
        return z * self.scale, self._noisy(y, self.classes, g)

    def build(self):
        s = self.setup
        return TabularNet(self.D, s.width, s.depth, self.classes, s.activation, norm=s.task == "tabular")


class Deep(Tabular):
    """The tabular data standardized, through a deep saturating stack without normalization."""

    def draw(self, n, g):
        x, y = super().draw(n, g)
        return x / self.scale, y


class Patches(Task):
    classes = 4

    def draw(self, n, g):
        img = torch.randn(n, 16, 16, generator=g) * 0.5
        y = torch.randint(0, 4, (n,), generator=g)
        r0 = (y // 2) * 8 + torch.randint(0, 5, (n,), generator=g)
        c0 = (y % 2) * 8 + torch.randint(0, 5, (n,), generator=g)
        rows = torch.arange(16)
        mask = ((rows[None, :, None] >= r0[:, None, None]) & (rows[None, :, None] < r0[:, None, None] + 4)
                & (rows[None, None, :] >= c0[:, None, None]) & (rows[None, None, :] < c0[:, None, None] + 4))
        return img + 2.0 * mask, self._noisy(y, 4, g)

    def build(self):
        return ViT(self.setup.width, 4)


class MarkovText(Task):
    classes = 12
    LENGTH = 16

    def __init__(self, setup: Setup) -> None:
        g = gen(setup.seed, 2)
        self.trans = torch.softmax(3.0 * torch.randn(self.classes, self.classes, generator=g), 1)
        super().__init__(setup)

    def draw(self, n, g):
        tokens = torch.empty(n, self.LENGTH + 1, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, self.classes, (n,), generator=g)
        for t in range(self.LENGTH):
            tokens[:, t + 1] = torch.multinomial(self.trans[tokens[:, t]], 1, generator=g).squeeze(1)
        if self.setup.random_labels:
            tokens = torch.randint(0, self.classes, tokens.shape, generator=g)
        return tokens[:, :-1], tokens[:, 1:]

    def build(self):
        return GruLM(self.classes, self.setup.width)

    def loss(self, model, batch, step):
        x, y = batch
        return F.cross_entropy(model(x).reshape(-1, self.classes), y.reshape(-1))


class Manifold(Task):
    D = 16

    def __init__(self, setup: Setup) -> None:
        g = gen(setup.seed, 3)
        self.a = torch.randn(2, 24, generator=g)
        self.b = torch.randn(24, self.D, generator=g) / math.sqrt(24)
        super().__init__(setup)

    def draw(self, n, g):
        z = torch.randn(n, 2, generator=g)
        return (torch.tanh(z @ self.a) @ self.b + 0.05 * torch.randn(n, self.D, generator=g),)

    def build(self):
        return VAE(self.D, self.setup.width)

    def loss(self, model, batch, step):
        (x,) = batch
        recon, mu, logvar = model(x, gen(self.setup.seed, 500_000 + step) if model.training else None)
        rec = ((recon - x) ** 2).sum(1).mean()
        kl = (-0.5 * (1 + logvar - mu**2 - logvar.exp()).sum(1)).mean()
        return rec + kl


class Views(Task):
    D = 24

    def __init__(self, setup: Setup) -> None:
        self.centres = torch.randn(32, self.D, generator=gen(setup.seed, 4))
        super().__init__(setup)

    def draw(self, n, g):
        c = self.centres[torch.randint(0, 32, (n,), generator=g)]
        return (c + 0.4 * torch.randn(n, self.D, generator=g), c + 0.4 * torch.randn(n, self.D, generator=g))

    def build(self):
        return Encoder(self.D, self.setup.width)

    def loss(self, model, batch, step):
        a, b = batch
        logits = model(a) @ model(b).T / 0.1
        return F.cross_entropy(logits, torch.arange(a.shape[0]))


class Sequences(Task):
    classes = 2

    def draw(self, n, g):
        x = torch.randn(n, 20, 4, generator=g)
        return x, self._noisy((x[:, :, 0].sum(1) > 0).long(), 2, g)

    def build(self):
        return ReluRNN(self.setup.width, float(self.setup.extra.get("recurrent_gain", 1.0)))


TASKS = {"tabular": Tabular, "deep": Deep, "vit": Patches, "gru_lm": MarkovText, "vae": Manifold,
         "infonce": Views, "rnn": Sequences}


def make_task(setup: Setup) -> Task:
    return TASKS[setup.task](setup)


def scale_init(model: nn.Module, setup: Setup) -> None:
    """Apply the setup's init gains: every matrix by ``init_gain``, the last one also by ``head_gain``."""
    mats = [p for _, p in model.named_parameters() if p.dim() > 1]
    with torch.no_grad():
        if setup.init_gain != 1.0:
            for p in mats:
                p.mul_(setup.init_gain)
        if setup.head_gain != 1.0 and mats:
            mats[-1].mul_(setup.head_gain)
