"""The math of one recorded optimizer step, from end of backward to host numbers.

:meth:`StepMath.capture` runs at the end of each backward pass (gradients
accumulated, all-reduced, not yet clipped or unscaled) and keeps, on the
device, each parameter's gradient norm and, on layer steps, a sample of the
weights before the optimizer step. :meth:`StepMath.finish` runs in
``rec.step`` after the optimizer step: it computes the remaining columns,
concatenates everything into one vector and moves it to the host once.

"Before clipping": a gradient column read at ``rec.step`` (abs max) is
divided by the parameter's ratio ``c = ||g_now|| / ||g_backward_end||``.
Norm clipping and ``GradScaler`` unscaling multiply every gradient by one
factor, so the correction is exact for them; for value clipping it is an
approximation. Zero fractions do not change under scaling. Non-finite
counts are exact where the gradient is finite at the end of backward (then
0); otherwise they are counted on the current gradient, after a clip by a
non-finite norm may have spread NaN to every element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from recorders import _torch_norms as tn


@dataclass
class _Capture:
    present: list[int]           # indices of parameters that had a gradient
    grads: list[torch.Tensor]    # those gradients (the tensors, to notice in-place changes)
    versions: list[int]
    norms: torch.Tensor          # their L2 norms at the end of backward
    before: torch.Tensor | None  # sampled weights before the optimizer step (layer steps)


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
                 exact_zero_frac: bool = False) -> None:
        self.params = list(params)
        self.numel = np.array([p.numel() for p in self.params], dtype=np.float64)
        self.sample_size = sample_size
        self.exact_zero_frac = exact_zero_frac
        self._sample: tn.Sample | None = None
        self._pre: _Capture | None = None

    def sample(self) -> tn.Sample:
        # Built lazily: by the first backward the model sits on its training device.
        if self._sample is None:
            device = self.params[0].device
            self._sample = tn.Sample([p.shape for p in self.params], self.sample_size, device)
        return self._sample

    @torch.no_grad()
    def capture(self, layer_step: bool) -> None:
        """At the end of backward: gradient norms (and weights before the step on layer steps)."""
        self._pre = self._read_grads(self.sample().gather(self.params) if layer_step else None)

    def _read_grads(self, before: torch.Tensor | None) -> _Capture:
        grads = [p.grad for p in self.params]
        if all(g is not None for g in grads):
            present = list(range(len(grads)))
        else:
            present = [i for i, g in enumerate(grads) if g is not None]
            grads = [grads[i] for i in present]
        return _Capture(present, grads, [g._version for g in grads], tn.l2_norms(grads), before)

    @torch.no_grad()
    def finish(self, loss: Any, *, layer_step: bool, scaler: Any = None,
               extra: dict[str, Any] | None = None) -> StepResult:
        """After the optimizer step: all numbers of this step, with one host transfer."""
        pre, self._pre = self._pre, None
        if pre is None:  # no backward seen (gradients set by hand): read them as they are now
            pre = self._read_grads(None)
        grads_now = [self.params[i].grad for i in pre.present]
        modified = any(g is not h or g is None or g._version != v
                       for g, h, v in zip(grads_now, pre.grads, pre.versions))
        host_loss = _host_loss(loss)
        batch = _Batch(self.params[0].device if self.params else torch.device("cpu"))
        if host_loss is None:
            batch.put("loss", loss.detach())
        batch.put("pre", pre.norms)
        scaler_on = scaler is not None and scaler.is_enabled()
        if scaler_on:
            scale = getattr(scaler, "_scale", None)
            batch.put("scale", scale if scale is not None else torch.tensor(scaler.get_scale()))
            tracker = getattr(scaler, "_growth_tracker", None)
            batch.put("tracker", tracker if tracker is not None else torch.tensor(-1.0))
        user = {}
        for k, v in (extra or {}).items():
            if isinstance(v, torch.Tensor):
                batch.put("u:" + k, v.detach())
            else:
                user[k] = v
        if layer_step and self.params:
            self._layer_pieces(batch, pre, grads_now, modified)
        host = batch.to_host()
        res = StepResult(loss=host_loss if host_loss is not None else float(host["loss"][0]),
                         grad_norm=None, user=user)
        for key, values in host.items():
            if key.startswith("u:"):
                res.user[key[2:]] = float(values[0])
        self._fill(res, host, pre, grads_now, scaler if scaler_on else None)
        return res

    def _layer_pieces(self, batch: _Batch, pre: _Capture, grads_now: list, modified: bool) -> None:
        batch.put("weight", tn.l2_norms(self.params))
        if grads_now and all(g is not None for g in grads_now):
            batch.put("amax", tn.abs_maxes(grads_now))
            if modified:
                batch.put("post", tn.l2_norms(grads_now))
            if self.exact_zero_frac:
                batch.put("nonzero", tn.nonzero_counts(grads_now))
        if len(pre.present) == len(self.params):
            full = grads_now
        else:
            full = [None] * len(self.params)
            for i, g in zip(pre.present, grads_now):
                full[i] = g
        if not self.exact_zero_frac:
            batch.put("zero", self.sample().zero_fracs(full))
        if pre.before is not None:
            batch.put("update", self.sample().update_norms(pre.before, self.sample().gather(self.params)))

    def _fill(self, res: StepResult, host: dict[str, np.ndarray], pre: _Capture, grads_now: list,
              scaler: Any) -> None:
        pre_norms = host["pre"]
        used = 1.0
        if scaler is not None:
            used, res.step_skipped = _used_scale(scaler, host["scale"][0], host["tracker"][0], pre_norms)
            res.loss_scale = used
        gn = pre_norms / used if used != 1.0 else pre_norms
        if len(gn):
            res.grad_norm = float(math.sqrt(float(np.dot(gn.astype(np.float64), gn.astype(np.float64)))))
        bad = ~np.isfinite(gn)
        if bad.any():
            res.nonfinite_params = np.asarray(pre.present, dtype=np.int64)[bad]
        if "weight" in host:
            res.layers = self._layers(host, pre, gn, bad, grads_now)

    def _layers(self, host: dict[str, np.ndarray], pre: _Capture, gn: np.ndarray, bad: np.ndarray,
                grads_now: list) -> dict[str, Any]:
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
            now = host["post"] if "post" in host else host["pre"]
            # How much each gradient was scaled since the end of backward (clipping, unscaling).
            ok = (gn > 0) & np.isfinite(gn) & (now > 0) & np.isfinite(now)
            ratio = np.divide(now, gn, out=np.ones_like(now), where=ok)
            out["grad_abs_max"] = spread(host["amax"] / ratio)
        if "nonzero" in host:
            out["grad_zero_frac"] = spread(1.0 - host["nonzero"] / self.numel[idx])
        elif "zero" in host:
            out["grad_zero_frac"] = spread(host["zero"][idx]) if not complete else host["zero"]
        if "update" in host:
            out["update_norm"] = host["update"]
        counts = np.zeros(len(idx), dtype=np.int32)
        if bad.any():
            which = [grads_now[j] for j in np.flatnonzero(bad)]
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
