"""Recorder: crash-safe run logs from a PyTorch training loop (format v1).

Usage::

    with Recorder("runs/exp1", model, optimizer, config=cfg, seed=0) as rec:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            rec.step(loss, accuracy=acc)

Moments (docs/recorder.md has the details): the first forward pass gives
run.json ``layers`` their depth order; the end of the step's last backward
pass (after accumulation and DDP all-reduce, before clipping or unscaling)
gives every gradient column, once per optimizer step; the optimizer step
pre-hook gives each param group's learning rate; ``rec.step`` gives weight
and update norms, then one host transfer and the rows, handed to the
writer's background thread.
"""

from __future__ import annotations

import atexit
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import torch
from torch import nn

from recorders import _meta, _run_dir
from recorders._online import SpikeDetector
from recorders._torch_env import check_every, config_of, dist_rank, environment, host
from recorders._torch_events import step_events
from recorders._torch_hooks import ActivationWatch, BackwardEnd, FirstForward, depth_order
from recorders._torch_loop import LoopWatch, ModeWatch, total_norm
from recorders._torch_outgrad import OutputGradWatch, settle
from recorders._torch_scale import ScaleTracker, enabled
from recorders._torch_sharded import norms_for
from recorders._torch_signals import Handlers
from recorders._torch_step import Capture, StepMath
from recorders.writer import RunWriter

__all__ = ["Recorder"]


class Recorder(Handlers):
    """Records a PyTorch training run into a run directory; see the module docstring."""

    def __init__(self, path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 *, name: str | None = None, config: Mapping[str, Any] | None = None,
                 seed: int | None = None, flush_every: int = 100, flush_seconds: float = 30.0,
                 layers_every: int = 1, start_step: int | None = None, watch_activations: bool = False,
                 grad_norm_every: int = 1, scaler: Any = None, accumulation_steps: int | None = None,
                 layer_ranks: tuple[int, ...] = (0,), scalars_all_ranks: bool = True,
                 sample_size: int = 4096, exact_zero_frac: bool = False, grad_abs_max: bool = True,
                 spike_threshold: float = 6.0, spike_window: int = 100, handle_signals: bool = True,
                 compact_on_close: bool = True, announce: bool = True, resume: bool = False,
                 scheduler: Any = None) -> None:
        check_every("layers_every", layers_every)
        check_every("grad_norm_every", grad_norm_every)
        if accumulation_steps is not None:
            check_every("accumulation_steps", accumulation_steps)
        self.model, self.optimizer, self.layers_every = model, optimizer, layers_every
        self.grad_norm_every = grad_norm_every
        rank, world = dist_rank()
        self.rank = rank
        self._write_scalars = scalars_all_ranks or rank == 0
        self._record_layers = rank in layer_ranks
        # Frozen parameters are recorded too (weight norms; run.json says "trainable": false).
        self._named = [(n, p) for n, p in model.named_parameters() if p.numel() > 0]
        self._params = [p for _, p in self._named]
        self._names = tuple(n for n, _ in self._named)
        self._depth = np.arange(len(self._params))
        path, moved = _run_dir.choose(path, resume, rank, world)
        self._writer = RunWriter(path, name=name, config=config_of(config, optimizer, layers_every),
                                 seed=seed, rank=rank, world_size=world, flush_every=flush_every,
                                 flush_seconds=flush_seconds, environment=environment(self._params, rank, world),
                                 start_step=start_step, compact_on_close=compact_on_close)
        self._writer.on_behind.append(self._writer_behind)
        self._loop = LoopWatch(self._named, optimizer, scheduler)  # hooks only once the writer exists
        if moved and announce:
            print(moved, file=sys.stderr)
        elif moved:
            warnings.warn(moved, UserWarning, 2)
        outside = self._loop.outside(self._named, optimizer)
        if outside is not None:
            self._writer.set_meta(params_outside_optimizer=outside)
        last = self._writer.last_step
        self._step = start_step if start_step is not None else (0 if last is None else last + 1)
        norms = norms_for(self._params)
        # Sharded: every rank takes part in the per-step collective; only layer_ranks write rows.
        self._sharded = getattr(norms, "sharded", False)
        self._write_every = layers_every
        self._math = StepMath(self._params, sample_size=sample_size, exact_zero_frac=exact_zero_frac,
                              abs_max=grad_abs_max, norms=norms)
        self._spikes = SpikeDetector(window=spike_window, threshold=spike_threshold)
        self._scaler, self._scale = scaler, ScaleTracker()
        self._scale.start(scaler)
        self._k_hint = self._expect_k = accumulation_steps
        self._closed = self._warned_step = self._user_norm = False
        self._announce = announce
        self._reset_step_state()
        self._deferred: list[tuple[int, tuple[Any, ...]]] = []
        atexit.register(self._resolve_at_exit)
        self._set_layers({})
        self._attach(watch_activations, handle_signals)

    def _reset_step_state(self) -> None:
        self._n_backward = 0
        self._cap: Capture | None = None
        self._cap_at = -1
        self._lrs: list[Any] | None = None
        self._lrs_backward: list[Any] | None = None
        self._applied: Any = None
        self._math.watch.clear()  # a step without an optimizer step must not hold its gradients

    def _attach(self, watch_activations: bool, handle_signals: bool) -> None:
        self._first = FirstForward(self.model, self._after_first_forward)
        self._modes = ModeWatch(self.model)
        self._outgrad = OutputGradWatch(self.model)
        self._outgrad.armed = self._is_layer_step(self._step)
        self._backward = BackwardEnd([p for p in self._params if p.requires_grad], self._at_backward_end)
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
        return (self._record_layers or self._sharded) and step % self.layers_every == 0

    def _reads_grads(self, step: int) -> bool:
        return self._is_layer_step(step) or (step % self.grad_norm_every == 0 and not self._user_norm)

    def _at_backward_end(self) -> None:
        """After accumulation and all-reduce, before clipping or unscaling.

        With K micro-batches per optimizer step only the K-th backward (K
        learned from the previous step, or ``accumulation_steps``) reads
        the gradients: one pass per optimizer step, not K.
        """
        self._n_backward += 1
        self._lrs_backward = self._read_lrs()
        if self._expect_k is None or self._n_backward >= self._expect_k:
            self._guard("reading gradients", self._capture, True)

    def _capture(self, at_backward: bool) -> None:
        self._cap = self._math.capture(self._is_layer_step(self._step), at_backward=at_backward)
        self._cap_at = self._n_backward
        if self._loop.saw(self._cap.present):  # rare: the first read, or a parameter's first gradient
            self._writer.set_meta(params_without_grad=self._loop.without_grad)

    def _stale(self) -> bool:
        return self._cap is None or self._cap_at != self._n_backward

    def _before_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        # The lr this step uses, before a scheduler stepped after optimizer.step() changes it.
        self._lrs = self._read_lrs()
        self._modes.clear()  # the forwards so far were training's; a validation after the step has its own
        if self._backward.active and self._stale():  # the last backward's moment was missed
            self._guard("reading gradients", self._capture, False)
        if self._backward.active:  # after any clipping and unscaling: the gradient the step applies
            self._guard("reading the applied gradient",
                        lambda: setattr(self, "_applied", self._math.applied(self._cap)))

    def _read_lrs(self) -> list[Any] | None:
        if self.optimizer is None:
            return None
        # A tensor lr is cloned on its device (schedulers fill it in place), never .item()-ed here.
        return [lr.detach().clone() if isinstance(lr, torch.Tensor) else lr
                for lr in (g.get("lr") for g in self.optimizer.param_groups)]

    def _writer_behind(self, times: int) -> None:
        """The disk cannot keep up: record layers half as often (documented policy)."""
        old = self._write_every
        self._write_every = min(old * 2, 1 << 20)
        if not self._sharded:  # sharded ranks must keep computing in step with each other
            self.layers_every = self._write_every
        with self._writer.meta_lock:
            self._writer.meta["config"]["layers_every"] = self._write_every
        self._writer.add_event(max(self._step - 1, 0), "user",
                               f"runlens recorder: the writer fell behind; layers_every raised from {old} "
                               f"to {self._write_every}")

    # -- public API --------------------------------------------------------
    def step(self, loss: Any, step: int | None = None, scaler: Any = None, grad_norm: Any = None,
             **scalars: Any) -> None:
        """Record one optimizer step: call it after ``optimizer.step()``.

        ``loss`` is this step's training loss (tensor or number); ``step``
        overrides the step counter; ``scaler`` is the ``GradScaler`` used;
        ``grad_norm`` the total gradient norm the loop already computed
        (``clip_grad_norm_``'s return value), which then spares the recorder
        its own pass on steps without layer rows; any other keyword is a
        user scalar (``accuracy=0.9``, ``epoch=3``).
        """
        if self._closed:
            if not self._warned_step:
                self._warned_step = True
                warnings.warn("runlens: Recorder.step called after close; ignored", RuntimeWarning, 2)
            return
        s = self._step if step is None else int(step)
        self._backward.pending = False  # a backward that raised never ran its end callback
        try:
            self._record(s, loss, scaler, grad_norm, scalars)
        except Exception as e:  # noqa: BLE001 - recording must never break training
            self._writer.report_error("recording a step", e)
        if self._n_backward and self._k_hint is None:
            self._expect_k = self._n_backward
        self._reset_step_state()
        self._modes.clear()  # forwards after a recorded step belong to what comes next (a validation)
        self._step = s + 1
        self._backward.active = self._reads_grads(self._step)
        self._outgrad.armed = self._is_layer_step(self._step)

    def validation(self, val_loss: Any, **scalars: Any) -> None:
        """Record a validation pass run after the last recorded step."""
        self._guard("recording deferred steps", self._resolve)
        step = max(self._step - 1, 0)
        values = {k: host(v) for k, v in scalars.items()}
        values["model_training"] = self._modes.training()
        self._guard("recording validation", lambda: self._writer.add_eval(step, host(val_loss), **values))

    def summary(self) -> dict[str, Any]:
        """Progress of the run: steps, parts and bytes written, the last flush (see RunWriter.summary)."""
        return self._writer.summary()

    def close(self) -> None:
        """Flush, compact and finish the run (status ``finished``). Idempotent."""
        self._finish("finished", None)

    def record_exception(self, exc: BaseException) -> None:
        """End the run as ``crashed`` with ``exc`` (for frameworks that catch it before ``with`` can)."""
        self._crashed(type(exc), exc, exc.__traceback__)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is None:
            self.close()
        else:
            self._crashed(type(exc), exc, tb)

    @property
    def warnings(self) -> list[str]:
        return self._writer.warnings

    @property
    def path(self) -> Path:
        return self._writer.path

    @property
    def run_dir(self) -> Path:
        """The folder this run is written to: ``path``, or its versioned sibling on a rerun."""
        return self._writer.path

    @property
    def writer(self) -> RunWriter:
        return self._writer

    # -- one step ----------------------------------------------------------
    def _record(self, s: int, loss: Any, scaler: Any, user_norm: Any, scalars: dict[str, Any]) -> None:
        if user_norm is not None:
            self._user_norm = True
        layer_step = self._is_layer_step(s)
        reads = self._reads_grads(s) or (layer_step and user_norm is not None)
        scaler = self._scaler if scaler is None else scaler
        self._scaler = scaler
        lrs = self._lrs or self._lrs_backward or self._read_lrs() or []
        scalars = {**scalars, **self._loop.columns(), **(self._outgrad.take(self._n_backward) if layer_step else {})}
        if not reads and not enabled(scaler) and self._watch is None:
            # No gradient read this step: its device scalars wait for the next step's one transfer.
            self._deferred.append((s, (_detached(loss), lrs, {k: _detached(v) for k, v in scalars.items()},
                                       _detached(user_norm))))
            if len(self._deferred) >= self._writer.flush_every:
                self._resolve()
            return
        deferred, self._deferred = self._deferred, []
        pre = None
        if reads:
            if self._stale():  # no backward seen (gradients set by hand): read them as they are now
                self._capture(False)
            pre = self._cap
        scale = (lambda nonfinite: self._scale.step(scaler, nonfinite)) if enabled(scaler) else None
        applied, self._applied = self._applied, None
        res = self._math.finish(loss, pre, layer_step=layer_step, scale=scale, extra=scalars, lrs=lrs,
                                user_norm=user_norm, deferred=[row for _, row in deferred], applied=applied)
        for (step, _), earlier in zip(deferred, res.deferred, strict=True):
            self._rows(step, earlier)
        self._rows(s, res)

    def _resolve(self) -> None:
        """The rows of deferred steps, in step order, from one host transfer."""
        deferred, self._deferred = self._deferred, []
        if deferred:
            for (s, _), res in zip(deferred, self._math.finish_deferred([row for _, row in deferred]),
                                   strict=True):
                self._rows(s, res)

    def _resolve_at_exit(self) -> None:
        # Runs before the writer's own exit hook (registered earlier), which then writes them.
        if not self._closed and os.getpid() == self._pid:
            self._guard("recording deferred steps", self._resolve)

    def _rows(self, s: int, res: Any) -> None:
        columns = settle(dict(res.user))
        for i, lr in enumerate(res.lrs):
            if lr is not None:
                columns["lr" if i == 0 else f"lr_group{i}"] = lr
        columns["grad_norm"] = res.grad_norm
        if res.grad_norm_applied is not None:
            columns["grad_norm_applied"] = res.grad_norm_applied
        if res.layers is not None and res.layers.get("update_norm") is not None:
            columns["update_norm"] = total_norm(res.layers["update_norm"])
        if res.loss_scale is not None:
            columns["loss_scale"], columns["step_skipped"] = res.loss_scale, res.step_skipped
        if self._write_scalars:
            self._writer.add_scalars(s, res.loss, **columns)
        if res.layers is not None and self._record_layers and s % self._write_every == 0:
            self._writer.add_layers(s, self._names, **res.layers, copy=False)
        self._events(s, res)

    def _events(self, s: int, res: Any) -> None:
        step_events(self._writer, s, res, watch=self._watch, spikes=self._spikes, depth=self._depth,
                    names=self._names)

    # -- endings -----------------------------------------------------------
    def _crashed(self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
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
        self._guard("recording deferred steps", self._resolve)
        atexit.unregister(self._resolve_at_exit)
        self._closed = True
        for part in (self._first, self._modes, self._outgrad, self._backward, self._watch, self._lr_hook,
                     self._loop, self._math.watch):
            if part is not None:
                self._guard("removing hooks", part.remove)
        self._restore_handlers()
        self._writer.close(status, error)
        if self._announce:
            info = self._writer.summary()
            print(f"runlens: {status} run written to {self._writer.path} ({info['steps']} steps, "
                  f"{info['parts']} part(s), {info['bytes'] / 1e6:.1f} MB this attempt)", file=sys.stderr)

    def _guard(self, what: str, fn: Callable[..., object], *args: object) -> None:
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - recording must never break training
            self._writer.report_error(what, e)


def _detached(value: Any) -> Any:
    return value.detach() if isinstance(value, torch.Tensor) else value
