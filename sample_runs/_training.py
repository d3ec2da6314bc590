"""Small, real PyTorch training runs with the faults runlens must diagnose.

One :class:`Spec` describes a run: the synthetic task, the model, the
optimizer and schedule, and at most a few injected faults. :func:`train`
trains it on the CPU through the project's recorder. ``generate.py`` (the
shipped sample runs) and ``benchmarks/accuracy.py`` (the larger labeled set)
both build their runs from here, so a fault means the same thing in both.

Everything is seeded and single-threaded: the batch of step ``s`` is drawn
from a generator seeded by ``(seed, s)``, so a resumed attempt replays the
exact batches of the steps it repeats and a run regenerates identically
(values, not file bytes: the tables carry wall-clock times).

Faults are injected the way they happen in real code, not by editing the log:
a per-batch standardization that divides by a zero std, a layer left out of
the optimizer, a corrupted batch, a shard stored as float64, and so on.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from recorders.torch import Recorder  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _parts import Data, _gen, build_model  # noqa: E402
from _truth import Truth  # noqa: E402

CRASH_KINDS = ("oom", "shape", "dtype", "device", "other")



@dataclass(frozen=True)
class Spec:
    """Everything that decides a run; its fields go into run.json ``config``."""

    name: str
    seed: int = 0
    # data: "teacher" (labels from a fixed random network: learnable),
    # "random_labels" (labels independent of inputs), "xor" (parity of two
    # feature signs: no linear model can beat chance)
    task: str = "teacher"
    classes: int = 4
    n_train: int | None = None  # None: a fresh sample every step (no overfitting possible)
    label_noise: float = 0.0
    batch_size: int = 64
    late_batch_size: int | None = None  # from late_at of the run on, batches of this size
    late_at: float = 0.75
    n_val: int = 512
    eval_every: int | None = 25  # None: no validation at all
    # model: mlp | resmlp | cnn | gru | lstm | rnn | transformer | linear
    model: str = "mlp"
    width: int = 64
    depth: int = 2
    activation: str = "relu"
    init_gain: float = 1.0  # multiplies every weight after PyTorch's default init
    dead_block: int | None = None  # resmlp block whose bias starts so negative every ReLU is dead
    # optimization: sgd | momentum | adam | adamw
    optimizer: str = "adam"
    lr: float = 1e-3
    weight_decay: float = 0.0
    schedule: str = "constant"  # constant | cosine | step | warmup | jump
    jump_at: float = 0.5  # "jump": lr * jump_factor from this fraction of the run on
    jump_factor: float = 1.0
    steps: int = 400
    clip: float | None = None
    loss: str = "ce"  # ce | mse (one-hot regression) | nll_raw (nll_loss on logits: log_softmax forgotten)
    # faults
    frozen_first: bool = False  # first layer left out of the optimizer
    spike_every: int | None = None  # a batch with shuffled labels and scaled inputs every N steps
    spike_scale: float = 1.0
    nan_at: int | None = None  # a batch with a constant feature hits a per-batch std of 0
    stop_grad_norm: float | None = None  # the user's watchdog: stop when the grad norm passes this
    crash: str | None = None  # one of CRASH_KINDS
    crash_at: int | None = None
    kill_at: int | None = None  # the training process is SIGKILLed at this step
    resume_crash_at: int | None = None  # attempt 1 dies here, attempt 2 resumes from the last checkpoint
    ckpt_every: int = 100
    flush_every: int = 100
    layers_every: int = 1
    compact: bool = True  # False keeps every part as written (a resumed run's repeated steps stay on disk)
    extra: dict = field(default_factory=dict)  # free-form notes that land in config

    def config(self) -> dict:
        cfg = dataclasses.asdict(self)
        cfg.pop("name")
        return cfg



# -- optimization -------------------------------------------------------------


def build_optimizer(spec: Spec, model: nn.Module) -> torch.optim.Optimizer:
    params = list(model.parameters())
    if spec.frozen_first:
        # The bug: the optimizer is built from every module but the first,
        # e.g. after the input layer was swapped out following construction.
        first = next(m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d)))
        skip = {id(p) for p in first.parameters()}
        params = [p for p in params if id(p) not in skip]
    wd = spec.weight_decay
    if spec.optimizer == "sgd":
        return torch.optim.SGD(params, lr=spec.lr, weight_decay=wd)
    if spec.optimizer == "momentum":
        return torch.optim.SGD(params, lr=spec.lr, momentum=0.9, weight_decay=wd)
    if spec.optimizer == "adam":
        return torch.optim.Adam(params, lr=spec.lr, weight_decay=wd)
    if spec.optimizer == "adamw":
        # AdamW refuses a negative decay; the negative-decay bug is applied by
        # hand in train() instead, the way a custom decoupled decay would be.
        return torch.optim.AdamW(params, lr=spec.lr, weight_decay=max(wd, 0.0))
    raise ValueError(f"unknown optimizer {spec.optimizer!r}")


def lr_factor(spec: Spec, step: int) -> float:
    n, frac = spec.steps, step / max(1, spec.steps)
    if spec.schedule == "constant":
        return 1.0
    if spec.schedule == "cosine":
        return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac))
    if spec.schedule == "step":
        return 0.1 ** int(step // max(1, n // 3))
    if spec.schedule == "warmup":
        warm = max(1, n // 10)
        return min(1.0, (step + 1) / warm)
    if spec.schedule == "jump":
        return spec.jump_factor if frac >= spec.jump_at else 1.0
    raise ValueError(f"unknown schedule {spec.schedule!r}")


# -- faults -------------------------------------------------------------------


def standardize_per_batch(x: torch.Tensor) -> torch.Tensor:
    """The pipeline's per-batch feature scaling: no epsilon in the division."""
    return (x - x.mean(0)) / x.std(0)


class CrashInjector:
    """Makes step ``crash_at`` fail the way the named real bug does."""

    def __init__(self, spec: Spec) -> None:
        self.kind, self.at, self.classes = spec.crash, spec.crash_at, spec.classes
        if self.kind is not None and self.kind not in CRASH_KINDS:
            raise ValueError(f"unknown crash kind {self.kind!r}")
        self.class_weight = None
        if self.kind == "device":
            # Built inside the meta-device context meant for fast model init,
            # so it never got real storage; it is only used once reweighting
            # starts at crash_at.
            with torch.device("meta"):
                self.class_weight = torch.ones(spec.classes)

    def batch(self, step: int, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if step != self.at:
            return x, y
        if self.kind == "shape":
            return torch.cat([x, x[:, :3]], 1), y  # a shard written with 3 extra columns
        if self.kind == "dtype":
            return x.double(), y  # a shard saved from numpy as float64
        if self.kind == "oom":
            # Collate pads to the longest sequence; one record's length field
            # is corrupt (2**40), so padding asks for petabytes and the
            # allocator refuses at once, before touching any memory.
            padded = torch.zeros(x.shape[0], 2**40, dtype=torch.float32)
            return padded, y
        if self.kind == "other":
            y = y.clone()
            y[0] = self.classes + 8  # a label outside the class range
        return x, y

    def weight(self, step: int) -> torch.Tensor | None:
        return self.class_weight if (self.kind == "device" and step >= self.at) else None


class Preempted(RuntimeError):
    """Stands in for the infrastructure failure that ends a resumable attempt."""


def _loss(spec: Spec, logits: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    if spec.loss == "mse":
        return F.mse_loss(logits, F.one_hot(y, spec.classes).to(logits.dtype))
    if spec.loss == "nll_raw":
        # the classic bug: nll_loss expects log-probabilities; on raw logits it is -logit[y],
        # unbounded below, so the optimizer grows the weights for ever
        return F.nll_loss(logits, y)
    return F.cross_entropy(logits, y, weight=weight)


@torch.no_grad()
def _validate(spec: Spec, model: nn.Module, data: Data) -> tuple[float, float]:
    model.eval()
    x, y = data.val
    logits = model(x)
    model.train()
    return _loss(spec, logits, y, None).item(), (logits.argmax(1) == y).float().mean().item()


# -- the training loop --------------------------------------------------------


def _batch(spec: Spec, data: Data, crash: CrashInjector, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = data.batch(step)
    if spec.spike_every and step > 0 and step % spec.spike_every == 0:
        # A corrupted shard: shuffled labels and inputs in other units.
        y = y[torch.randperm(y.shape[0], generator=_gen(spec.seed, 5_000 + step))]
        x = x * spec.spike_scale
    if spec.nan_at is not None:
        if step == spec.nan_at:
            x = x.clone()
            x[:, 0] = 0.0  # a stuck sensor: the feature is constant across the batch
        x = standardize_per_batch(x)
    return crash.batch(step, x, y)


def _update(spec: Spec, model: nn.Module, opt: torch.optim.Optimizer, loss: torch.Tensor, truth: Truth,
            step: int) -> None:
    loss.backward()
    truth.after_backward(model, step)
    if spec.clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), spec.clip)
    opt.step()
    if spec.optimizer == "adamw" and spec.weight_decay < 0:
        # Decoupled decay with the sign flipped: p <- p * (1 + lr*|wd|)
        with torch.no_grad():
            for group in opt.param_groups:
                for p in group["params"]:
                    p.mul_(1.0 - group["lr"] * spec.weight_decay)
    truth.after_update(step, loss.detach().item())


def train(spec: Spec, out_dir: str | Path, *, start_step: int = 0, stop_at: int | None = None,
          ckpt_dir: Path | None = None, on_step=None) -> None:
    """Train ``spec`` into run directory ``out_dir``.

    ``start_step`` > 0 resumes from the checkpoint of that step in
    ``ckpt_dir``. ``stop_at`` ends the attempt by raising :class:`Preempted`
    at that step. ``on_step(step)`` runs after each recorded step (the
    killed-run child blocks there, waiting for its SIGKILL). The loop's own
    measurements go to ``truth-<attempt>.npz`` (see ``_truth``).
    """
    torch.set_num_threads(1)
    torch.manual_seed(spec.seed)
    data, model = Data(spec), build_model(spec)
    opt = build_optimizer(spec, model)
    base_lrs = [g["lr"] for g in opt.param_groups]
    crash = CrashInjector(spec)
    if start_step:
        state = torch.load(ckpt_dir / f"step{start_step}.pt", weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
    truth = Truth(model, out_dir, attempt=2 if start_step else 1, every=spec.layers_every)
    step = start_step
    try:
        with Recorder(str(out_dir), model, opt, config=spec.config(), seed=spec.seed,
                      flush_every=spec.flush_every, flush_seconds=30.0, layers_every=spec.layers_every,
                      name=spec.name, compact_on_close=spec.compact,
                      resume=bool(start_step), **({"start_step": start_step} if start_step else {})) as rec:
            for step in range(start_step, spec.steps):
                if ckpt_dir is not None and step % spec.ckpt_every == 0:
                    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()},
                               ckpt_dir / f"step{step}.pt")
                if stop_at is not None and step == stop_at:
                    raise Preempted(f"DataLoader worker (pid(s) 4242) exited unexpectedly at step {step}")
                for group, base in zip(opt.param_groups, base_lrs, strict=True):
                    group["lr"] = base * lr_factor(spec, step)
                x, y = _batch(spec, data, crash, step)
                model.zero_grad(set_to_none=True)
                logits = model(x)
                _update(spec, model, opt, _loss(spec, logits, y, crash.weight(step)), truth, step)
                rec.step(truth.loss[-1], accuracy=(logits.detach().argmax(1) == y).float().mean().item())
                if spec.eval_every and ((step + 1) % spec.eval_every == 0 or step + 1 == spec.steps):
                    val_loss, val_acc = _validate(spec, model, data)
                    truth.validation(step, val_loss)
                    rec.validation(val_loss, val_accuracy=val_acc)
                if on_step is not None:
                    if step == spec.kill_at:
                        truth.save()  # the child is about to be SIGKILLed
                    on_step(step)
                if spec.stop_grad_norm is not None:
                    if not truth.grad_norm[-1] <= spec.stop_grad_norm:
                        break  # the user's watchdog ends training; the run still closes cleanly
    except Exception as exc:
        truth.crashed(step, exc)
        raise
    finally:
        truth.save()


def train_resumed(spec: Spec, out_dir: str | Path) -> None:
    """Attempt 1 dies at ``resume_crash_at``; attempt 2 resumes from the last checkpoint."""
    with tempfile.TemporaryDirectory(prefix="runlens-ckpt-") as tmp:
        ckpt = Path(tmp)
        try:
            train(spec, out_dir, stop_at=spec.resume_crash_at, ckpt_dir=ckpt)
        except Preempted:
            pass
        last = (spec.resume_crash_at // spec.ckpt_every) * spec.ckpt_every
        train(spec, out_dir, start_step=last, ckpt_dir=ckpt)


def train_killed(spec: Spec, out_dir: str | Path) -> None:
    """Train in a child process and SIGKILL it once it reaches ``kill_at``.

    The child says when it is there and then blocks, so the kill lands at the
    same step every time and the run directory is left exactly as a killed
    process leaves it: status "running", parts up to the last flush.
    """
    payload = json.dumps({"spec": dataclasses.asdict(spec), "out": str(out_dir)})
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    child = subprocess.Popen([sys.executable, __file__, "--child"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        child.stdin.write(payload + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        if not line.startswith("AT "):
            raise RuntimeError(f"killed-run child for {spec.name} failed before step {spec.kill_at}")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()


def _child_main() -> None:
    payload = json.loads(sys.stdin.readline())
    spec = Spec(**payload["spec"])

    def wait_for_kill(step: int) -> None:
        if step == spec.kill_at:
            print(f"AT {step}", flush=True)
            sys.stdin.readline()  # blocks until the parent's SIGKILL
            raise SystemExit("parent never killed the child")

    train(spec, payload["out"], on_step=wait_for_kill)


def train_twin(spec: Spec, out_dir: str | Path) -> None:
    """Train ``spec`` at the learning rate ``extra["twin_lr"]`` (the optimizer's ordinary one) and keep
    only its truth file: whether that rate does better is what makes this one too high or too low."""
    twin = dataclasses.replace(spec, name=f"{spec.name}-twin", lr=float(spec.extra["twin_lr"]), extra={})
    with tempfile.TemporaryDirectory(prefix="runlens-twin-") as tmp:
        train(twin, Path(tmp) / "run")
        shutil.copyfile(Path(tmp) / "run" / "truth-1.npz", Path(out_dir) / "twin-truth.npz")


def run_spec(spec: Spec, out_dir: str | Path) -> None:
    """Produce the run for ``spec``, whichever way it has to end (and its twin, if it has one)."""
    _run_spec(spec, out_dir)
    if spec.extra.get("twin_lr"):
        train_twin(spec, out_dir)


def _run_spec(spec: Spec, out_dir: str | Path) -> None:
    if spec.kill_at is not None:
        train_killed(spec, out_dir)
    elif spec.resume_crash_at is not None:
        train_resumed(spec, out_dir)
    elif spec.crash is not None:
        try:
            train(spec, out_dir)
        except Exception:  # the recorder wrote the crash into run.json: that is the point
            pass
    else:
        train(spec, out_dir)


if __name__ == "__main__" and sys.argv[1:] == ["--child"]:
    _child_main()
