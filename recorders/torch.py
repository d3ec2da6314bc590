"""Recorder: crash-safe run logs from a PyTorch training loop (format v1).

Usage::

    with Recorder("runs/exp1", model, optimizer, config=cfg, seed=0) as rec:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            rec.step(loss, accuracy=acc)

Moments and what the recorder assumes at each (docs/recorder.md has more):

- *first forward pass*: module call order gives run.json ``layers`` its depth order.
- *end of each backward pass* (after accumulation and DDP all-reduce, before
  clipping or unscaling): every gradient column, and on layer steps a
  sample of the weights before the optimizer step.
- *optimizer step pre-hook*: the learning rate this step uses.
- ``rec.step``: weight and update norms, then one host transfer for the
  whole step, the rows and the events.

Because the gradient columns are taken at the end of backward they are
"before clipping" whatever clipping the loop does; under a ``GradScaler``
they are divided by the loss scale the backward used.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from recorders import _meta
from recorders._online import SpikeDetector
from recorders._torch_hooks import ActivationWatch, BackwardEnd, FirstForward, depth_order
from recorders._torch_step import StepMath
from recorders.writer import RunWriter

__all__ = ["Recorder"]


class Recorder:
    """Records a PyTorch training run into a run directory; see the module docstring."""

    def __init__(self, path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 *, name: str | None = None, config: Mapping[str, Any] | None = None,
                 seed: int | None = None, flush_every: int = 100, flush_seconds: float = 30.0,
                 layers_every: int = 1, start_step: int | None = None, watch_activations: bool = False,
                 grad_norm_every: int = 1,
                 layer_ranks: tuple[int, ...] = (0,), scalars_all_ranks: bool = True,
                 sample_size: int = 4096, exact_zero_frac: bool = False, grad_abs_max: bool = True,
                 spike_threshold: float = 6.0, spike_window: int = 100,
                 handle_signals: bool = True, compact_on_close: bool = True) -> None:
        _check_every("layers_every", layers_every)
        _check_every("grad_norm_every", grad_norm_every)
        self.model, self.optimizer, self.layers_every = model, optimizer, layers_every
        self.grad_norm_every = grad_norm_every
        rank, world = _dist_rank()
        self.rank = rank
        self._write_scalars = scalars_all_ranks or rank == 0
        self._record_layers = rank in layer_ranks
        self._named = [(n, p) for n, p in model.named_parameters() if p.requires_grad and p.numel() > 0]
        self._params = [p for _, p in self._named]
        self._names = tuple(n for n, _ in self._named)
        self._depth = np.arange(len(self._params))
        self._writer = RunWriter(path, name=name, config=_config(config, optimizer, layers_every),
                                 seed=seed, rank=rank, world_size=world, flush_every=flush_every,
                                 flush_seconds=flush_seconds, environment=_environment(self._params, rank, world),
                                 start_step=start_step, compact_on_close=compact_on_close)
        last = self._writer.last_step
        self._step = start_step if start_step is not None else (0 if last is None else last + 1)
        self._math = StepMath(self._params, sample_size=sample_size, exact_zero_frac=exact_zero_frac,
                              abs_max=grad_abs_max)
        self._spikes = SpikeDetector(window=spike_window, threshold=spike_threshold)
        self._closed = False
        self._warned_step = False
        self._lr: Any = None
        self._set_layers({})
        self._attach(watch_activations, handle_signals)

    def _attach(self, watch_activations: bool, handle_signals: bool) -> None:
        self._first = FirstForward(self.model, self._after_first_forward)
        self._backward = BackwardEnd(self._params, self._at_backward_end)
        self._backward.active = self._reads_grads(self._step)
        opt = self.optimizer
        self._lr_hook = opt.register_step_pre_hook(self._before_optimizer_step) if opt is not None else None
        self._watch = ActivationWatch(self.model) if watch_activations else None
        self._prev_sigterm: Any = None
        self._prev_excepthook = None
        self._pid = os.getpid()
        if handle_signals:
            self._install_handlers()

    # -- moments -----------------------------------------------------------
    def _after_first_forward(self) -> None:
        self._guard("ordering layers", lambda: self._set_layers(self._first.order))

    def _set_layers(self, order: dict[int, int]) -> None:
        layers = depth_order(self.model, self._named, order)
        position = {layer["name"]: layer["index"] for layer in layers}
        self._depth = np.array([position[n] for n in self._names], dtype=np.int64)
        self._writer.set_layers(layers)

    def _is_layer_step(self, step: int) -> bool:
        return self._record_layers and step % self.layers_every == 0

    def _reads_grads(self, step: int) -> bool:
        return self._is_layer_step(step) or step % self.grad_norm_every == 0

    def _at_backward_end(self) -> None:
        """After accumulation and all-reduce, before clipping: see StepMath.capture."""
        layer_step = self._is_layer_step(self._step)
        self._guard("reading gradients", lambda: self._math.capture(layer_step))

    def _before_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self._lr = optimizer.param_groups[0].get("lr")

    # -- public API --------------------------------------------------------
    def step(self, loss: Any, step: int | None = None, scaler: Any = None, **scalars: Any) -> None:
        """Record one optimizer step: call it after ``optimizer.step()``.

        ``loss`` is this step's training loss (tensor or number); ``step``
        overrides the step counter; ``scaler`` is the ``GradScaler`` used;
        any other keyword is a user scalar (``accuracy=0.9``, ``epoch=3``).
        """
        if self._closed:
            if not self._warned_step:
                self._warned_step = True
                warnings.warn("runlens: Recorder.step called after close; ignored", RuntimeWarning, 2)
            return
        s = self._step if step is None else int(step)
        self._backward.pending = False  # a backward that raised never ran its end callback
        try:
            self._record(s, loss, scaler, scalars)
        except Exception as e:  # noqa: BLE001 - recording must never break training
            self._writer.report_error("recording a step", e)
        self._step = s + 1
        self._backward.active = self._reads_grads(self._step)

    def validation(self, val_loss: Any, **scalars: Any) -> None:
        """Record a validation pass run after the last recorded step."""
        step = max(self._step - 1, 0)
        values = {k: _host(v) for k, v in scalars.items()}
        self._guard("recording validation", lambda: self._writer.add_eval(step, _host(val_loss), **values))

    def close(self) -> None:
        """Flush, compact and finish the run (status ``finished``). Idempotent."""
        self._finish("finished", None)

    def record_exception(self, exc: BaseException) -> None:
        """End the run as ``crashed`` with ``exc`` (for frameworks that catch it before ``with`` can)."""
        self._crashed(type(exc), exc, exc.__traceback__)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            self.close()
        else:
            self._crashed(exc_type, exc, tb)
        return False

    @property
    def warnings(self) -> list[str]:
        return self._writer.warnings

    @property
    def path(self) -> Path:
        return self._writer.path

    @property
    def writer(self) -> RunWriter:
        return self._writer

    # -- one step ----------------------------------------------------------
    def _record(self, s: int, loss: Any, scaler: Any, scalars: dict[str, Any]) -> None:
        res = self._math.finish(loss, layer_step=self._is_layer_step(s), grads=self._reads_grads(s),
                                scaler=scaler, extra=scalars)
        columns = dict(res.user)
        lr = self._lr
        if lr is None and self.optimizer is not None:  # stepped without the pre-hook firing
            lr = self.optimizer.param_groups[0].get("lr")
        if lr is not None:
            columns["lr"] = _host(lr)
        self._lr = None
        columns["grad_norm"] = res.grad_norm
        if res.loss_scale is not None:
            columns["loss_scale"], columns["step_skipped"] = res.loss_scale, res.step_skipped
        if self._write_scalars:
            self._writer.add_scalars(s, res.loss, **columns)
        if res.layers is not None:
            self._writer.add_layers(s, self._names, **res.layers)
        self._events(s, res)

    def _events(self, s: int, res: Any) -> None:
        culprit = self._watch.first_nonfinite() if self._watch and res.anomalous else None
        if self._watch and not res.anomalous:
            self._watch.clear()
        where = f"; first non-finite activation: output of {culprit!r}" if culprit else ""
        if not np.isfinite(res.loss):
            self._writer.add_event(s, "nonfinite_loss", f"loss is {res.loss}{where}", value=res.loss,
                                   layer=culprit)
        bad = res.nonfinite_params
        if len(bad) and not res.step_skipped:
            closest = bad[np.argmax(self._depth[bad])]
            name = self._names[closest]
            self._writer.add_event(s, "nonfinite_grad",
                                   f"{len(bad)} parameter(s) had non-finite gradients; closest to the "
                                   f"loss: {name}{where}", layer=name, value=float(len(bad)))
        if res.grad_norm is not None:
            z = self._spikes.update(res.grad_norm)
            if z is not None:
                self._writer.add_event(s, "grad_norm_spike",
                                       f"grad norm {res.grad_norm:.4g} is {z:.1f} robust SDs above "
                                       f"the last {len(self._spikes)} steps", value=res.grad_norm)

    # -- endings -----------------------------------------------------------
    def _crashed(self, exc_type: type, exc: BaseException, tb: Any) -> None:
        if self._closed:
            return
        started = self._first.started or self._step > 0 or self._writer.last_step is not None
        error = _meta.error_object(exc, self._step if started else None)
        if tb is not None and exc.__traceback__ is None:  # handed in apart from the exception
            error["traceback"] = "".join(traceback.format_exception(exc_type, exc, tb))
        self._guard("recording the exception", lambda: self._writer.add_event(
            self._step, "exception", f"{error['type']}: {str(exc).splitlines()[0] if str(exc) else ''}"))
        self._finish("crashed", error)

    def _finish(self, status: str, error: dict[str, Any] | None) -> None:
        if self._closed:
            return
        self._closed = True
        for part in (self._first, self._backward, self._watch, self._lr_hook):
            if part is not None:
                self._guard("removing hooks", part.remove)
        self._restore_handlers()
        self._writer.close(status, error)

    def _install_handlers(self) -> None:
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        if threading.current_thread() is threading.main_thread():
            self._prev_sigterm = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, self._on_sigterm)

    def _restore_handlers(self) -> None:
        if self._prev_excepthook is not None and sys.excepthook == self._excepthook:
            sys.excepthook = self._prev_excepthook
        if (self._prev_sigterm is not None and threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) == self._on_sigterm):
            signal.signal(signal.SIGTERM, self._prev_sigterm)

    def _excepthook(self, exc_type: type, exc: BaseException, tb: Any) -> None:
        if os.getpid() == self._pid:  # not in a forked DataLoader worker
            self._guard("recording the exception", lambda: self._crashed(exc_type, exc, tb))
        (self._prev_excepthook or sys.__excepthook__)(exc_type, exc, tb)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        """Preemption: write what is buffered; the run stays ``running`` and reads as killed."""
        def flush() -> None:
            self._writer.add_event(max(self._step - 1, 0), "user",
                                   f"SIGTERM received at step {self._step}; buffered rows flushed")
            self._writer.flush()
        if os.getpid() == self._pid:  # a forked DataLoader worker inherits this handler
            self._guard("flushing on SIGTERM", flush)
        prev = self._prev_sigterm
        if callable(prev):
            prev(signum, frame)
        elif prev != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    def _guard(self, what: str, fn: Any) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - recording must never break training
            self._writer.report_error(what, e)


def _check_every(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"The '{name}' parameter of Recorder must be an int >= 1. Got {value!r} instead.")


def _host(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().item()
    return value


def _dist_rank() -> tuple[int, int]:
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _config(config: Mapping[str, Any] | None, optimizer: Any, layers_every: int) -> dict[str, Any]:
    out = dict(config or {})
    out.setdefault("layers_every", layers_every)
    if optimizer is not None:
        out.setdefault("optimizer", type(optimizer).__name__)
        group = optimizer.param_groups[0]
        hparams = {k: v for k, v in group.items()
                   if k != "params" and isinstance(v, (int, float, str, bool, tuple, type(None)))}
        out.setdefault("optimizer_params", hparams)
    return out


def _environment(params: list[nn.Parameter], rank: int, world: int) -> dict[str, Any]:
    device = params[0].device if params else torch.device("cpu")
    env: dict[str, Any] = {"torch": torch.__version__, "device": str(device), "rank": rank,
                           "world_size": world}
    if torch.cuda.is_available():
        env["cuda"] = torch.version.cuda
    return env
