"""The synthetic task's data and the model kinds of the sample runs (see ``_training``)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# Image and sequence models see the same 64 features as an 8x8 image or as 8
# tokens of 8 features, so every model kind trains on the same tasks.
DIM = 64
IMAGE = (1, 8, 8)
SEQ = (8, 8)


def _gen(seed: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1_000_003 + salt)


class Data:
    """Batches for step ``s`` and a fixed validation set, all seeded."""

    def __init__(self, spec) -> None:
        self.spec = spec
        g = _gen(spec.seed, 7)
        hidden = 32
        # A random tanh network makes a task a 2-layer model can learn but a
        # linear one only partly; the logit scale keeps classes near balanced.
        self.w1 = torch.randn(DIM, hidden, generator=g) / math.sqrt(DIM)
        self.w2 = torch.randn(hidden, spec.classes, generator=g) * 2.0
        self.train_set = None
        if spec.n_train is not None:
            self.train_set = self._draw(spec.n_train, _gen(spec.seed, 11), noisy=True)
        self.val = self._draw(spec.n_val, _gen(spec.seed, 13), noisy=True)

    def _labels(self, x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
        task, k = self.spec.task, self.spec.classes
        if task == "teacher":
            return (torch.tanh(x @ self.w1 * 2.0) @ self.w2).argmax(1)
        if task == "random_labels":
            return torch.randint(0, k, (x.shape[0],), generator=g)
        if task == "xor":
            return ((x[:, 0] > 0) ^ (x[:, 1] > 0)).long()
        raise ValueError(f"unknown task {task!r}")

    def _draw(self, n: int, g: torch.Generator, noisy: bool) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, DIM, generator=g)
        y = self._labels(x, g)
        if noisy and self.spec.label_noise > 0:
            flip = torch.rand(n, generator=g) < self.spec.label_noise
            y = torch.where(flip, torch.randint(0, self.spec.classes, (n,), generator=g), y)
        return x, y

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = _gen(self.spec.seed, 1_000 + step)
        b = self.spec.batch_size
        if self.spec.late_batch_size and step >= self.spec.late_at * self.spec.steps:
            b = self.spec.late_batch_size
        if self.train_set is None:
            return self._draw(b, g, noisy=True)
        x, y = self.train_set
        idx = torch.randint(0, x.shape[0], (min(b, x.shape[0]),), generator=g)
        return x[idx], y[idx]


# -- models -------------------------------------------------------------------

_ACT = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "gelu": nn.GELU}


class ResMLP(nn.Module):
    def __init__(self, width: int, depth: int, classes: int, act: type[nn.Module]) -> None:
        super().__init__()
        self.inp = nn.Linear(DIM, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.act = act()
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = h + self.act(block(h))
        return self.head(h)


class ConvNet(nn.Module):
    def __init__(self, width: int, depth: int, classes: int, act: type[nn.Module]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        c = IMAGE[0]
        for _ in range(max(1, depth)):
            layers += [nn.Conv2d(c, width, 3, padding=1), act()]
            c = width
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(width * 16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x.reshape(x.shape[0], *IMAGE))
        return self.head(F.avg_pool2d(h, 2).flatten(1))


class RecurrentNet(nn.Module):
    def __init__(self, cell: str, width: int, depth: int, classes: int) -> None:
        super().__init__()
        if cell == "rnn":
            # ReLU recurrence: nothing bounds the state, the textbook way to
            # get gradients that grow through time.
            self.rnn = nn.RNN(SEQ[1], width, num_layers=max(1, depth), batch_first=True,
                              nonlinearity="relu")
        else:
            rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[cell]
            self.rnn = rnn(SEQ[1], width, num_layers=max(1, depth), batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x.reshape(x.shape[0], *SEQ))
        return self.head(out[:, -1])


class TinyTransformer(nn.Module):
    def __init__(self, width: int, depth: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Linear(SEQ[1], width)
        self.pos = nn.Parameter(torch.randn(SEQ[0], width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, nhead=2, dim_feedforward=2 * width, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=max(1, depth), enable_nested_tensor=False)
        # The task's label depends on every feature's position: the head reads
        # all tokens rather than a mean that would blur which was where.
        self.head = nn.Linear(width * SEQ[0], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x.reshape(x.shape[0], *SEQ)) + self.pos
        return self.head(self.encoder(h).flatten(1))


def build_model(spec) -> nn.Module:
    act = _ACT[spec.activation]
    k, w, d = spec.classes, spec.width, spec.depth
    if spec.model == "linear":
        model: nn.Module = nn.Sequential(nn.Linear(DIM, k))
    elif spec.model == "mlp":
        layers: list[nn.Module] = []
        fan_in = DIM
        for _ in range(d):
            layers += [nn.Linear(fan_in, w), act()]
            fan_in = w
        model = nn.Sequential(*layers, nn.Linear(fan_in, k))
    elif spec.model == "resmlp":
        model = ResMLP(w, d, k, act)
    elif spec.model == "cnn":
        model = ConvNet(w, d, k, act)
    elif spec.model in ("gru", "lstm", "rnn"):
        model = RecurrentNet(spec.model, w, d, k)
    elif spec.model == "transformer":
        model = TinyTransformer(w, d, k)
    else:
        raise ValueError(f"unknown model {spec.model!r}")
    if spec.init_gain != 1.0:
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    p.mul_(spec.init_gain)
    if spec.dead_block is not None:
        # A bias far below any pre-activation the inputs can produce: every
        # unit of the block outputs 0 and passes back an exactly-zero gradient.
        with torch.no_grad():
            model.blocks[spec.dead_block].bias.fill_(-100.0)
    return model
