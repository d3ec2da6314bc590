"""The one training loop every bug case runs, with the bug's switch, measuring what happens in torch.

Each case builds a model, data and a ``Loop`` and calls :func:`train`; the
loop records through the public recorder and returns what it measured
during training (the numbers the case's truth criterion reads). Nothing here
knows a detector's threshold.

The recorder writes the loop columns issue 21 added itself (evals
``model_training``; scalars ``optimizer_steps``, ``scheduler_steps``,
``grad_norm_applied``, ``update_norm``; run.json ``params_without_grad``,
``params_outside_optimizer``): the loop hands it the scheduler and checks,
after close, that its run.json lists agree with this loop's own
measurement. With a recorder that predates them, the loop writes them
itself (user scalars, and the run.json keys added after close).
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from recorders.torch import Recorder

#: Whether this recorder records the loop columns itself (it takes the scheduler).
NATIVE = "scheduler" in inspect.signature(Recorder.__init__).parameters


@dataclass
class Loop:
    model: nn.Module
    opt: torch.optim.Optimizer
    x: torch.Tensor
    y: torch.Tensor
    xv: torch.Tensor
    yv: torch.Tensor
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    config: dict[str, Any]
    epochs: int
    batch: int = 32
    shuffle: bool = True
    sched: Any = None
    sched_per_batch: bool = False
    clip: float | None = None
    accum: int = 1
    scale_accum: bool = True
    eval_mode: bool = True
    augment: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None
    classify: bool = True
    evals_per_epoch: int = 1
    seed: int = 0
    on_epoch: Callable[[int], None] | None = None  # called before each epoch (a two-phase unfreeze)
    measured: dict[str, Any] = field(default_factory=dict)



def classifier_loop(data: tuple[torch.Tensor, torch.Tensor], k: int, model: nn.Module, opt: torch.optim.Optimizer,
                    name: str, *, n_val: int = 200, config: dict[str, Any] | None = None, **options: Any) -> Loop:
    """A cross-entropy :class:`Loop` over ``data`` (inputs, labels), its first ``n_val`` rows held out for
    validation; the config states the ``k`` classes, ``config``'s keys and the model's ``name``."""
    x, y = data
    return Loop(model, opt, x[n_val:], y[n_val:], x[:n_val], y[:n_val], torch.nn.functional.cross_entropy,
                {"num_classes": k, **(config or {}), "model": name}, **options)

def _norm(tensors) -> float:
    return math.sqrt(sum(float(t.detach().double().pow(2).sum()) for t in tensors))


def _val(loop: Loop, train_mode: bool) -> float:
    m = loop.model
    was = m.training
    m.train(train_mode)
    with torch.no_grad():
        v = float(loop.loss_fn(m(loop.xv), loop.yv))
    m.train(was)
    return v


def _backward(loop: Loop, order: torch.Tensor, b: int, g: torch.Generator, meas: dict[str, list]):
    """The micro-batches of optimizer step ``b``: (their losses, correct predictions, own gradient norms)."""
    params = list(loop.model.parameters())
    loop.opt.zero_grad()
    micro_norms, correct, losses = [], 0, []
    for k in range(loop.accum):
        idx = order[(b * loop.accum + k) * loop.batch:(b * loop.accum + k + 1) * loop.batch]
        xb, yb = loop.x[idx], loop.y[idx]
        if loop.augment is not None:
            xb = loop.augment(xb, g)
        out = loop.model(xb)
        loss = loop.loss_fn(out, yb)
        losses.append(float(loss.detach()))
        if loop.classify:
            correct += int((out.argmax(-1) == yb).sum())
            meas["purity"].append(float(torch.bincount(yb).max()) / len(yb))
        before = [p.grad.clone() if p.grad is not None else None for p in params]
        (loss / loop.accum if loop.scale_accum else loss).backward()
        if loop.accum > 1:  # this micro-batch's own gradient, of its mean loss (unscaled)
            micro_norms.append(_norm(p.grad - (b0 if b0 is not None else 0)
                                     for p, b0 in zip(params, before, strict=True)
                                     if p.grad is not None) * (loop.accum if loop.scale_accum else 1))
    return losses, correct, micro_norms


def _update(loop: Loop, params: dict[str, torch.Tensor], meas: dict[str, list], micro_norms: list[float]):
    """Clip (when asked) and step: (pre-clip norm, applied norm, update norm), measured."""
    pre = _norm(p.grad for p in params.values() if p.grad is not None)
    if loop.accum > 1 and micro_norms:
        meas["accum_over_max_micro"].append(pre / max(micro_norms))
    if loop.clip is not None:
        torch.nn.utils.clip_grad_norm_(list(params.values()), loop.clip)
    applied = _norm(p.grad for p in params.values() if p.grad is not None)
    meas["kept"].append(applied / pre if pre > 0 else float("nan"))
    wd = loop.opt.param_groups[0].get("weight_decay", 0.0)
    meas["decay_share"].append(wd * _norm(p for p in params.values() if p.grad is not None) > applied)
    old = [p.detach().clone() for p in params.values()]
    meas["lr"].append(loop.opt.param_groups[0]["lr"])
    loop.opt.step()
    return pre, applied, _norm(p.detach() - o for p, o in zip(params.values(), old, strict=True))


def train(path: Path, loop: Loop) -> dict[str, Any]:
    """Train ``loop`` into the run directory ``path``; returns the measurements."""
    torch.manual_seed(loop.seed)
    g = torch.Generator().manual_seed(loop.seed)
    model, opt = loop.model, loop.opt
    params = dict(model.named_parameters())
    in_opt = {id(p) for grp in opt.param_groups for p in grp["params"]}
    got_grad = {n: False for n, p in params.items() if p.requires_grad}
    initial = {n: p.detach().clone() for n, p in params.items()}
    n = len(loop.x)
    micro = loop.batch
    spe = n // (micro * loop.accum)
    meas: dict[str, list] = {k: [] for k in ("kept", "accum_over_max_micro", "val_train_mode", "val_eval_mode",
                                             "lr", "purity", "decay_share", "orders", "losses", "accuracy")}
    step = sched_steps = 0
    native = {"scheduler": loop.sched} if NATIVE else {}
    with Recorder(path, model, opt, config=loop.config, seed=loop.seed, layers_every=2, flush_every=1000,
                  handle_signals=False, announce=False, **native) as rec:
        for epoch in range(loop.epochs):
            if loop.on_epoch is not None:
                loop.on_epoch(epoch)
            order = torch.randperm(n, generator=g) if loop.shuffle else torch.arange(n)
            meas["orders"].append(order[: micro * loop.accum * spe].tolist())
            model.train()
            for b in range(spe):
                losses, correct, micro_norms = _backward(loop, order, b, g, meas)
                for name, p in params.items():
                    if p.grad is not None and name in got_grad:
                        got_grad[name] = True
                pre, applied, upd = _update(loop, params, meas, micro_norms)
                if loop.sched is not None and loop.sched_per_batch:
                    loop.sched.step()
                    sched_steps += 1
                extra = {"accuracy": correct / (micro * loop.accum)} if loop.classify else {}
                meas["losses"].append(sum(losses) / len(losses))
                meas["accuracy"].append(extra.get("accuracy", float("nan")))
                if not NATIVE:
                    extra.update(optimizer_steps=step + 1, scheduler_steps=sched_steps, grad_norm_applied=applied,
                                 update_norm=upd)
                rec.step(sum(losses) / len(losses), grad_norm=pre, epoch=epoch, **extra)
                step += 1
                if (b + 1) % max(1, spe // loop.evals_per_epoch) == 0:
                    tm, em = _val(loop, True), _val(loop, False)
                    meas["val_train_mode"].append(tm)
                    meas["val_eval_mode"].append(em)
                    model.train(not loop.eval_mode)  # the flag the recorder's model_training reads
                    flag = {} if NATIVE else {"model_training": int(model.training)}
                    rec.validation(tm if not loop.eval_mode else em, **flag)
                    model.train()
            if loop.sched is not None and not loop.sched_per_batch:
                loop.sched.step()
                sched_steps += 1
    final = {n: p.detach().clone() for n, p in params.items()}
    meas.update(steps=step, steps_per_epoch=spe, scheduler_steps=sched_steps, optimizer_steps=step,
                no_grad=[nm for nm, ok in got_grad.items() if not ok],
                outside=[nm for nm, p in params.items() if p.requires_grad and id(p) not in in_opt],
                final=final, initial=initial)
    _add_run_keys(path, meas)
    return meas


def _add_run_keys(path: Path, meas: dict[str, Any]) -> None:
    """The recorder's run.json lists checked against this loop's measurement (written by the loop when
    the recorder predates them); ``meas["recorder_agrees"]`` says whether they matched."""
    run_json = Path(path) / "run.json"
    meta = json.loads(run_json.read_text())
    pairs = (("params_without_grad", "no_grad"), ("params_outside_optimizer", "outside"))
    if NATIVE:
        meas["recorder_agrees"] = all(sorted(meta.get(key) or []) == sorted(meas[m]) for key, m in pairs)
        return
    for key, m in pairs:
        meta[key] = meas[m]
    run_json.write_text(json.dumps(meta, indent=1))
