"""Run one :class:`~benchmarks.third.loops.Scenario`: the loop, its recorder and its probe."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from benchmarks.third.loops import Probe, Scenario, _data, _optimizer, _order, _schedule, config_of, recorder
from benchmarks.third.models import Task


@dataclass
class State:
    sc: Scenario
    task: Task
    model: nn.Module
    opt: torch.optim.Optimizer
    sched: object
    spe: int  # optimizer steps per epoch
    data: tuple
    probe: Probe = field(default_factory=Probe)
    rec: object = None
    frozen: list = field(default_factory=list)


def build(sc: Scenario, task: Task, data: tuple, probe: Probe | None = None) -> State:
    model = task.build(sc.dropout, sc.width)
    if sc.bug == "detached_stem":  # ``h = self.stem(x).detach()`` in the model's forward
        model.stem.register_forward_hook(lambda m, i, o: o.detach())
    frozen = []
    if sc.unfreeze_at is not None:  # fine-tuning: only the head trains at first
        frozen = [p for n, p in model.named_parameters() if not n.startswith("head")]
        for p in frozen:
            p.requires_grad_(False)
    if sc.bug == "optimizer_subset":  # the optimizer was built before the head was attached
        params = [p for n, p in model.named_parameters() if not n.startswith("head")]
    else:
        params = [p for p in model.parameters() if p.requires_grad]
    opt = _optimizer(sc, params)
    spe = max(1, len(data[1]) // (sc.batch * sc.accum))
    return State(sc, task, model, opt, _schedule(sc, opt, spe), spe, data, probe or Probe(), frozen=frozen)


def _grad_norms(model: nn.Module) -> tuple[float, float, float, float]:
    stem, rest, total, has = 0.0, [], 0.0, 0.0
    for n, p in model.named_parameters():
        if p.grad is None:
            continue
        g = float(torch.linalg.vector_norm(p.grad.double()))
        total += g * g
        if n.startswith("stem"):
            stem, has = max(stem, g), 1.0
        elif p.dim() > 1:
            rest.append(g)
    return stem, float(np.median(rest)) if rest else 0.0, total ** 0.5, has


def _micro_batches(st: State, order: torch.Tensor, b: int) -> float:
    sc, task, (x, y, _, _) = st.sc, st.task, st.data
    total = 0.0
    for a in range(sc.accum):
        idx = order[(b * sc.accum + a) * sc.batch:(b * sc.accum + a + 1) * sc.batch]
        out = st.model(x[idx])
        if sc.bug == "softmax_ce":  # the model ends in nn.Softmax and the loss is nn.CrossEntropyLoss
            out = torch.softmax(out, -1)
        loss = task.loss(out, y[idx], reduction="sum" if sc.bug == "reduction_sum" else "mean",
                         label_smoothing=sc.label_smoothing)
        if sc.accum > 1 and sc.bug != "accum_unscaled":
            loss = loss / sc.accum
        loss.backward()
        total += float(loss.detach())
    return total if sc.accum > 1 and sc.bug != "accum_unscaled" else total / sc.accum


def optimizer_step(st: State, step: int, order: torch.Tensor, b: int) -> None:
    sc, model = st.sc, st.model
    if st.frozen and step == int(sc.unfreeze_at * sc.steps):
        for p in st.frozen:
            p.requires_grad_(True)
        st.opt.add_param_group({"params": st.frozen, "lr": sc.lr / 3})
        st.frozen = []
    if sc.bug != "no_zero_grad":
        st.opt.zero_grad()
    loss = _micro_batches(st, order, b)
    stem_g, rest_g, pre, has = _grad_norms(model)
    if sc.bug == "tiny_clip":
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-4)
    applied = _grad_norms(model)[2]
    before = [p.detach().clone() for p in model.parameters()]
    lr = st.opt.param_groups[0]["lr"]
    st.opt.step()
    with torch.no_grad():
        d2 = sum(float(torch.sum((p.double() - q.double()) ** 2)) for p, q in zip(model.parameters(), before, strict=True))
        w2 = sum(float(torch.sum(q.double() ** 2)) for q in before)
        head_moved = max(float((p - q).abs().max()) for (n, p), q in zip(model.named_parameters(), before, strict=True)
                         if n.startswith("head"))
        stem_upd = sum(float(torch.linalg.vector_norm((p - q).double())) for (n, p), q in
                       zip(model.named_parameters(), before, strict=True) if n.startswith("stem"))
    if st.sched is not None and sc.schedule in ("warm_restarts", "warmup_cosine"):
        st.sched.step()
    if st.sched is not None and sc.bug == "sched_per_batch":  # meant per epoch, called per batch
        st.sched.step()
    if st.rec is not None and step % sc.log_every == 0:
        st.rec.step(loss, step=step)
    st.probe.add(st.probe.rows, step=step, loss=loss, lr=lr, grad_norm=pre, grad_norm_applied=applied,
                 stem_grad=stem_g, rest_grad=rest_g, stem_has_grad=has, upd_ratio=(d2 / max(w2, 1e-300)) ** 0.5,
                 head_moved=head_moved, stem_upd=stem_upd, weight_norm=w2 ** 0.5,
                 epoch=step // st.spe)


def validate(st: State, step: int) -> None:
    sc, task, model, (_, _, vx, vy) = st.sc, st.task, st.model, st.data
    if sc.bug != "eval_missing":
        model.eval()
    with torch.no_grad():
        out = model(vx)
        if sc.bug == "softmax_ce":
            out = torch.softmax(out, -1)
        vl, acc = float(task.loss(out, vy)), task.accuracy(out, vy)
        model.eval()  # the probe's own eval-mode measurement, never recorded
        out_e = model(vx)
        if sc.bug == "softmax_ce":
            out_e = torch.softmax(out_e, -1)
        vl_eval = float(task.loss(out_e, vy))
    model.train()
    if st.rec is not None:
        st.rec.validation(vl, val_accuracy=acc)
    if st.sched is not None and sc.schedule == "on_plateau":
        st.sched.step(vl)
    st.probe.add(st.probe.val, step=step, loss=vl, loss_eval=vl_eval, acc=acc)


def epochs(st: State, start: int, end: int) -> None:
    sc = st.sc
    every = max(1, sc.steps // sc.evals)
    step = start
    while step < end:
        epoch = step // st.spe
        order = _order(sc, st.data[1], epoch)
        for b in range(step % st.spe, st.spe):
            if step >= end:
                break
            optimizer_step(st, step, order, b)
            if (step + 1) % every == 0 or step == end - 1:
                validate(st, step)
            if not np.isfinite(st.probe.rows["loss"][-1]) and step > start + 3:
                return  # a NaN loss stops a user's loop too, a few steps later
            step += 1
        if st.sched is not None and sc.schedule == "step_epoch" and sc.bug != "sched_per_batch":
            st.sched.step()


def train(sc: Scenario, out: Path | None = None) -> dict[str, np.ndarray]:
    task = Task(sc.task, sc.seed)
    data = _data(sc, task)
    st = build(sc, task, data)
    cfg = config_of(sc, task, st.spe)
    half = sc.steps // 2 if sc.bug == "restart" else sc.steps
    st.rec = recorder(out, st.model, st.opt, cfg, sc)
    try:
        epochs(st, 0, half)
    finally:
        if st.rec is not None:
            st.rec.close()
    if sc.bug == "restart":  # the job was relaunched into the same folder; the checkpoint was not loaded
        st2 = build(sc, task, data, probe=st.probe)
        st2.rec = recorder(out, st2.model, st2.opt, cfg, sc, resume=True)
        try:
            epochs(st2, half, sc.steps)
        finally:
            if st2.rec is not None:
                st2.rec.close()
    arrays = st.probe.arrays()
    arrays["steps_per_epoch"] = np.asarray([st.spe])
    arrays["k"] = np.asarray([task.k or 0])
    # Chance for accuracy is the majority class's share of the validation labels (classes are unbalanced).
    vy = task.vy.reshape(-1)
    arrays["majority"] = np.asarray([float(torch.bincount(vy).max()) / len(vy) if task.k else 0.0])
    arrays["restart_at"] = np.asarray([half if sc.bug == "restart" else -1])
    return arrays
