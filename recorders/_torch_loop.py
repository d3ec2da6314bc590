"""What only the recorder can see of the training loop (docs/recorder.md, "What the loop does").

The recorder holds the model, the optimizer and (when given) the scheduler,
so it can tell things no log line says. All of it is cheap: counted in
hooks, computed once at start, once per validation call, or on the steps
whose gradients the recorder reads anyway.

- ``optimizer_steps`` / ``scheduler_steps`` (scalars): ``optimizer.step()``
  calls (a step post-hook; a GradScaler's skipped step makes none) and
  scheduler ``.step()`` calls since the recorder started;
- ``params_outside_optimizer`` (run.json): trainable parameters in no param
  group, found at start;
- ``params_without_grad`` (run.json): trainable parameters that had no
  gradient on any step whose gradients were read, kept current in memory
  and written with run.json (every flush and at close);
- ``model_training`` (evals): 1 when the validation's own forwards ran in
  training mode (:class:`ModeWatch`);
- ``grad_not_cleared`` (scalars): 1 when the step's first backward added
  its gradient onto the previous optimizer step's (``zero_grad`` missing),
  0 when ``.grad`` had been cleared (:class:`ClearWatch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from torch import nn


def scheduler_count(scheduler: Any) -> int | None:
    """Calls of ``scheduler.step()`` so far, read from the scheduler itself.

    ``_step_count`` counts every call of a torch ``LRScheduler`` (the one in its constructor
    included); ``ReduceLROnPlateau`` lacks it but advances ``last_epoch`` once per call.
    """
    for attr in ("_step_count", "last_epoch"):
        value = getattr(scheduler, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def held_ids(optimizer: Any) -> set[int]:
    """The ids of the parameters in ``optimizer``'s param groups (none without an optimizer)."""
    return {id(p) for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())}


class ClearWatch:
    """Whether ``.grad`` was cleared between two optimizer steps, read on one parameter.

    ``zero_grad()`` either sets ``.grad`` to None (a new tensor comes with the
    next backward) or zeroes it in place (its version counter moves on); a
    backward adds onto an existing gradient in place, one version. So after
    ``optimizer.step()`` the recorder keeps a reference to the ``.grad`` of
    the smallest trainable parameter the optimizer holds, and its version: when the next
    accumulation into that parameter finds the same tensor exactly one
    version on, nothing cleared it. One hook on that parameter (the step
    side rides on :class:`LoopWatch`'s step post-hook), two comparisons per
    optimizer step; the
    reference is dropped at that check. (``p.grad.data.zero_()`` bypasses
    the version counter and reads as not cleared; the engine confirms with
    the norm's growth.)
    """

    def __init__(self, named: Sequence[tuple[str, nn.Parameter]], optimizer: Any) -> None:
        # Only a parameter the optimizer holds: zero_grad() clears those alone, and a parameter left
        # out of it keeps summing its gradient whatever the loop does (parameters_not_in_optimizer).
        held = held_ids(optimizer)
        trainable = [p for _, p in named if p.requires_grad and id(p) in held]
        self.result: int | None = None
        self._ref: Any = None
        self._version = -1
        self._armed = False
        self._handles: list[Any] = []
        if optimizer is None or not trainable:
            return
        self._param = min(trainable, key=lambda p: p.numel())
        self._handles = [self._param.register_post_accumulate_grad_hook(self._accumulated)]

    def stepped(self) -> None:
        """After ``optimizer.step()`` (called from :class:`LoopWatch`'s step post-hook, one hook for both)."""
        if not self._handles:
            return
        grad = self._param.grad
        self._ref, self._version, self._armed = grad, (grad._version if grad is not None else -1), True

    def _accumulated(self, param: Any) -> None:
        if not self._armed:
            return
        grad = param.grad
        self.result = int(grad is not None and grad is self._ref and grad._version == self._version + 1)
        self._ref, self._armed = None, False

    def take(self) -> dict[str, int]:
        """The last check's column, once (an empty dict when no step was checked since)."""
        if self.result is None:
            return {}
        out, self.result = {"grad_not_cleared": self.result}, None
        return out

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles, self._ref = [], None


class LoopWatch:
    """Counters and parameter checks of one recorder; the recorder calls it at its moments."""

    def __init__(self, named: Sequence[tuple[str, nn.Parameter]], optimizer: Any, scheduler: Any) -> None:
        self.names = [n for n, _ in named]
        self.trainable = np.array([p.requires_grad for _, p in named], dtype=bool)
        self.ever = np.zeros(len(named), dtype=bool)
        self.optimizer_steps = 0
        self.cleared = ClearWatch(named, optimizer)
        self._hook = optimizer.register_step_post_hook(self._stepped) if optimizer is not None else None
        self.scheduler = scheduler
        start = scheduler_count(scheduler) if scheduler is not None else None
        self._scheduler_start = start
        self.without_grad: list[str] | None = None  # None until a step's gradients were read

    def _stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.optimizer_steps += 1
        self.cleared.stepped()

    def outside(self, named: Sequence[tuple[str, nn.Parameter]], optimizer: Any) -> list[str] | None:
        """Trainable parameters in none of ``optimizer``'s param groups (None without an optimizer)."""
        if optimizer is None:
            return None
        held = held_ids(optimizer)
        return [n for n, p in named if p.requires_grad and id(p) not in held]

    def columns(self) -> dict[str, int]:
        """This step's counters, host ints (they ride with the step's other scalars)."""
        out = {"optimizer_steps": self.optimizer_steps, **self.cleared.take()} if self._hook is not None else {}
        if self._scheduler_start is not None:
            now = scheduler_count(self.scheduler)
            if now is not None:
                out["scheduler_steps"] = now - self._scheduler_start
        return out

    def saw(self, present: Sequence[int]) -> bool:
        """Note the parameters that had a gradient at a read; True when the missing list changed."""
        before = self.without_grad
        if len(present) == len(self.ever):
            if before == []:
                return False
            self.ever[:] = True
        elif present:
            self.ever[np.asarray(present, dtype=np.int64)] = True
        missing = np.flatnonzero(self.trainable & ~self.ever)
        if before is not None and len(missing) == len(before):
            return False
        self.without_grad = [self.names[i] for i in missing]
        return True

    def remove(self) -> None:
        self.cleared.remove()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None


class ModeWatch:
    """The training flag of the model's forwards since the last training step.

    Loops commonly call ``model.train()`` right after the validation loop and
    log the loss after it (``model.eval(); v = evaluate(); model.train();
    rec.validation(v)``): the flag at the ``rec.validation`` call then says
    training although the evaluation ran in eval mode. The forwards since the
    last optimizer step (or ``rec.step``) are the evaluation's own, so their
    mode is recorded; with none seen (the evaluation called a submodule, or
    nothing), the mode at the call. One set insert per forward of the root.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.modes: set[bool] = set()
        self._hook: Any = model.register_forward_pre_hook(self._seen)

    def _seen(self, module: nn.Module, args: Any) -> None:
        self.modes.add(module.training)

    def clear(self) -> None:
        self.modes.clear()

    def training(self) -> int:
        if self.modes:
            return int(True in self.modes)
        return model_training(self.model)

    def remove(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None


def model_training(model: nn.Module) -> int:
    """1 when any module of ``model`` is in training mode (``rec.validation``'s ``model_training``)."""
    return int(any(m.training for m in model.modules()))


def total_norm(values: np.ndarray | None) -> float | None:
    """The L2 norm of per-parameter norms (float64), None when there are none."""
    if values is None or not len(values):
        return None
    v = np.ma.getdata(values).astype(np.float64)
    return float(np.sqrt(np.dot(v, v)))
