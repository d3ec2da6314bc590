"""What the recorder's ``ce_grad_scale`` reading (round 8) adds to a training step.

The watch has no hook between reads: on each step that records layers it
registers a forward hook, which on the first training forward puts a hook on
the output and removes itself, after two reductions over the output's first 64
rows (are they in [0, 1]); the output's hook takes three reductions over the
logits' gradient, whose results ride in the step's one host transfer. Measured two
ways: in place on a tiny classifier (``Linear(8, 8)``, batch 4, cross
entropy) armed every 10th step as with ``layers_every=10``, with and without
the watch in interleaved rounds (median per-step thread CPU time), where the
fixed costs show most; and the read's bodies called directly on the logits
gradients of a classifier (256 x 10) and of a language model's batch (8 x
128 tokens x 8,000 classes), median of repeats.

    python benchmarks/recorder_outgrad.py [--rounds 15] [--steps 400] [--out benchmarks/results]
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks._interleave import arguments, interleaved, tiny, write  # noqa: E402
from recorders._torch_outgrad import OutputGradWatch, settle  # noqa: E402

MLP_STEP_S, TRANSFORMER_STEP_S = 15.87e-3, 0.68164  # benchmarks/results/recorder_overhead.md


def _steps(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, n: int,
           watch: OutputGradWatch | None = None, every: int = 10) -> float:
    """Per-step thread CPU seconds; with ``watch``, armed on every ``every``-th step and taken after it,
    as the recorder does with ``layers_every=every``."""
    t0 = time.thread_time()
    for i in range(n):
        if watch is not None:
            watch.armed = i % every == 0
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if watch is not None and i % every == 0:
            watch.take(1)
    return (time.thread_time() - t0) / n


def unarmed(rounds: int, steps: int) -> dict[str, list[float]]:
    model, opt, x, y = tiny()
    _steps(model, opt, x, y, steps)  # warm up

    def measure(variant: str) -> float:
        watch = OutputGradWatch(model) if variant == "with" else None
        took = _steps(model, opt, x, y, steps, watch)
        if watch is not None:
            watch.remove()
        return took

    return interleaved(rounds, measure)


def armed(shape: tuple[int, ...], repeats: int) -> float:
    """Seconds of one armed read on a logits gradient of ``shape``: both hooks' bodies, the take, and
    the host side (:func:`settle`; in the recorder the six numbers come with the step's transfer)."""
    torch.manual_seed(0)
    logits = torch.randn(*shape, requires_grad=True)
    grad = (torch.softmax(logits, -1) - torch.nn.functional.one_hot(
        torch.randint(0, shape[-1], shape[:-1]), shape[-1]).float()) / (logits.numel() // shape[-1])
    watch = OutputGradWatch(torch.nn.Identity())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        watch._forward(watch.model, (), logits)
        watch._grad(grad)
        settle({k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in watch.take(1).items()})
        times.append(time.perf_counter() - t0)
    watch.remove()
    return statistics.median(times)


def page(res: dict[str, list[float]], reads: dict[str, float], rounds: int, steps: int) -> str:
    without, with_ = statistics.median(res["without"]), statistics.median(res["with"])
    diffs = [w - o for w, o in zip(res["with"], res["without"], strict=True)]
    q = statistics.quantiles(diffs, n=4) if len(diffs) >= 4 else [min(diffs), max(diffs)]
    noise = q[0] <= 0 < q[-1]
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# The ce_grad_scale reading's cost", "",
        f"Measured {when} on {platform.machine()} (cpu, torch {torch.__version__}, 1 thread) by "
        f"`python benchmarks/recorder_outgrad.py`, with a load average of {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores at the end (other work on the machine inflates both variants and the reads "
        "alike; the interleaved rounds keep the difference fair, not the absolute figures).", "",
        "## In place: a tiny classifier, armed every 10th step", "",
        f"{rounds} interleaved rounds of {steps} steps of a `Linear(8, 8)` (batch 4, cross entropy), medians "
        "of per-step thread CPU time.", "",
        "| variant | step (us, median of rounds) |", "|---|---:|",
        f"| plain step | {without * 1e6:.1f} |", f"| with the watch, armed every 10th step | {with_ * 1e6:.1f} |", "",
        f"Per-round difference (with minus without): median {statistics.median(diffs) * 1e6:.2f} us, quartiles "
        f"{q[0] * 1e6:.2f} / {q[-1] * 1e6:.2f} us"
        + (": the quartiles straddle zero, so it is within this machine's noise even on a step this small."
           if noise else f": {statistics.median(diffs) / MLP_STEP_S:.3%} of the MLP step of "
           "`recorder_overhead.md`."), "",
        "## One armed read, by the size of the logits", "",
        "| logits gradient | read (us, median) | share of the MLP step | share of the transformer step, "
        "`layers_every=10` |", "|---|---:|---:|---:|"]
    for name, t in reads.items():
        lines.append(f"| {name} | {t * 1e6:.0f} | {t / MLP_STEP_S:.2%} | {t / 10 / TRANSFORMER_STEP_S:.4%} |")
    lines += ["", "The recorder's budget (`recorder_overhead.md`): 0.5% of the transformer step with "
              "`layers_every=10`, 2% of the MLP's. On a GPU the reductions run on the device and their results "
              "ride in the step's one host transfer with its other readings.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, argv, ROOT / "benchmarks" / "results")
    res = unarmed(args.rounds, args.steps)
    reads = {"classifier, 256 x 10": armed((256, 10), 200),
             "language model, 8 x 128 x 8,000": armed((8, 128, 8000), 20)}
    return write(args.out, "recorder_outgrad.md", page(res, reads, args.rounds, args.steps))


if __name__ == "__main__":
    raise SystemExit(main())
