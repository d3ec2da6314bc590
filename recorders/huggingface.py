"""Hugging Face ``Trainer`` callback: a runlens run log, one line to add.

Usage::

    from recorders.huggingface import RunlensCallback
    trainer = transformers.Trainer(model=model, args=args, train_dataset=ds,
                                   callbacks=[RunlensCallback("runs/exp1")])

It wraps :class:`recorders.torch.Recorder`, so per-layer statistics are the
same as in a hand-written loop: gradients are read at the end of each
backward pass, before the Trainer clips them (in transformers 5 the
``on_pre_optimizer_step`` event comes *after* clipping, too late for
honest pre-clip norms).

Where each column comes from:

- ``loss``: the ``loss`` the model returns (its output's ``.loss`` or
  ``["loss"]``), combined over the micro-batches of an optimizer step as
  the Trainer combines them (summed when the model was given
  ``num_items_in_batch``, else averaged). A
  model that returns none (a custom ``compute_loss``) falls back to the
  Trainer's logged ``loss``, ``learning_rate`` and ``grad_norm``: only every
  ``logging_steps`` step has a row, and no per-layer rows.
- ``lr``, ``grad_norm`` and the layers: the Recorder (pre-clip, and under
  ``fp16`` unscaled: the callback hands the Recorder the scaler Accelerate
  keeps on the wrapped optimizer, so ``loss_scale`` and ``step_skipped``
  are recorded and an overflow step is a skipped step, not a
  ``nonfinite_grad`` event). With ``gradient_accumulation_steps=K`` only
  the K-th backward of each step is read.
- ``val_loss``: ``eval_loss`` from the Trainer's logs; the other ``eval_*``
  values go beside it.
- ``config``: the ``TrainingArguments`` and, at the end, the Trainer's state.

Steps are 0-based optimizer steps: the Trainer's ``global_step`` N (N
updates done) is step N - 1. The ``hf`` importer keeps a log's own steps
(N stays N), so an imported ``trainer_state.json`` sits one step later.

The Trainer has no exception event: an exception that ends the script is
recorded by the Recorder's ``sys.excepthook``; one the script catches leaves
the run ``running`` (read as killed) unless the script calls
``callback.crashed(exc)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from recorders._callback import CallbackSettings
from recorders.torch import Recorder

__all__ = ["RunlensCallback"]

_STATE_KEYS = ("global_step", "max_steps", "num_train_epochs", "epoch", "logging_steps", "eval_steps",
               "save_steps", "train_batch_size", "best_metric", "best_model_checkpoint", "total_flos")


class RunlensCallback(CallbackSettings, TrainerCallback):
    """Records ``Trainer.train`` into the run directory ``path`` (format v1).

    ``config`` entries go beside ``training_args`` in run.json. ``resume``:
    append to the run already in ``path`` as a new attempt (True), or record
    into a new versioned sibling folder (False); by default (None) training
    resumed from a checkpoint (``train(resume_from_checkpoint=...)``)
    continues its run and any other training into a folder that holds a run
    gets the next free ``path-N``. The Trainer's learning-rate scheduler is
    handed to the Recorder (``scheduler_steps``). The other keywords go to
    the Recorder (``layers_every``, ``flush_every``, ...).
    """

    def __init__(self, path: str | Path, *, name: str | None = None, config: Mapping[str, Any] | None = None,
                 layers_every: int = 1, flush_every: int = 100, flush_seconds: float = 30.0,
                 resume: bool | None = None, **recorder_options: Any) -> None:
        self._keep_settings(path, name, config, resume, recorder_options, layers_every=layers_every,
                            flush_every=flush_every, flush_seconds=flush_seconds)
        self.recorder: Recorder | None = None
        self._losses: list[torch.Tensor] = []
        self._hook: Any = None
        self._from_logs = False
        self._summed = False

    # -- training begins and ends ------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       optimizer: Any = None, lr_scheduler: Any = None, **kwargs: Any) -> None:
        """The model is wrapped and the optimizer created; no step has run (or a checkpoint's have)."""
        inner = getattr(optimizer, "optimizer", optimizer)  # accelerate wraps it; hooks go on the real one
        # fp16: Accelerate's AcceleratedOptimizer carries the GradScaler that scales every backward;
        # without it the norms would be multiplied by the loss scale and every overflow a NaN event.
        scaler = getattr(optimizer, "scaler", None)
        config = {"training_args": _args_dict(args), "recorded_by": "recorders.huggingface.RunlensCallback",
                  **self.config}
        options = {"scaler": scaler, "accumulation_steps": max(1, int(args.gradient_accumulation_steps)),
                   "scheduler": lr_scheduler,
                   "resume": self.resume if self.resume is not None else state.global_step > 0,
                   **self.recorder_options}
        self.recorder = Recorder(self.path, model, inner, name=self.name or args.run_name, config=config,
                                 seed=args.seed, start_step=state.global_step, **options)
        self._hook = model.register_forward_hook(self._after_forward, with_kwargs=True)
        self._losses = []

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Training is over (the last log and evaluation included): finish the run."""
        if self.recorder is None:
            return
        self.recorder.writer.update_config(trainer_state={k: getattr(state, k) for k in _STATE_KEYS
                                                          if getattr(state, k, None) is not None},
                                           loss_source="trainer logs" if self._from_logs else "model outputs")
        self._unhook()
        self.recorder.close()
        self.recorder = None

    def crashed(self, exc: BaseException) -> None:
        """Call from an ``except`` around ``trainer.train()`` that does not re-raise: the run ends crashed."""
        if self.recorder is not None:
            self._unhook()
            self.recorder.record_exception(exc)
            self.recorder = None

    # -- one step ------------------------------------------------------------
    def _after_forward(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        """A training forward pass returned: keep its loss for this optimizer step.

        When the Trainer passes ``num_items_in_batch``, the model divides its
        loss by the item count of the whole accumulated batch, so the
        micro-batch losses add up to the step's mean loss; otherwise each
        is a micro-batch mean and the step's loss is their mean.
        """
        if not module.training or not torch.is_grad_enabled():
            return
        loss = output.get("loss") if isinstance(output, Mapping) else getattr(output, "loss", None)
        if isinstance(loss, torch.Tensor) and loss.numel() == 1:
            self._losses.append(loss.detach())
            self._summed = kwargs.get("num_items_in_batch") is not None

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """The optimizer has stepped; gradients are not yet zeroed and ``global_step`` not yet counted.

        ``global_step`` is the number of updates before this one, so it is
        this step's 0-based index. Gradients must still be there: the
        Recorder reads the update and the gradients' current state now.
        """
        if self.recorder is None:
            return
        if not self._losses:
            self._from_logs = True  # the model returns no loss: the Trainer's logs will carry it
            return
        losses = torch.stack([x.float() for x in self._losses])
        loss = losses.sum() if self._summed else losses.mean()
        self._losses = []
        self.recorder.step(loss, step=state.global_step, epoch=int(state.epoch or 0))

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        """The Trainer logged: an evaluation's ``eval_loss``, or the loss when the model returns none."""
        if self.recorder is None or not logs:
            return
        if "eval_loss" in logs:
            extra = {_column(k[5:]): float(v) for k, v in logs.items()
                     if k.startswith("eval_") and k != "eval_loss" and _is_number(v)}
            self.recorder.validation(float(logs["eval_loss"]), **extra)
        elif self._from_logs and "loss" in logs and _is_number(logs["loss"]):
            # Gradients are zeroed by now, so no layer rows: the Trainer's own numbers only.
            cols = {"lr": logs.get("learning_rate"), "grad_norm": logs.get("grad_norm"),
                    "epoch": int(state.epoch or 0)}
            self.recorder.writer.add_scalars(state.global_step - 1, float(logs["loss"]),
                                             **{k: v for k, v in cols.items() if _is_number(v)})

    def _unhook(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None


def _args_dict(args: Any) -> dict[str, Any]:
    try:
        d = args.to_dict()
    except Exception:  # noqa: BLE001 - an exotic argument that does not serialize: keep the rest
        d = {k: v for k, v in vars(args).items() if not k.startswith("_")}
    return {k: v for k, v in d.items() if "token" not in k.lower()}  # never store hub tokens


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _column(key: str) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in key).strip("_")
    return f"val_{name}" if name else "val_value"

