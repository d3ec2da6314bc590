"""The training loop of the held-out set: one :class:`Run` in, a recorded run and its probe out."""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    from recorders import Recorder  # the public API
except ImportError:  # older trees export it from the torch module only
    from recorders.torch import Recorder

from benchmarks.heldout.probe import Probe  # noqa: E402
from benchmarks.heldout.tasks import Setup, Task, gen, make_task, scale_init  # noqa: E402

CRASH_KINDS = ("shape", "hidden", "dtype", "inplace", "device", "oom", "index")


@dataclass
class Run:
    name: str
    setup: Setup
    optimizer: str = "adamw"  # adamw | adam | rmsprop | sgd | nesterov
    lr: float = 1e-3
    weight_decay: float = 0.0
    schedule: str = "constant"  # constant | onecycle | linear | step_up
    change_at: float = 0.4  # step_up: lr * change_factor from this fraction of the run on
    change_factor: float = 1.0
    steps: int = 500
    batch: int = 64
    accum: int = 1
    clip: float | None = None
    bf16: bool = False
    eval_every: int = 25
    layers_every: int = 1
    frozen_first: bool = False  # the first weight-bearing module is left out of the optimizer
    spike_every: int | None = None
    late_batch: int | None = None  # from 75% of the run on, batches of this size
    crash: str | None = None
    crash_at: int | None = None
    stop_grad_norm: float = 1e12  # the user's watchdog on the gradient norm
    extra: dict = field(default_factory=dict)

    def config(self) -> dict:
        cfg = dataclasses.asdict(self)
        cfg.pop("name")
        cfg.update(cfg.pop("setup"))
        task_classes = {"tabular": 3, "deep": 3, "vit": 4, "gru_lm": 12, "rnn": 2}.get(self.setup.task)
        if task_classes:
            cfg["classes"] = task_classes
        return cfg


def build_optimizer(run: Run, model: nn.Module) -> torch.optim.Optimizer:
    params = list(model.parameters())
    if run.frozen_first:
        # The bug: the optimizer is built before the first module is replaced (or from a
        # parameter list that skips it), so that module gets gradients and never moves.
        first = next(m for m in model.modules() if isinstance(m, (nn.Linear, nn.Embedding, nn.RNN)))
        skip = {id(p) for p in first.parameters()}
        params = [p for p in params if id(p) not in skip]
    o, lr, wd = run.optimizer, run.lr, run.weight_decay
    if o == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    if o == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=wd)
    if o == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, weight_decay=wd, alpha=0.99)
    if o == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=wd)
    if o == "nesterov":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=wd)
    raise ValueError(f"unknown optimizer {o!r}")


def build_schedule(run: Run, opt: torch.optim.Optimizer):
    n = run.steps
    if run.schedule == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=run.lr, total_steps=n + 1)
    if run.schedule == "linear":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.02, 1 - s / n))
    if run.schedule == "step_up":
        at = int(run.change_at * n)
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: run.change_factor if s >= at else 1.0)
    if run.schedule == "constant":
        return None
    raise ValueError(f"unknown schedule {run.schedule!r}")


class InjectedCrash:
    """At ``crash_at`` the step does what the named real bug does; torch raises its own error."""

    def __init__(self, run: Run) -> None:
        self.kind, self.at = run.crash, run.crash_at
        if self.kind is not None and self.kind not in CRASH_KINDS:
            raise ValueError(f"unknown crash kind {self.kind!r}")

    def __call__(self, step: int, model: nn.Module, batch: tuple, loss: torch.Tensor) -> torch.Tensor:
        if step != self.at:
            return loss
        k = self.kind
        if k == "shape":  # images of a new resolution: 25 patches against 16 position embeddings
            return loss + model(torch.randn(batch[0].shape[0], 20, 20)).sum()
        if k == "hidden":  # a hidden state carried over from a batch of another size (TBPTT)
            h = torch.zeros(1, batch[0].shape[0] * 2, model.gru.hidden_size)
            return loss + model.gru(model.emb(batch[0]), h)[0].sum()
        if k == "dtype":  # targets read back from a float column
            return F.cross_entropy(model(batch[0]), batch[1].float())
        if k == "inplace":  # a running statistic created as an integer tensor
            counts = torch.zeros(batch[0].shape[1], dtype=torch.long)
            counts.add_(batch[0].mean(0))
            return loss
        if k == "device":  # a queue of negatives built under the meta device for a fast init
            with torch.device("meta"):
                queue = torch.zeros(64, 16)
            return loss + torch.cat([model(batch[0]), queue]).sum()
        if k == "oom":  # pairwise differences against the whole dataset: (N,1) - (1,M) broadcasts
            everything = torch.zeros(2**23)
            return loss + (everything[:, None] - everything[None, :]).mean()
        if k == "index":  # a tokenizer with a larger vocabulary than the embedding
            return loss + model(batch[0] + model.emb.num_embeddings).sum()
        return loss


def _corrupt(task: Task, batch: tuple, step: int, scale: float) -> tuple:
    g = gen(task.setup.seed, 900_000 + step)
    x = batch[0]
    if x.dtype.is_floating_point:
        x = x * scale
    else:
        x = torch.randint(0, task.classes, x.shape, generator=g)
    if len(batch) == 1:
        return (x,)
    y = batch[1]
    return (x, y[torch.randperm(y.shape[0], generator=g)]) if y.dim() == 1 else (x, batch[1].roll(1, 0))


@torch.no_grad()
def _validate(task: Task, model: nn.Module) -> float:
    model.eval()
    loss = float(task.loss(model, task.val_set, -1))
    model.train()
    return loss


def train(run: Run, out: Path) -> tuple[Probe, dict | None]:
    """Train ``run`` into ``out``; returns the probe and the exception the step raised (or None)."""
    torch.set_num_threads(1)
    torch.manual_seed(run.setup.seed)
    task = make_task(run.setup)
    model = task.build()
    scale_init(model, run.setup)
    opt = build_optimizer(run, model)
    sched = build_schedule(run, opt)
    probe = Probe(model)
    crash = InjectedCrash(run)
    raised = None
    nan_seen = None
    try:
        with Recorder(str(out), model, opt, name=run.name, config=run.config(), seed=run.setup.seed,
                      layers_every=run.layers_every, flush_every=200) as rec:
            for step in range(run.steps):
                size = run.late_batch if run.late_batch and step >= 0.75 * run.steps else run.batch
                total = 0.0
                opt.zero_grad(set_to_none=True)
                for micro in range(run.accum):
                    batch = task.batch(step * run.accum + micro, size)
                    if run.spike_every and step > 0 and step % run.spike_every == 0:
                        batch = _corrupt(task, batch, step, 8.0)
                    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=run.bf16):
                        loss = task.loss(model, batch, step)
                        loss = crash(step, model, batch, loss)
                    (loss.float() / run.accum).backward()
                    total += float(loss.detach()) / run.accum
                probe.after_backward()
                if run.clip is not None:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), run.clip)
                probe.before_step()
                opt.step()
                probe.after_step(total)
                if sched is not None:
                    sched.step()
                rec.step(total)
                if (step + 1) % run.eval_every == 0 or step + 1 == run.steps:
                    val = _validate(task, model)
                    probe.validation(step, val)
                    rec.validation(val)
                if not math.isfinite(total) and nan_seen is None:
                    nan_seen = step
                # The user's guards: stop a few steps after the loss is NaN, or when the
                # gradient norm passes the watchdog's limit.
                gn = probe.grad_norm[-1]
                if (nan_seen is not None and step >= nan_seen + 3) or not gn < run.stop_grad_norm:
                    break
    except Exception as exc:  # the recorder wrote it into run.json; the label records what we raised
        raised = {"type": type(exc).__name__, "step": len(probe.loss)}
    return probe, raised
