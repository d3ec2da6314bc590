"""Lightning callback: a runlens run log from ``Trainer.fit``, one line to add.

Usage::

    from recorders.lightning import RunlensCallback
    trainer = lightning.Trainer(callbacks=[RunlensCallback("runs/exp1")])

It wraps :class:`recorders.torch.Recorder`, so the run holds the same
per-layer statistics as a hand-written loop. Steps are Lightning's
``global_step`` counted from 0 (the step an optimizer update belongs to).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:  # checked against the unified package; both define the same hooks
    from lightning.pytorch.callbacks import Callback
else:
    try:
        from lightning.pytorch.callbacks import Callback
    except ImportError:  # the standalone package, for projects still on pytorch_lightning
        from pytorch_lightning.callbacks import Callback

from recorders._callback import CallbackSettings
from recorders.torch import Recorder

__all__ = ["RunlensCallback"]

VAL_LOSS_KEYS = ("val_loss", "val/loss", "validation_loss", "valid_loss", "val_loss_epoch", "loss/val")
LOSS_KEYS = ("train_loss", "loss", "train/loss", "train_loss_step")


class RunlensCallback(CallbackSettings, Callback):
    """Records ``Trainer.fit`` into the run directory ``path`` (format v1).

    ``val_loss_key`` names the logged metric that is the validation loss
    (default: the first of ``val_loss``, ``val/loss``, ``validation_loss``,
    ...); ``loss_key`` the logged training loss used when ``training_step``
    returns none (manual optimization). ``config`` is merged over the
    module's ``hparams``. ``resume``: append to the run already in ``path``
    as a new attempt (True), or record into a new versioned sibling folder
    (False); by default (None) a fit resumed from a checkpoint
    (``fit(ckpt_path=...)``) continues its run and any other fit into a folder
    that holds a run gets the next free ``path-N``. The trainer's first
    learning-rate scheduler is handed to the Recorder (``scheduler_steps``).
    The other keywords go to the Recorder.
    """

    def __init__(self, path: str | Path, *, name: str | None = None, config: Mapping[str, Any] | None = None,
                 seed: int | None = None, val_loss_key: str | None = None, loss_key: str | None = None,
                 layers_every: int = 1, flush_every: int = 100, flush_seconds: float = 30.0,
                 resume: bool | None = None, **recorder_options: Any) -> None:
        self._keep_settings(path, name, config, resume, recorder_options, layers_every=layers_every,
                            flush_every=flush_every, flush_seconds=flush_seconds)
        self.seed = seed
        self.val_loss_key = val_loss_key
        self.loss_key = loss_key
        self.recorder: Recorder | None = None
        self._stepped = False
        self._losses: list[torch.Tensor] = []

    # -- the fit begins and ends -------------------------------------------
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Optimizers exist and a checkpoint's ``global_step`` is restored (it is not yet at
        ``on_fit_start``), the sanity check is over: open the run here."""
        optimizer = trainer.optimizers[0] if trainer.optimizers else None
        configs = getattr(trainer, "lr_scheduler_configs", None) or []
        options = {"scaler": getattr(trainer.precision_plugin, "scaler", None),
                   "accumulation_steps": max(1, int(trainer.accumulate_grad_batches)),
                   "scheduler": configs[0].scheduler if configs else None,
                   "resume": self.resume if self.resume is not None else trainer.global_step > 0,
                   **self.recorder_options}
        self.recorder = Recorder(self.path, pl_module, optimizer, name=self.name,
                                 config=self._config(trainer, pl_module), seed=self._seed(),
                                 start_step=trainer.global_step, **options)
        self._stepped = False
        self._losses = []

    @property
    def run_dir(self) -> Path | None:
        """The folder the current fit is written to (None before ``fit`` starts)."""
        return self.recorder.run_dir if self.recorder is not None else None

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        """Training and its last validation are over: finish the run."""
        if self.recorder is not None:
            self.recorder.writer.update_config(stopped_at_step=trainer.global_step,
                                               stopped_at_epoch=trainer.current_epoch)
            self.recorder.close()
            self.recorder = None

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """Any exception out of ``fit``, a ``KeyboardInterrupt`` included: the run ends ``crashed``."""
        if self.recorder is not None:
            self.recorder.record_exception(exception)
            self.recorder = None

    # -- a training step ---------------------------------------------------
    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        """Gradients are accumulated and unscaled, not yet clipped, and the optimizer is about to step.

        The Recorder has already taken the gradient statistics at the end of
        the backward pass (before any clipping); this moment only tells the
        batch end that this batch completed an optimizer step, which with
        ``accumulate_grad_batches`` is not every batch.
        """
        self._stepped = True

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        """The optimizer has stepped (or the batch was one of an accumulation): record the step."""
        if self.recorder is None:
            return
        loss = _output_loss(outputs)
        if loss is not None:
            # Lightning divides the returned loss by the accumulation factor before backward.
            self._losses.append(loss * trainer.accumulate_grad_batches)
        if not self._stepped:
            return
        self._stepped = False
        if self._losses:
            value: Any = torch.stack([x.float() for x in self._losses]).mean()
        else:
            value = self._logged(trainer, self.loss_key, LOSS_KEYS)
        self._losses = []
        if value is None:
            return  # nothing says what the loss was: a row without a loss would be a lie
        scaler = getattr(trainer.precision_plugin, "scaler", None)
        self.recorder.step(value, step=max(trainer.global_step - 1, 0), scaler=scaler,
                           epoch=trainer.current_epoch)

    # -- validation --------------------------------------------------------
    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        """Validation metrics are reduced and logged: record the validation loss of this pass."""
        if self.recorder is None or trainer.sanity_checking:
            return
        val = self._logged(trainer, self.val_loss_key, VAL_LOSS_KEYS)
        if val is None:
            return
        key = self.val_loss_key or next(k for k in VAL_LOSS_KEYS if k in trainer.callback_metrics)
        extra = {}
        for k, v in trainer.callback_metrics.items():
            if k != key and k.startswith(("val", "valid")) and _is_scalar(v):
                extra[_column(k)] = float(v)
        self.recorder.validation(float(val), **extra)

    # -- helpers -----------------------------------------------------------
    @staticmethod
    def _logged(trainer: Any, key: str | None, defaults: tuple[str, ...]) -> float | None:
        metrics = trainer.callback_metrics
        for k in (key,) if key else defaults:
            if k in metrics and _is_scalar(metrics[k]):
                return float(metrics[k])
        return None

    def _seed(self) -> int | None:
        if self.seed is not None:
            return self.seed
        env = os.environ.get("PL_GLOBAL_SEED")  # set by lightning.seed_everything
        return int(env) if env and env.lstrip("-").isdigit() else None

    def _config(self, trainer: Any, pl_module: Any) -> dict[str, Any]:
        hparams = dict(getattr(pl_module, "hparams", {}) or {})
        clip = trainer.gradient_clip_val
        trainer_cfg = {"max_epochs": trainer.max_epochs, "max_steps": trainer.max_steps,
                       "accumulate_grad_batches": trainer.accumulate_grad_batches,
                       "gradient_clip_val": None if clip is None else float(clip),
                       "gradient_clip_algorithm": trainer.gradient_clip_algorithm,
                       "precision": str(trainer.precision), "world_size": trainer.world_size,
                       "strategy": type(trainer.strategy).__name__}
        return {**hparams, "trainer": trainer_cfg, "recorded_by": "recorders.lightning.RunlensCallback",
                **self.config}


def _output_loss(outputs: Any) -> torch.Tensor | None:
    loss: object
    if isinstance(outputs, torch.Tensor):
        loss = outputs
    elif isinstance(outputs, Mapping):
        loss = outputs.get("loss")
    else:
        return None
    return loss.detach() if isinstance(loss, torch.Tensor) and loss.numel() == 1 else None


def _is_scalar(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.numel() == 1
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _column(key: str) -> str:
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in key).strip("_")
    return name if name not in ("step", "time", "val_loss") else f"{name}_"

