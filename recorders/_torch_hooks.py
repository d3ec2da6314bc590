"""Module and autograd hooks the recorder attaches, each named for its moment.

- :class:`FirstForward`: forward pre-hooks that note the order in which
  modules are first called, removed once the first forward pass is done.
- :class:`BackwardEnd`: runs a callback once at the end of each backward
  pass, after gradient accumulation into ``.grad`` and after DDP's
  all-reduce, before the user can clip or unscale.
- :class:`ActivationWatch`: opt-in forward hooks noting which module
  outputs are non-finite, without a host sync per module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn
from torch.autograd import Variable


class FirstForward:
    """Call order of modules during the model's first forward pass."""

    def __init__(self, model: nn.Module, on_done: Callable[[], None]) -> None:
        self.order: dict[int, int] = {}
        self.started = False
        self._on_done = on_done
        self._handles = [m.register_forward_pre_hook(self._before_call) for m in model.modules()]
        self._handles.append(model.register_forward_hook(self._after_root))

    def _before_call(self, module: nn.Module, args: Any) -> None:
        self.started = True
        self.order.setdefault(id(module), len(self.order))

    def _after_root(self, module: nn.Module, args: Any, output: Any) -> None:
        self.remove()
        self._on_done()

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []


def depth_order(model: nn.Module, named: Sequence[tuple[str, nn.Parameter]],
                order: dict[int, int]) -> list[dict[str, Any]]:
    """run.json ``layers`` for ``named`` parameters, nearest the input first.

    A parameter takes the first-call position of the module that owns it;
    a module never called itself (``MultiheadAttention.out_proj`` is used
    through its weights) takes its nearest called ancestor's; ties and
    parameters with no called owner keep registration order.
    """
    modules = dict(model.named_modules())
    owner: dict[int, str] = {}
    for mname, mod in modules.items():
        for _, p in mod.named_parameters(recurse=False):
            owner.setdefault(id(p), mname)
    unknown = len(order) + 1

    def position(mname: str) -> int:
        while True:
            pos = order.get(id(modules[mname]))
            if pos is not None or mname == "":
                return unknown if pos is None else pos
            mname = mname.rpartition(".")[0]

    keyed = []
    for reg, (name, p) in enumerate(named):
        mname = owner.get(id(p), "")
        keyed.append((position(mname), reg, name, p, mname))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [{"name": name, "index": i, "module": mname, "kind": type(modules[mname]).__name__,
             "shape": list(p.shape), "numel": p.numel(), "trainable": bool(p.requires_grad)}
            for i, (_, _, name, p, mname) in enumerate(keyed)]


class BackwardEnd:
    """Runs ``callback`` once per backward pass that reaches the parameters.

    The first parameter whose gradient is accumulated queues an engine
    callback; that callback queues the real one, which therefore runs after
    any callback queued during the pass (DDP queues its all-reduce wait that
    way), so ``.grad`` holds the accumulated, reduced, not yet clipped or
    unscaled gradient.
    """

    def __init__(self, params: Sequence[nn.Parameter], callback: Callable[[], None]) -> None:
        self.pending = False
        self.active = True  # the recorder turns it off for steps it does not read gradients on
        self._callback = callback
        self._handles = [p.register_post_accumulate_grad_hook(self._accumulated) for p in params]

    def _accumulated(self, param: torch.Tensor) -> None:
        if self.active and not self.pending:
            self.pending = True
            Variable._execution_engine.queue_callback(self._after_queued)

    def _after_queued(self) -> None:
        Variable._execution_engine.queue_callback(self._end)

    def _end(self) -> None:
        self.pending = False
        self._callback()

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []


class ActivationWatch:
    """Which module's output first became non-finite in the forward passes of a step."""

    def __init__(self, model: nn.Module, max_calls: int = 100_000) -> None:
        self._max_calls = max_calls
        self.calls: list[str] = []
        self.flags: list[torch.Tensor] = []
        self._handles = [m.register_forward_hook(self._make_hook(name))
                         for name, m in model.named_modules()]

    def _make_hook(self, name: str) -> Callable[..., None]:
        def after_call(module: nn.Module, args: Any, output: Any) -> None:
            if not torch.is_grad_enabled() or len(self.calls) >= self._max_calls:
                return  # validation passes and runaway loops are not watched
            out = output[0] if isinstance(output, (tuple, list)) and output else output
            if isinstance(out, torch.Tensor) and out.is_floating_point():
                with torch.no_grad():
                    self.flags.append(~torch.isfinite(out.detach()).all())
                self.calls.append(name)
        return after_call

    def first_nonfinite(self) -> str | None:
        """Name of the first module (in completion order) with a non-finite output, then reset."""
        name = None
        if self.flags:
            bad = torch.stack(self.flags).nonzero()
            if len(bad):
                name = self.calls[int(bad[0, 0])]
        self.clear()
        return name

    def clear(self) -> None:
        self.calls = []
        self.flags = []

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        self.clear()
