"""The math of one recorded optimizer step, from the final gradients to host numbers.

:meth:`StepMath.capture` runs once per optimizer step, where the recorder
decides the gradient is final: at the end of the last backward pass of the
step (accumulated, all-reduced under DDP, not yet clipped or unscaled), or,
when that moment was missed, in the optimizer's step pre-hook or in
``rec.step``. It takes every gradient column there, on the device and
without a host sync: per-parameter L2 norms, and on layer steps the largest
absolute element (one fused inf-norm pass), the (sampled) zero fraction and
a sample of the weights before the optimizer step. :meth:`StepMath.finish`
runs in ``rec.step`` after the optimizer step: weight norms and update
norms, then everything goes to the host in one transfer.

A capture taken at the end of backward under a ``GradScaler`` holds scaled
gradients: its norms are divided by the loss scale that backward used (a
power of two: exact). A capture taken later never is: by the optimizer step
(``GradScaler.step``) the scaler has unscaled ``.grad`` in place, so
dividing again would unscale twice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import torch

from recorders import _torch_norms as tn
from recorders._torch_applied import AppliedWatch, Same
from recorders._torch_outgrad import READINGS

# Extra values carried whole rather than as their first element (the output-gradient watch's).
WHOLE = frozenset({"u:" + READINGS})


@dataclass
class Capture:
    present: list[int]                 # indices of parameters that had a gradient
    norms: torch.Tensor                # their gradient L2 norms
    at_backward: bool = True           # taken at the end of backward: scaled under a GradScaler
    amax: torch.Tensor | None = None   # layer steps: largest |element| of those gradients
    zero: torch.Tensor | None = None   # layer steps: zero fraction (all params) or nonzero counts
    before: Any = None  # layer steps: sampled weights before the optimizer step (Layout.before's, or a vector)
    versions: list[int] | None = None  # the gradients' version counters at the capture (_torch_applied)


@dataclass
class StepResult:
    """Host-side numbers of one step, ready for the writer."""

    loss: float
    grad_norm: float | None
    loss_scale: float | None = None
    grad_norm_applied: float | None = None  # the global norm optimizer.step() applied (after clipping)
    step_skipped: int = 0
    layers: dict[str, Any] | None = None
    nonfinite_params: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    user: dict[str, Any] = field(default_factory=dict)
    lrs: list[float | None] = field(default_factory=list)
    deferred: list[StepResult] = field(default_factory=list)  # earlier steps resolved in this transfer

    @property
    def anomalous(self) -> bool:
        return not math.isfinite(self.loss) or len(self.nonfinite_params) > 0


class StepMath:
    """Per-step gradient, weight and update statistics for a fixed parameter list."""

    def __init__(self, params: Sequence[torch.nn.Parameter], *, sample_size: int = 4096,
                 zero_sample_size: int = 1024, exact_zero_frac: bool = False, abs_max: bool = True,
                 norms: Any = None) -> None:
        self.params = list(params)
        self.abs_max = abs_max
        self.numel = np.array([p.numel() for p in self.params], dtype=np.float64)
        self.sample_size = sample_size
        self.zero_sample_size = zero_sample_size
        self.exact_zero_frac = exact_zero_frac
        self.norms = norms or tn.LocalNorms()
        self._sample: tn.Sample | None = None
        self._zero_sample: tn.Sample | None = None
        self._layout: tn.Layout | None = None
        # Sharded ranks must agree on what each puts in the step's collective: they always take the pass.
        self.watch = AppliedWatch(self.params, enabled=not getattr(self.norms, "sharded", False))

    @overload
    def _local(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]: ...
    @overload
    def _local(self, tensors: Sequence[torch.Tensor | None]) -> list[torch.Tensor | None]: ...
    def _local(self, tensors: Sequence[torch.Tensor | None]) -> list[torch.Tensor | None] | list[torch.Tensor]:
        return [None if t is None else self.norms.local(t) for t in tensors]

    def sample(self) -> tn.Sample:
        # Built lazily: by the first backward the model sits on its training device.
        if self._sample is None:
            shapes = [self.norms.local(p).shape for p in self.params]
            self._sample = tn.Sample(shapes, self.sample_size, self.norms.device(self.params))
        return self._sample

    def zero_sample(self) -> tn.Sample:
        # Smaller than the update sample: a gather's cost is its cache misses,
        # and a fraction needs fewer elements than a norm for the same error.
        if self._zero_sample is None:
            shapes = [self.norms.local(p).shape for p in self.params]
            self._zero_sample = tn.Sample(shapes, self.zero_sample_size, self.norms.device(self.params),
                                          seed=1)
        return self._zero_sample

    def layout(self) -> tn.Layout:
        if self._layout is None:  # lazily, like the samples
            shapes = [self.norms.local(p).shape for p in self.params]
            self._layout = tn.Layout(shapes, self.sample_size, self.zero_sample_size, self.norms.device(self.params))
        return self._layout

    @torch.no_grad()
    def capture(self, layer_step: bool, *, at_backward: bool, before: bool = True) -> Capture:
        """The gradient columns now, and (layer steps) the weights before the optimizer step."""
        full = [p.grad for p in self.params]
        present = [i for i, g in enumerate(full) if g is not None]
        grads = [g for g in full if g is not None]
        complete = len(grads) == len(full)
        local = self._local(grads)
        layout = self.layout()
        # Every gradient present: the batched layout; otherwise (rare) one kernel per tensor.
        fast = complete and layout.usable
        if fast and layer_step and not self.exact_zero_frac:
            cap = Capture(present, torch.empty(0), at_backward=at_backward)
            cap.norms, cap.amax, cap.zero = layout.grad_stats(local, self.abs_max)
        else:
            cap = Capture(present, layout.l2(local) if fast else self.norms.l2(local), at_backward=at_backward)
        if layer_step and grads and cap.zero is None:
            cap.amax = self.norms.abs_max(local) if self.abs_max else None
            cap.zero = (self.norms.nonzero(local) if self.exact_zero_frac
                        else self.zero_sample().zero_fracs(self._local(full)))
        if layer_step and before:
            weights = self._local(self.params)
            cap.before = layout.before(weights) if layout.usable else self.sample().gather(weights)
        self.watch.start(cap, list(grads))
        return cap

    @torch.no_grad()
    def applied(self, cap: Capture | None = None) -> torch.Tensor | Same | None:
        """The global L2 norm of the gradients as they are now (in the optimizer's step pre-hook:
        after clipping and unscaling), on the device; None when no parameter has one. A
        :class:`~recorders._torch_applied.Same` instead when it follows from ``cap`` (no pass)."""
        same = self.watch.applied(cap) if self.watch.trusted is not False else None
        self.watch.clear()  # the gradients are not held past the optimizer step
        if same is not None and self.watch.trusted is None:
            same.check = self._applied_pass()
        return same if same is not None else self._applied_pass()

    def _applied_pass(self) -> torch.Tensor | None:
        grads = [p.grad for p in self.params]
        present = [g for g in grads if g is not None]
        if len(present) == len(grads) and self.layout().usable:
            norms = self.layout().l2(self._local(present))
        else:
            if not present:
                return None
            norms = self.norms.l2(self._local(present))
        return torch.linalg.vector_norm(norms.double()).reshape(1)

    @torch.no_grad()
    def finish(self, loss: Any, pre: Capture | None, *, layer_step: bool, scale: Any = None,
               extra: dict[str, Any] | None = None, lrs: Sequence[Any] = (),
               user_norm: Any = None, deferred: Sequence[tuple[Any, ...]] = (),
               applied: torch.Tensor | Same | None = None) -> StepResult:
        """After the optimizer step: all numbers of this step, with one host transfer.

        ``pre`` None: gradients are not recorded this step (only the loss,
        lr and user scalars are read). ``scale`` is the recorder's
        :class:`~recorders._torch_scale.ScaleTracker` call (or None);
        ``user_norm`` the total norm the training loop computed itself;
        ``deferred`` earlier steps' scalars that ride in this transfer (their
        results land in ``StepResult.deferred``).
        """
        batch = _Batch(self.norms.device(self.params))
        numbers, keys = _put_scalars(batch, "", loss, user_norm, lrs, extra)
        staged = _stage(batch, deferred)
        if pre is not None:
            batch.put("pre", pre.norms)
        if isinstance(applied, Same):
            _put_same(batch, applied, pre)
            if applied.check is not None:
                batch.put("applied", applied.check)
        elif applied is not None:
            batch.put("applied", applied)
        if layer_step and pre is not None and self.params:
            self._layer_pieces(batch, pre)
        host = batch.to_host(getattr(self.norms, "combine", None))
        res = _scalar_result("", numbers, keys, host, len(lrs))
        res.deferred = _unstage(staged, host)
        if "applied" in host:
            res.grad_norm_applied = float(np.sqrt(np.sum(np.square(host["applied"].astype(np.float64)))))
        pre_norms = host.get("pre", np.empty(0, dtype=np.float32))
        used = 1.0
        if scale is not None:
            nonfinite = bool(len(pre_norms)) and not np.isfinite(pre_norms).all()
            used, res.step_skipped = scale(nonfinite if pre is not None else None)
            res.loss_scale = used
        if isinstance(applied, Same):
            same = _same_norm(applied, host, host["pre"] if applied.cap is pre else None, used)
            if applied.check is None:
                res.grad_norm_applied = same
            else:  # the pass's norm stands; the shortcut is kept only if it agrees (NaN agrees with NaN)
                ref = res.grad_norm_applied
                self.watch.trusted = ref is not None and (math.isclose(same, ref, rel_tol=1e-5, abs_tol=1e-30)
                                                          or (math.isnan(same) and math.isnan(ref)))
        divisor = used if pre is not None and pre.at_backward else 1.0
        self._fill(res, host, pre, pre_norms, divisor, numbers.get("user_norm"))
        return res

    @torch.no_grad()
    def finish_deferred(self, rows: Sequence[tuple[Any, ...]]) -> list[StepResult]:
        """Steps that read no gradients, ``(loss, lrs, extra, user_norm)`` each, in one transfer."""
        batch = _Batch(self.norms.device(self.params))
        staged = _stage(batch, rows)
        return _unstage(staged, batch.to_host())

    def _layer_pieces(self, batch: _Batch, pre: Capture) -> None:
        weights, layout = self._local(self.params), self.layout()
        update = None
        if isinstance(pre.before, tuple):  # taken by the layout
            norms, update = layout.weight_stats(weights, pre.before)
        else:
            norms = self.norms.l2(weights)
            if pre.before is not None:
                sample = self.sample()
                update = sample.update_norms(pre.before, sample.gather(weights))
        batch.put("weight", norms)
        for key, value in (("amax", pre.amax), ("zero", pre.zero)):
            if value is not None:
                batch.put(key, value)
        if getattr(self.norms, "sharded", False) and pre.zero is not None and not self.exact_zero_frac:
            # Each rank's sample sizes, for the weighted mean.
            batch.put("zero_n", layout.zero_count_t if len(pre.present) == len(self.params) and layout.usable
                      else self.zero_sample().count_t)
        if update is not None:
            batch.put("update", update)

    def _fill(self, res: StepResult, host: dict[str, np.ndarray], pre: Capture | None, pre_norms: np.ndarray,
              used: float, user_norm: Any) -> None:
        gn = pre_norms / used if used != 1.0 else pre_norms
        if len(gn):
            g64 = gn.astype(np.float64)
            res.grad_norm = math.sqrt(float(np.dot(g64, g64)))
        if user_norm is not None:
            res.grad_norm = _float(user_norm)
        bad = np.zeros(len(gn), dtype=bool)
        if pre is not None and len(gn) and not np.isfinite(gn).all():
            bad = ~np.isfinite(gn)
            res.nonfinite_params = np.asarray(pre.present, dtype=np.int64)[bad]
        if "weight" in host and pre is not None:
            res.layers = self._layers(host, pre, gn, bad, used)

    def _layers(self, host: dict[str, np.ndarray], pre: Capture, gn: np.ndarray, bad: np.ndarray,
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
            found = [self.params[int(i)].grad for i in idx[bad]]
            which = [g for g in found if g is not None]
            if len(which) == len(found):
                counts[bad] = self.norms.nonfinite(self._local(which)).cpu().numpy().astype(np.int32)
        out["nonfinite"] = spread(counts)
        return out


def _put_same(batch: _Batch, same: Same, pre: Capture | None) -> None:
    if same.cap is not pre:  # recaptured since the optimizer step (rare): its norms ride along
        batch.put("applied_pre", same.cap.norms)
    if same.clip is not None:
        batch.put("applied_total", same.clip.total)


def _same_norm(same: Same, host: dict[str, np.ndarray], pre_norms: np.ndarray | None, used: float) -> float:
    """The applied norm from the captured one: unscaled like ``grad_norm``, times torch's clip factor."""
    raw = (host["applied_pre"] if pre_norms is None else pre_norms).astype(np.float64)
    norm = math.sqrt(float(np.dot(raw, raw)))
    if same.cap.at_backward and used != 1.0:  # the scaler's unscale bumps no version: it divided by this
        norm /= used
    if same.clip is not None:
        # torch's factor: clamp(max_norm / (total + 1e-6), max=1); inf * 0 stays NaN, like the pass's.
        norm *= min(1.0, same.clip.max_norm / (float(host["applied_total"][0]) + 1e-6))
    return norm


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _put_scalars(batch: _Batch, prefix: str, loss: Any, user_norm: Any, lrs: Sequence[Any],
                 extra: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Device scalars into ``batch`` (keys ``prefix + name``); host ones as they are. Returns
    the host values by name and the names that ride in the batch."""
    numbers, keys = {}, []
    for key, value in [("loss", loss), ("user_norm", user_norm), *((f"lr{i}", v) for i, v in enumerate(lrs)),
                       *(("u:" + k, v) for k, v in (extra or {}).items())]:
        if isinstance(value, torch.Tensor):
            # A user scalar is its first element; the recorder's own readings ride whole.
            batch.put(prefix + key, value.detach().reshape(-1)[:None if key in WHOLE else 1])
            keys.append(key)
        else:
            numbers[key] = value
    return numbers, keys


def _stage(batch: _Batch, rows: Sequence[tuple[Any, ...]]) -> list[tuple[str, dict[str, Any], list[str], int]]:
    out = []
    for i, (loss, lrs, extra, user_norm) in enumerate(rows):
        numbers, keys = _put_scalars(batch, f"{i}/", loss, user_norm, lrs, extra)
        out.append((f"{i}/", numbers, keys, len(lrs)))
    return out


def _unstage(staged: list[tuple[str, dict[str, Any], list[str], int]],
             host: dict[str, np.ndarray]) -> list[StepResult]:
    out = []
    for prefix, numbers, keys, n_lrs in staged:
        res = _scalar_result(prefix, numbers, keys, host, n_lrs)
        res.grad_norm = _float(numbers.get("user_norm"))
        out.append(res)
    return out


def _scalar_result(prefix: str, numbers: dict[str, Any], keys: list[str], host: dict[str, np.ndarray],
                   n_lrs: int) -> StepResult:
    for key in keys:
        numbers[key] = host[prefix + key].copy() if key in WHOLE else float(host[prefix + key][0])
    return StepResult(loss=float(numbers["loss"]), grad_norm=None,
                      user={k[2:]: v for k, v in numbers.items() if k.startswith("u:")},
                      lrs=[_float(numbers.get(f"lr{i}")) for i in range(n_lrs)])


class _Batch:
    """Device vectors of one step, moved to the host in a single transfer."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.pieces: list[torch.Tensor] = []
        self.keys: list[tuple[str, int]] = []

    def put(self, key: str, value: torch.Tensor) -> None:
        t = value.reshape(-1)
        if not t.is_floating_point() or t.dtype in (torch.float16, torch.bfloat16):
            t = t.float()
        if t.device != self.device:
            t = t.to(self.device)
        self.pieces.append(t)
        self.keys.append((key, t.numel()))

    def to_host(self, combine: Any = None) -> dict[str, np.ndarray]:
        """``combine``: a sharded model's cross-rank reduction of the pieces (one collective)."""
        if not self.pieces:
            return {}
        pieces = combine(self.pieces, self.keys) if combine is not None else self.pieces
        # cat promotes to float64 when a piece is (a float64 loss keeps its precision).
        flat = torch.cat(pieces).cpu().numpy()
        out, start = {}, 0
        for key, size in self.keys:
            out[key] = flat[start:start + size]
            start += size
        return out
