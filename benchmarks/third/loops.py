"""The third generator's training loop, with each bug written the way people write it.

One :class:`Scenario` is one run: a task, an optimizer, a schedule, a length
and at most one bug. :func:`train` runs it as a user's loop would (the bug is
a line of that loop: a missing ``zero_grad``, a softmax before the loss, a
scheduler stepped per batch, ...), records it with the project's recorder
when given a folder, and returns what a :class:`Probe` measured in torch on
every step. The twin of a buggy run is the same scenario without its bug,
trained from the same seed without a recorder; the labels compare the two
(``benchmarks/third/truth.py``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from benchmarks.third.models import Task

BUGS = ("no_zero_grad", "softmax_ce", "eval_missing", "sched_per_batch", "labels_shuffled", "unnormalized",
        "optimizer_subset", "reduction_sum", "accum_unscaled", "detached_stem", "restart", "class_sorted",
        "tiny_clip", "target_leak")


@dataclass(frozen=True)
class Scenario:
    name: str
    task: str
    seed: int
    steps: int
    bug: str | None = None
    optimizer: str = "adam"  # adam | adamw | sgd | momentum
    lr: float = 1e-3
    batch: int = 64
    weight_decay: float = 0.0
    dropout: float = 0.0
    accum: int = 1
    schedule: str = "constant"  # constant | step_epoch | warm_restarts | on_plateau | warmup_cosine
    label_smoothing: float = 0.0
    log_every: int = 1  # rec.step only every n-th step (sparse logging)
    layers_every: int = 5
    unfreeze_at: float | None = None  # two-phase fine-tuning: stem and body frozen until this fraction
    evals: int = 20
    width: int | None = None  # the model's hidden width; None: the task's default (``models.WIDTHS``)

    def twin(self) -> Scenario:
        return dataclasses.replace(self, name=self.name + "-twin", bug=None)


class Probe:
    """What the loop measures in torch: per optimizer step and per validation pass."""

    def __init__(self) -> None:
        self.rows: dict[str, list[float]] = {}
        self.val: dict[str, list[float]] = {}

    def add(self, table: dict[str, list[float]], **values: float) -> None:
        for k, v in values.items():
            table.setdefault(k, []).append(float(v))

    def arrays(self) -> dict[str, np.ndarray]:
        out = {k: np.asarray(v) for k, v in self.rows.items()}
        out.update({f"val_{k}": np.asarray(v) for k, v in self.val.items()})
        return out


def _optimizer(sc: Scenario, params) -> torch.optim.Optimizer:
    if sc.optimizer == "adam":
        return torch.optim.Adam(params, lr=sc.lr, weight_decay=sc.weight_decay)
    if sc.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=sc.lr, weight_decay=sc.weight_decay)
    if sc.optimizer == "sgd":
        return torch.optim.SGD(params, lr=sc.lr, weight_decay=sc.weight_decay)
    return torch.optim.SGD(params, lr=sc.lr, momentum=0.9, weight_decay=sc.weight_decay)


def _data(sc: Scenario, task: Task) -> tuple[torch.Tensor, ...]:
    x, y, vx, vy = task.x, task.y, task.vx, task.vy
    if sc.bug == "unnormalized":  # raw features in their own units, from 1 to 1e5
        scale = torch.logspace(0, 5, x.shape[1])
        x, vx = x * scale, vx * scale
    if sc.bug == "labels_shuffled":  # x and y shuffled with two different permutations
        y = y[torch.randperm(len(y), generator=torch.Generator().manual_seed(sc.seed + 7))]
    if sc.bug == "target_leak":  # the label column was left among the features
        x, vx = _leak(x, y), _leak(vx, vy)
    return x, y, vx, vy


def _leak(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    if x.dim() == 2 and x.dtype.is_floating_point:
        x[:, -1] = y.float() * 3
    elif x.dim() == 4:  # a label-coloured background: the class id added to every pixel
        x = x + y.float()[:, None, None, None] * 2
    else:  # token inputs: the label's own token at the front
        x[:, 0] = y if y.dim() == 1 else y[:, 0]
    return x


def _order(sc: Scenario, y: torch.Tensor, epoch: int) -> torch.Tensor:
    if sc.bug == "class_sorted":  # the data file is sorted by class and the loader has shuffle=False
        key = y if y.dim() == 1 else y[:, 0]
        return torch.argsort(key.float(), stable=True)
    return torch.randperm(len(y), generator=torch.Generator().manual_seed(sc.seed * 1000 + epoch))


def _schedule(sc: Scenario, opt: torch.optim.Optimizer, steps_per_epoch: int):
    s = torch.optim.lr_scheduler
    if sc.schedule == "step_epoch":
        return s.StepLR(opt, step_size=2, gamma=0.1)
    if sc.schedule == "warm_restarts":
        return s.CosineAnnealingWarmRestarts(opt, T_0=max(1, sc.steps // 4))
    if sc.schedule == "on_plateau":
        return s.ReduceLROnPlateau(opt, factor=0.3, patience=1)
    if sc.schedule == "warmup_cosine":
        warm = max(1, int(0.3 * sc.steps))
        return s.LambdaLR(opt, lambda t: (t + 1) / warm if t < warm else
                          0.5 * (1 + math.cos(math.pi * (t - warm) / max(1, sc.steps - warm))))
    return None


def config_of(sc: Scenario, task: Task, steps_per_epoch: int) -> dict:
    cfg = {"optimizer": sc.optimizer, "lr": sc.lr, "batch_size": sc.batch, "weight_decay": sc.weight_decay,
           "dropout": sc.dropout, "epochs": math.ceil(sc.steps / steps_per_epoch),
           "steps_per_epoch": steps_per_epoch, "model": task.name}
    if task.k is not None:
        cfg["num_classes"] = task.k
    if sc.accum > 1:
        cfg["gradient_accumulation_steps"] = sc.accum
    if sc.schedule != "constant":
        cfg["scheduler"] = sc.schedule
    if sc.bug == "tiny_clip":
        cfg["max_grad_norm"] = 1e-4
    if sc.label_smoothing:
        cfg["label_smoothing"] = sc.label_smoothing
    return cfg


def recorder(path: Path | None, model: nn.Module, opt, cfg: dict, sc: Scenario, resume: bool = False):
    if path is None:
        return None
    try:
        from recorders import Recorder
    except ImportError:
        from recorders.torch import Recorder
    kw = {"config": cfg, "seed": sc.seed, "layers_every": sc.layers_every, "handle_signals": False}
    if resume:
        try:
            return Recorder(path, model, opt, resume=True, **kw)
        except TypeError:  # a recorder from before resume= was explicit: reopening resumes
            return Recorder(path, model, opt, **kw)
    return Recorder(path, model, opt, **kw)
