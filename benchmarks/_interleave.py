"""The interleaved-rounds scaffold of the recorder's micro-benchmarks: a tiny model whose step is
little but Python overhead (where a fixed cost shows most), and rounds that alternate which variant
goes first, so the machine's load hits both alike."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import torch


def tiny(classes: int = 8) -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    """``Linear(8, 8)``, SGD, a batch of 4 inputs and class targets; one thread, seeded."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Linear(8, classes)
    return model, torch.optim.SGD(model.parameters(), lr=1e-3), torch.randn(4, 8), torch.randint(0, classes, (4,))


def interleaved(rounds: int, measure: Callable[[str], float],
                variants: tuple[str, str] = ("without", "with")) -> dict[str, list[float]]:
    """``measure(variant)`` for both variants in each round, the first going first in even rounds."""
    out: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        for variant in (variants if r % 2 == 0 else variants[::-1]):
            out[variant].append(measure(variant))
    return out


def arguments(doc: str, argv: list[str] | None, results: Path) -> argparse.Namespace:
    """``--rounds`` (15), ``--steps`` (400) and ``--out`` (``results``), the micro-benchmarks' options."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--out", type=Path, default=results)
    return ap.parse_args(argv)


def write(out: Path, name: str, text: str) -> int:
    """The page into ``out/name``, and to the terminal."""
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(text)
    print(text)
    return 0
