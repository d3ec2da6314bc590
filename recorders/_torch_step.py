"""The math of one recorded optimizer step, from end of backward to host numbers.

:meth:`StepMath.capture` runs at the end of each backward pass: gradients
accumulated (and all-reduced under DDP), not yet clipped or unscaled. It
takes every gradient column there, on the device and without a host sync:
per-parameter L2 norms every step it is asked to, and on layer steps the
largest absolute element, the (sampled) zero fraction and a sample of the
weights before the optimizer step. With accumulation each micro-batch's
capture replaces the previous one, so the last (the accumulated gradient)
is what gets recorded. :meth:`StepMath.finish` runs in ``rec.step`` after
the optimizer step: weight norms and update norms, then everything goes to
the host in one transfer.

Taking the gradient columns at the end of backward is what makes them
"before clipping" whatever clipping the user does afterwards. Under a
``GradScaler`` they are divided by the loss scale the backward used (a
power of two: exact). Non-finite counts are exact where a gradient was
finite at the end of backward (then 0); otherwise they are counted in
``rec.step`` on the current gradient, after a clip by a non-finite total
norm may have spread NaN to every element.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from recorders import _torch_norms as tn


@dataclass
class _Capture:
    present: list[int]                 # indices of parameters that had a gradient
    norms: torch.Tensor                # their gradient L2 norms at the end of backward
    amax: torch.Tensor | None = None   # layer steps: largest |element| of those gradients
    zero: torch.Tensor | None = None   # layer steps: zero fraction (all params) or nonzero counts
    before: torch.Tensor | None = None  # layer steps: sampled weights before the optimizer step


@dataclass
class StepResult:
    """Host-side numbers of one step, ready for the writer."""

    loss: float
    grad_norm: float | None
    loss_scale: float | None = None
    step_skipped: int = 0
    layers: dict[str, Any] | None = None
    nonfinite_params: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    user: dict[str, Any] = field(default_factory=dict)

    @property
    def anomalous(self) -> bool:
        return not math.isfinite(self.loss) or len(self.nonfinite_params) > 0


class StepMath:
    """Per-step gradient, weight and update statistics for a fixed parameter list."""

    def __init__(self, params: Sequence[torch.nn.Parameter], *, sample_size: int = 4096,
                 zero_sample_size: int = 1024, exact_zero_frac: bool = False, abs_max: bool = True) -> None:
        self.params = list(params)
        self.abs_max = abs_max
        self.numel = np.array([p.numel() for p in self.params], dtype=np.float64)
        self.sample_size = sample_size
        self.zero_sample_size = zero_sample_size
        self.exact_zero_frac = exact_zero_frac
        self._sample: tn.Sample | None = None
        self._zero_sample: tn.Sample | None = None
        self._pre: _Capture | None = None
        self._scale_after_update: float | None = None

    def sample(self) -> tn.Sample:
        # Built lazily: by the first backward the model sits on its training device.
        if self._sample is None:
            device = self.params[0].device
            self._sample = tn.Sample([p.shape for p in self.params], self.sample_size, device)
        return self._sample

    def zero_sample(self) -> tn.Sample:
        # Smaller than the update sample: a gather's cost is its cache misses,
        # and a fraction needs fewer elements than a norm for the same error.
        if self._zero_sample is None:
            device = self.params[0].device
            self._zero_sample = tn.Sample([p.shape for p in self.params], self.zero_sample_size, device,
                                          seed=1)
        return self._zero_sample

    @torch.no_grad()
    def capture(self, layer_step: bool) -> None:
        """At the end of backward: the gradient columns, and the weights before the step."""
        self._pre = self._read_grads(layer_step, before=layer_step)

    def _read_grads(self, layer_step: bool, *, before: bool) -> _Capture:
        full = [p.grad for p in self.params]
        if all(g is not None for g in full):
            present, grads = list(range(len(full))), full
        else:
            present = [i for i, g in enumerate(full) if g is not None]
            grads = [full[i] for i in present]
        cap = _Capture(present, tn.l2_norms(grads))
        if layer_step and grads:
            cap.amax = tn.abs_maxes(grads) if self.abs_max else None
            cap.zero = tn.nonzero_counts(grads) if self.exact_zero_frac else self.zero_sample().zero_fracs(full)
        if layer_step and before:
            cap.before = self.sample().gather(self.params)
        return cap

    @torch.no_grad()
    def finish(self, loss: Any, *, layer_step: bool, grads: bool = True, scaler: Any = None,
               extra: dict[str, Any] | None = None) -> StepResult:
        """After the optimizer step: all numbers of this step, with one host transfer.

        ``grads=False`` (a step whose gradients are not recorded) reads only
        the loss and user scalars.
        """
        pre, self._pre = self._pre, None
        if not grads:
            pre = _Capture([], torch.empty(0))
        elif pre is None:  # no backward seen (gradients set by hand): read them as they are now
            pre = self._read_grads(layer_step, before=False)
        host_loss = _host_loss(loss)
        batch = _Batch(self.params[0].device if self.params else torch.device("cpu"))
        if host_loss is None:
            batch.put("loss", loss.detach())
        if grads:
            batch.put("pre", pre.norms)
        scaler_on = scaler is not None and scaler.is_enabled()
        if scaler_on:
            _put_scaler(batch, scaler)
        user = {}
        for k, v in (extra or {}).items():
            if isinstance(v, torch.Tensor):
                batch.put("u:" + k, v.detach())
            else:
                user[k] = v
        if layer_step and grads and self.params:
            self._layer_pieces(batch, pre)
        host = batch.to_host()
        res = StepResult(loss=host_loss if host_loss is not None else float(host["loss"][0]),
                         grad_norm=None, user=user)
        for key, values in host.items():
            if key.startswith("u:"):
                res.user[key[2:]] = float(values[0])
        self._fill(res, host, pre, scaler if scaler_on else None)
        return res

    def _layer_pieces(self, batch: _Batch, pre: _Capture) -> None:
        batch.put("weight", tn.l2_norms(self.params))
        for key, value in (("amax", pre.amax), ("zero", pre.zero)):
            if value is not None:
                batch.put(key, value)
        if pre.before is not None:
            batch.put("update", self.sample().update_norms(pre.before, self.sample().gather(self.params)))

    def _fill(self, res: StepResult, host: dict[str, np.ndarray], pre: _Capture, scaler: Any) -> None:
        pre_norms = host.get("pre", np.empty(0, dtype=np.float32))
        used = 1.0
        if scaler is not None:
            used = res.loss_scale = self._loss_scale(res, scaler, host, pre_norms)
        gn = pre_norms / used if used != 1.0 else pre_norms
        if len(gn):
            g64 = gn.astype(np.float64)
            res.grad_norm = math.sqrt(float(np.dot(g64, g64)))
        bad = np.zeros(len(gn), dtype=bool)
        if res.grad_norm is not None and not math.isfinite(res.grad_norm):
            bad = ~np.isfinite(gn)
            res.nonfinite_params = np.asarray(pre.present, dtype=np.int64)[bad]
        if "weight" in host:
            res.layers = self._layers(host, pre, gn, bad, used)

    def _loss_scale(self, res: StepResult, scaler: Any, host: dict[str, np.ndarray],
                    pre_norms: np.ndarray) -> float:
        scale_now = float(host["scale"][0])
        if len(pre_norms):
            used, res.step_skipped = _used_scale(scaler, scale_now, host["tracker"][0], pre_norms)
        elif self._scale_after_update is not None:
            # Gradients not read this step: the scale left by the previous
            # update is the one this step used, and a drop means a skip.
            used = self._scale_after_update
            res.step_skipped = int(scale_now < used)
        else:
            used = scale_now
        self._scale_after_update = scale_now
        return used

    def _layers(self, host: dict[str, np.ndarray], pre: _Capture, gn: np.ndarray, bad: np.ndarray,
                used: float) -> dict[str, Any]:
        n = len(self.params)
        complete = len(pre.present) == n
        idx = np.asarray(pre.present, dtype=np.int64)

        def spread(values: np.ndarray) -> np.ndarray:
            if complete:
                return values
            full = np.zeros(n, dtype=values.dtype)
            full[idx] = values
            return np.ma.masked_array(full, mask=~np.isin(np.arange(n), idx))

        out: dict[str, Any] = {"grad_norm": spread(gn), "weight_norm": host["weight"]}
        if "amax" in host:
            out["grad_abs_max"] = spread(host["amax"] / used if used != 1.0 else host["amax"])
        if "zero" in host:
            zero = host["zero"]
            out["grad_zero_frac"] = (spread(1.0 - zero / self.numel[idx]) if self.exact_zero_frac
                                     else spread(zero[idx]) if not complete else zero)
        if "update" in host:
            out["update_norm"] = host["update"]
        counts = np.zeros(len(idx), dtype=np.int32)
        if bad.any():
            which = [self.params[int(i)].grad for i in idx[bad]]
            if all(g is not None for g in which):
                counts[bad] = tn.nonfinite_counts(which).cpu().numpy().astype(np.int32)
        out["nonfinite"] = spread(counts)
        return out


class _Batch:
    """Device vectors of one step, moved to the host in a single transfer."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.pieces: list[torch.Tensor] = []
        self.keys: list[tuple[str, int]] = []

    def put(self, key: str, value: torch.Tensor) -> None:
        t = value.reshape(-1)
        if t.dtype != torch.float32:
            t = t.float()
        if t.device != self.device:
            t = t.to(self.device)
        self.pieces.append(t)
        self.keys.append((key, t.numel()))

    def to_host(self) -> dict[str, np.ndarray]:
        if not self.pieces:
            return {}
        flat = torch.cat(self.pieces).cpu().numpy()
        out, start = {}, 0
        for key, size in self.keys:
            out[key] = flat[start:start + size]
            start += size
        return out


def _put_scaler(batch: _Batch, scaler: Any) -> None:
    # The scaler's own tensors ride along in the step's single transfer;
    # get_scale() would be a sync of its own on a GPU.
    scale = getattr(scaler, "_scale", None)
    batch.put("scale", scale if scale is not None else torch.tensor(scaler.get_scale()))
    tracker = getattr(scaler, "_growth_tracker", None)
    batch.put("tracker", tracker if tracker is not None else torch.tensor(-1.0))


def _host_loss(loss: Any) -> float | None:
    """The loss as a float when that needs no device sync of its own, else None."""
    if not isinstance(loss, torch.Tensor):
        return float(loss)
    if loss.dtype == torch.float64:  # keep its precision: float32 is the batch's type
        return float(loss.detach().reshape(-1)[0])
    return None


def _used_scale(scaler: Any, scale_now: float, tracker: float, pre_norms: np.ndarray) -> tuple[float, int]:
    """The loss scale this step's backward used, and whether the scaler skipped the step.

    ``GradScaler.update`` has already run: it backs the scale off after a
    non-finite gradient (the step was skipped) and grows it when its growth
    tracker wraps to 0, so the scale before the update is recovered exactly.
    """
    skipped = not np.isfinite(pre_norms).all()
    if skipped:
        return float(scale_now / scaler.get_backoff_factor()), 1
    if tracker == 0:
        return float(scale_now / scaler.get_growth_factor()), 0
    return float(scale_now), 0
