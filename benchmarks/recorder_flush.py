"""The flush half of benchmarks/recorder_overhead.py: what a part written every 10 steps adds to the step.

The 99th percentile of the whole step's wall and thread time with and without the
recorder (the background writer should keep a flush off the step), and where a
flush's work runs. Called by ``recorder_overhead.py``; not a script of its own.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from recorders.torch import Recorder

FLUSH_VARIANTS = ("none", "rec1", "rec1_syncflush")


def _timed_method(obj: Any, name: str, sink: list[float]) -> None:
    """Wrap ``obj.name`` to append its thread CPU time (on whichever thread runs it) to ``sink``."""
    real = getattr(obj, name)

    def timed(*a: Any, **k: Any) -> Any:
        t0 = time.thread_time()
        try:
            return real(*a, **k)
        finally:
            sink.append(time.thread_time() - t0)
    setattr(obj, name, timed)


def _flush_segment(variant: str, model: nn.Module, opt: torch.optim.Optimizer, loss_fn: Callable,
                   steps: int, tmp: Path, work: dict[str, list[float]]) -> tuple[list[float], list[float]]:
    rec = None
    if variant != "none":  # a part every 10 steps; syncflush: the write waited for on the step
        rec = Recorder(tmp / f"flush-{variant}-{time.monotonic_ns()}", model, opt, handle_signals=False,
                       flush_every=10 if variant == "rec1" else 10 ** 9, compact_on_close=False,
                       announce=False)
        if variant == "rec1":  # what a flush costs the training thread, and the writer thread
            _timed_method(rec.writer, "_handover", work["handover"])
            _timed_method(rec.writer._io, "write", work["write"])
    wall, cpu = [], []
    for i in range(5 + steps):
        w0, c0 = time.perf_counter(), time.thread_time()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        opt.step()
        if rec is not None:
            rec.step(loss)
            if variant == "rec1_syncflush" and i % 10 == 9:
                rec.writer.flush()
        if i >= 5:
            wall.append(time.perf_counter() - w0)
            cpu.append(time.thread_time() - c0)
    if rec is not None:
        rec.close()
    return wall, cpu


def bench_flush(device: str, rounds: int, steps: int, tmp: Path, factory: Callable) -> dict:
    """p99 of whole-step time with and without the recorder, a flush every 10 steps (``factory``'s model)."""
    torch.manual_seed(0)
    model, loss_fn = factory(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-5)
    wall: dict[str, list[float]] = {v: [] for v in FLUSH_VARIANTS}
    cpu: dict[str, list[float]] = {v: [] for v in FLUSH_VARIANTS}
    work: dict[str, list[float]] = {"handover": [], "write": []}
    for _ in range(rounds):
        for variant in FLUSH_VARIANTS:
            w, c = _flush_segment(variant, model, opt, loss_fn, steps, tmp, work)
            wall[variant] += w
            cpu[variant] += c

    def p(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1] if q < 100 else max(values)
    out = {v: {"wall_p50": p(wall[v], 50), "wall_p99": p(wall[v], 99), "cpu_p50": p(cpu[v], 50),
               "cpu_p99": p(cpu[v], 99), "steps": len(wall[v])} for v in FLUSH_VARIANTS}
    out["work"] = {k: {"n": len(v), "p50": p(v, 50), "p99": p(v, 99), "max": max(v)} for k, v in work.items() if v}
    return out


def flush_markdown(f: dict) -> list[str]:
    lines = ["", "## A flush and the step it lands on", "",
             "1,000-tensor model, `layers_every=1`, a part (10 steps x 1,000 layer rows) every 10 steps; "
             "`rec1_syncflush` waits for each part on the training thread, as the writer did before it "
             "had a thread. *excess at p99*: p99 - p50 of the variant minus the same for `none`: what "
             "the tail adds beyond the median recording cost.", "",
             "| variant | steps | wall p50 (ms) | wall p99 (ms) | thread p50 (ms) | thread p99 (ms) "
             "| excess at p99, wall / thread (ms) |", "|---|---:|---:|---:|---:|---:|---:|"]
    base = f["none"]
    for v, r in f.items():
        if v == "work":
            continue
        ew = (r["wall_p99"] - r["wall_p50"]) - (base["wall_p99"] - base["wall_p50"])
        ec = (r["cpu_p99"] - r["cpu_p50"]) - (base["cpu_p99"] - base["cpu_p50"])
        lines.append(f"| {v} | {r['steps']} | {r['wall_p50'] * 1e3:.2f} | {r['wall_p99'] * 1e3:.2f} | "
                     f"{r['cpu_p50'] * 1e3:.2f} | {r['cpu_p99'] * 1e3:.2f} | {ew * 1e3:+.2f} / {ec * 1e3:+.2f} |")
    work = f.get("work", {})
    if work:
        lines += ["", "Where a flush's work runs (`rec1`, thread CPU time of each call):", "",
                  "| work | thread | calls | p50 (ms) | p99 (ms) | max (ms) |", "|---|---|---:|---:|---:|---:|"]
        for key, thread in (("handover", "training (every add_* that may flush; a flush: swap the buffers, "
                                         "queue the batch)"), ("write", "writer (encode + write a part)")):
            if key in work:
                w = work[key]
                lines.append(f"| {key} | {thread} | {w['n']} | {w['p50'] * 1e3:.3f} | {w['p99'] * 1e3:.3f} | "
                             f"{w['max'] * 1e3:.3f} |")
    return lines
