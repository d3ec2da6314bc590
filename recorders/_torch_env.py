"""Small torch-side helpers of the recorder: argument checks, rank, config and environment."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn


def check_every(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"The '{name}' parameter of Recorder must be an int >= 1. Got {value!r} instead.")


def host(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().item()
    return value


def dist_rank() -> tuple[int, int]:
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def config_of(config: Mapping[str, Any] | None, optimizer: Any, layers_every: int) -> dict[str, Any]:
    out = dict(config or {})
    out.setdefault("layers_every", layers_every)
    if optimizer is not None:
        out.setdefault("optimizer", type(optimizer).__name__)
        group = optimizer.param_groups[0]
        hparams = {k: v for k, v in group.items()
                   if k != "params" and isinstance(v, (int, float, str, bool, tuple, type(None)))}
        out.setdefault("optimizer_params", hparams)
    return out


def environment(params: list[nn.Parameter], rank: int, world: int) -> dict[str, Any]:
    device = params[0].device if params else torch.device("cpu")
    env: dict[str, Any] = {"torch": torch.__version__, "device": str(device), "rank": rank,
                           "world_size": world}
    if torch.cuda.is_available():
        env["cuda"] = torch.version.cuda
    return env
