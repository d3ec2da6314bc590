"""Single-batch overfit check: can the model drive the loss on one batch near zero?

A model, loss and optimizer that cannot memorise one small batch have a bug
(a detached tensor, a wrong target shape, a frozen layer, a learning rate off
by orders of magnitude) that no amount of data will fix. Keep the check as a
permanent test::

    from recorders.sanity import assert_can_overfit_one_batch

    def test_model_can_overfit_one_batch():
        assert_can_overfit_one_batch(make_model(), (x[:8], y[:8]), nn.CrossEntropyLoss())

Every check is recorded as a run (``result.run_dir``), so a failure can be
analyzed like any other run (``runlens analyze <run_dir>``).
"""

from __future__ import annotations

import copy
import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from recorders.torch import Recorder

__all__ = ["OverfitResult", "assert_can_overfit_one_batch", "overfit_one_batch"]


@dataclass(frozen=True)
class OverfitResult:
    """Outcome of :func:`overfit_one_batch`; truthy when the loss went near zero."""

    passed: bool
    initial_loss: float
    final_loss: float
    best_loss: float
    target: float
    steps: int
    run_dir: Path

    def __bool__(self) -> bool:
        return self.passed

    @property
    def message(self) -> str:
        verdict = "can overfit one batch" if self.passed else "could NOT overfit one batch"
        return (f"model {verdict}: loss {self.initial_loss:.4g} -> {self.final_loss:.4g} "
                f"(best {self.best_loss:.4g}, target <= {self.target:.3g}) in {self.steps} steps; "
                f"run recorded in {self.run_dir}")

    def __str__(self) -> str:
        return self.message


def overfit_one_batch(model: nn.Module, batch: tuple[Any, Any], loss_fn: Callable[[Any, Any], torch.Tensor],
                      *, steps: int = 300, lr: float = 1e-3,
                      optimizer: Callable[[Any], torch.optim.Optimizer] | None = None,
                      atol: float = 1e-2, rtol: float = 1e-2, path: str | Path | None = None,
                      copy_model: bool = True, seed: int | None = 0) -> OverfitResult:
    """Train ``model`` on ``batch = (inputs, targets)`` alone for ``steps`` steps.

    Passes when the best loss reaches ``max(atol, rtol * initial_loss)``.
    ``optimizer`` builds the optimizer from the parameters (default Adam at
    ``lr``). With ``copy_model`` (default) a deep copy is trained and the
    caller's model is left as it was. The run is recorded under ``path``
    (default: a new temporary directory).
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"The 'steps' parameter of overfit_one_batch must be an int >= 1. Got {steps!r} instead.")
    net = copy.deepcopy(model) if copy_model else model
    net.train()
    params = [p for p in net.parameters() if p.requires_grad]
    opt = optimizer(params) if optimizer is not None else torch.optim.Adam(params, lr=lr)
    run_dir = Path(path) if path is not None else Path(tempfile.mkdtemp(prefix="runlens-overfit-"))
    inputs, targets = batch
    config = {"check": "overfit_one_batch", "steps": steps, "lr": lr, "atol": atol, "rtol": rtol}
    losses: list[float] = []
    with _seeded(seed), Recorder(run_dir, net, opt, name="overfit_one_batch", config=config, seed=seed,
                                 flush_every=max(steps, 1), handle_signals=False) as rec:
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(net(inputs), targets)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            rec.step(loss)
    return _verdict(losses, atol, rtol, run_dir)


def _verdict(losses: list[float], atol: float, rtol: float, run_dir: Path) -> OverfitResult:
    initial = losses[0]
    finite = [v for v in losses if math.isfinite(v)]
    best = min(finite) if finite else float("nan")
    target = max(atol, rtol * abs(initial)) if math.isfinite(initial) else atol
    passed = math.isfinite(losses[-1]) and best <= target
    return OverfitResult(passed=passed, initial_loss=initial, final_loss=losses[-1], best_loss=best,
                         target=target, steps=len(losses), run_dir=run_dir)


def assert_can_overfit_one_batch(model: nn.Module, batch: tuple[Any, Any],
                                 loss_fn: Callable[[Any, Any], torch.Tensor], **kwargs: Any) -> OverfitResult:
    """:func:`overfit_one_batch`, raising ``AssertionError`` with the numbers when it fails."""
    result = overfit_one_batch(model, batch, loss_fn, **kwargs)
    if not result.passed:
        raise AssertionError(result.message)
    return result


class _seeded:
    """Seeds torch for the check and puts the caller's RNG state back afterwards."""

    def __init__(self, seed: int | None) -> None:
        self.seed = seed
        self._state: torch.Tensor | None = None

    def __enter__(self) -> None:
        if self.seed is not None:
            self._state = torch.random.get_rng_state()
            torch.manual_seed(self.seed)

    def __exit__(self, *exc: Any) -> None:
        if self._state is not None:
            torch.random.set_rng_state(self._state)
