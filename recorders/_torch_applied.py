"""``grad_norm_applied`` without a second pass over the gradients, when the recorder can tell.

The column is the global L2 norm of the gradients ``optimizer.step()``
applies. The recorder already took every gradient's norm at the end of
backward (:class:`~recorders._torch_step.Capture`); what it needs to know
is what happened to the gradients since. It tells that from torch's own
bookkeeping, never from the values:

- the same ``.grad`` tensors with the same version counters (every
  in-place op bumps a tensor's ``_version``, which is how autograd itself
  detects in-place changes): nothing touched them, so the applied norm is
  the captured one;
- a GradScaler's unscale is the one in-place change that bumps no version
  (``_amp_foreach_non_finite_check_and_unscale_``), and it divides every
  gradient by the scale backward used; the recorder divides the captured
  norm by that same scale for ``grad_norm`` (a power of two: exact), so
  the applied norm is ``grad_norm`` then too;
- one ``torch.nn.utils.clip_grad_norm_`` call (norm type 2, float32/64
  gradients) over all the captured gradients, and no other change:
  torch multiplied them by ``min(1, max_norm / (total + 1e-6))`` with the
  ``total`` it returns, so the applied norm is the captured one times that
  factor, exact to float rounding. The recorder observes such calls by
  wrapping ``clip_grad_norm_`` in ``torch.nn.utils`` while a recorder is
  open (callers that imported the function before that are not seen: their
  clipping bumps the versions and falls to the pass).

The shortcut is confirmed once per run against the pass: a GradScaler
the recorder was not given (``scaler=``) unscales without a version bump
and without the recorder knowing its scale, so the first applied norm
the two disagree on turns the shortcut off for the rest of the run.

Anything else (a second clip, clipping a subset, ``p.grad = ...``, low
precision gradients, sharded parameters) keeps the pass in the optimizer's
step pre-hook. Not seen at all: writes that bypass version counters
(``p.grad.data.mul_()``, raw pointers in custom kernels); loops that
modify gradients that way get ``grad_norm_applied == grad_norm``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

_EXACT = (torch.float32, torch.float64)  # dtypes whose clip factor and product round like a pass would


@dataclass
class Clip:
    total: torch.Tensor  # the total norm torch's clip_grad_norm_ returned (device scalar)
    max_norm: float


@dataclass
class Same:
    """The applied gradients are the captured ones (``cap``), times ``clip``'s factor when one ran."""

    cap: Any
    clip: Clip | None = None
    check: torch.Tensor | None = None  # the pass, taken once to confirm the shortcut (see AppliedWatch.trusted)


def versions(grads: Sequence[torch.Tensor]) -> list[int]:
    return [g._version for g in grads]


class AppliedWatch:
    """One recorder's view of the gradients between its capture and the optimizer step."""

    def __init__(self, params: Sequence[torch.Tensor], enabled: bool) -> None:
        self.params = list(params)
        self.enabled = enabled
        self.trusted: bool | None = None  # None until the shortcut was confirmed against the pass
        self.clear()
        if enabled:
            _register(self)

    def clear(self) -> None:
        self.cap: Any = None
        self.grads: list[torch.Tensor] = []
        self.clip: Clip | None = None
        self.after: list[int] | None = None  # versions right after the observed clip
        self.unknown = False  # something changed the gradients in a way not accounted for

    def start(self, cap: Any, grads: list[torch.Tensor]) -> None:
        """At the capture: the gradients (held until the optimizer step) and their versions."""
        self.clear()
        if self.enabled:
            self.cap, self.grads = cap, grads
            cap.versions = versions(grads)

    def clipping(self, params: Sequence[torch.Tensor]) -> bool:
        """Before a clip_grad_norm_ call: True when it covers every captured gradient, unchanged."""
        if self.cap is None:
            return False
        clipped = {id(p.grad) for p in params if p.grad is not None}
        hit = [id(g) in clipped for g in self.grads]
        if not any(hit):  # another model's gradients: nothing of ours changes
            return False
        ok = (self.clip is None and not self.unknown and all(hit) and all(g.dtype in _EXACT for g in self.grads)
              and versions(self.grads) == self.cap.versions)
        self.unknown = not ok
        return ok

    def clipped(self, ok: bool, total: Any, max_norm: Any, norm_type: Any) -> None:
        if self.cap is None or not ok:
            return
        if isinstance(total, torch.Tensor) and total.numel() == 1 and float(norm_type) == 2.0:
            self.clip = Clip(total.detach(), float(max_norm))
            self.after = versions(self.grads)
        else:
            self.unknown = True

    def applied(self, cap: Any) -> Same | None:
        """In the optimizer's step pre-hook: Same when the applied norm follows from ``cap``, else None."""
        if not self.enabled or cap is None or cap is not self.cap or self.unknown or not self.grads:
            return None  # no gradient at all: the pass's None (a null column), not a norm of 0
        now = [p.grad for p in self.params]
        if sum(g is not None for g in now) != len(self.grads) or any(
                now[i] is not g for i, g in zip(cap.present, self.grads, strict=True)):
            return None
        expected = self.after if self.clip is not None else cap.versions
        return Same(cap, self.clip) if versions(self.grads) == expected else None

    def remove(self) -> None:
        self.clear()
        if self.enabled:
            self.enabled = False
            _unregister(self)


# -- observing torch.nn.utils.clip_grad_norm_ -----------------------------------
_LIVE: weakref.WeakSet[AppliedWatch] = weakref.WeakSet()
_LOCK = threading.Lock()
_ORIGINAL: dict[str, Any] = {}  # "fn": torch's own function, kept once found (old callers may hold us)
_MODULES = ("torch.nn.utils", "torch.nn.utils.clip_grad")


def _modules() -> list[Any]:
    import importlib

    return [importlib.import_module(name) for name in _MODULES]


def clip_grad_norm_(parameters: Any, max_norm: Any, norm_type: Any = 2.0, *args: Any, **kwargs: Any) -> Any:
    """torch.nn.utils.clip_grad_norm_, unchanged, telling the open recorders what it did."""
    original = _ORIGINAL["fn"]
    params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
    watches = [w for w in list(_LIVE) if w.cap is not None]
    seen = []
    for w in watches:
        try:
            seen.append(w.clipping(params))
        except Exception:  # noqa: BLE001 - observing must never break the clip
            seen.append(False)
            w.unknown = True
    total = original(params, max_norm, norm_type, *args, **kwargs)
    for w, ok in zip(watches, seen, strict=True):
        try:
            w.clipped(ok, total, max_norm, norm_type)
        except Exception:  # noqa: BLE001
            w.unknown = True
    return total


def _register(watch: AppliedWatch) -> None:
    with _LOCK:
        _LIVE.add(watch)
        mods = _modules()
        _ORIGINAL.setdefault("fn", mods[0].clip_grad_norm_)
        for mod in mods:
            if getattr(mod, "clip_grad_norm_", None) is _ORIGINAL["fn"]:
                mod.clip_grad_norm_ = clip_grad_norm_


def _unregister(watch: AppliedWatch) -> None:
    with _LOCK:
        _LIVE.discard(watch)
        if not _LIVE and "fn" in _ORIGINAL:
            # Put torch back as it was, unless someone wrapped it on top of us meanwhile.
            for mod in _modules():
                if getattr(mod, "clip_grad_norm_", None) is clip_grad_norm_:
                    mod.clip_grad_norm_ = _ORIGINAL["fn"]
