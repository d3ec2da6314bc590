"""Where the recorder's per-step time goes: a breakdown by phase on a 2-layer MLP and a small CNN.

Each phase is timed by wrapping the recorder function that does it (thread
CPU time, one torch thread, so a shared machine's waiting is not counted);
times are inclusive, per recorded step, mean over ``--steps`` steps after a
warm-up. Phases (``layers_every=1``, every step is a layer step):

Top-level rows are the recorder's three moments; ``whole step`` is the
training step with them. Below them:

- ``capture``: end of backward, gradient statistics (``Layout.grad_stats``:
  L2 norm, abs max, zero fraction, one stack per shape) and the copy of the
  weights ``update_norm`` needs (``Layout.before``: small tensors whole,
  large ones' 4,096-element sample);
- ``applied``: the optimizer step pre-hook's ``grad_norm_applied``
  (``applied pass`` is the second gradient pass, taken only when the
  recorder cannot tell what changed the gradients);
- ``finish``: in ``rec.step``, weight norms and update norms
  (``Layout.weight_stats``), then the one host transfer (``to_host``);
- ``rows``: handing the rows to the writer (``add_scalars``,
  ``add_layers``) and the step's event checks.

Variants: the current code, and ``pass`` (the previous code path: the
applied-norm pass on every step); both with and without ``clip_grad_norm_``.
Usage::

    python benchmarks/recorder_profile.py [--steps 200] [--rounds 4] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from recorders import _torch_norms as tn
from recorders import _torch_step as ts
from recorders import writer as rw
from recorders.torch import Recorder

PHASES = (("end of backward", Recorder, "_at_backward_end"), ("  capture", ts.StepMath, "capture"),
          ("    grad_stats", tn.Layout, "grad_stats"), ("    before (update_norm copy)", tn.Layout, "before"),
          ("optimizer pre-hook", Recorder, "_before_optimizer_step"), ("  applied", ts.StepMath, "applied"),
          ("    applied pass", ts.StepMath, "_applied_pass"), ("rec.step", Recorder, "step"),
          ("  finish", ts.StepMath, "finish"), ("    weight_stats (weight + update norms)", tn.Layout, "weight_stats"),
          ("    to_host", ts._Batch, "to_host"), ("  rows", Recorder, "_rows"),
          ("    add_scalars", rw.RunWriter, "add_scalars"), ("    add_layers", rw.RunWriter, "add_layers"),
          ("    events", Recorder, "_events"))
TOP = ("end of backward", "optimizer pre-hook", "rec.step")


def mlp() -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    return model, lambda m: nn.functional.cross_entropy(m(x), y)


def cnn() -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))
    return model, lambda m: nn.functional.cross_entropy(m(x), y)


class Timers:
    """Inclusive thread CPU time of each wrapped function, summed over the timed steps."""

    def __init__(self) -> None:
        self.total: dict[str, float] = defaultdict(float)
        self.on = False
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, name: str, owner: Any, attr: str) -> None:
        real = owner.__dict__[attr]
        timers = self

        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.thread_time()
            try:
                return real(*a, **k)
            finally:
                if timers.on:
                    timers.total[name] += time.thread_time() - t0
        setattr(owner, attr, timed)
        self._undo.append((owner, attr, real))

    def restore(self) -> None:
        for owner, attr, real in reversed(self._undo):
            setattr(owner, attr, real)
        self._undo = []


def profile(factory: Callable, variant: str, clip: bool, steps: int, tmp: Path) -> dict[str, float]:
    torch.manual_seed(0)
    model, loss_fn = factory()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    timers = Timers()
    for name, owner, attr in PHASES:
        timers.wrap(name, owner, attr)
    try:
        rec = Recorder(tmp / f"{variant}-{clip}-{time.monotonic_ns()}", model, opt, handle_signals=False,
                       announce=False, compact_on_close=False)
        if variant == "pass":
            rec._math.watch.remove()
        for i in range(20 + steps):
            timers.on = i >= 20
            t0 = time.thread_time()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model)
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            rec.step(loss)
            if timers.on:
                timers.total["whole step"] += time.thread_time() - t0
        rec.close()
    finally:
        timers.restore()
    return {k: v / steps for k, v in timers.total.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4, help="interleaved rounds the steps are split into")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    cols = [(v, c) for c in (False, True) for v in ("current", "pass")]
    lines = ["# Recorder per-step cost by phase", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} (cpu, torch "
             f"{torch.__version__}, 1 thread); `Recorder` defaults (`layers_every=1`), SGD with momentum, "
             f"{args.steps} timed steps ({args.rounds} interleaved rounds, 20 warm-up steps each); mean thread CPU time per step in ms, inclusive "
             "(indented rows are part of the row above). *pass*: the previous code path (the "
             "`grad_norm_applied` pass on every step); *clip*: `clip_grad_norm_(max_norm=1)` in every step.", ""]
    with tempfile.TemporaryDirectory() as tmp:
        for label, factory in (("2-layer MLP (784-256-10, batch 64)", mlp), ("small CNN (2 conv + linear, "
                                                                               "28x28, batch 32)", cnn)):
            model, _ = factory()
            # Interleaved rounds, so the shared machine's load swings hit every variant alike.
            res: dict[tuple[str, bool], dict[str, float]] = {k: defaultdict(float) for k in cols}
            for _ in range(args.rounds):
                for v, c in cols:
                    for name, t in profile(factory, v, c, args.steps // args.rounds, Path(tmp)).items():
                        res[(v, c)][name] += t / args.rounds
            lines += [f"## {label}: {sum(1 for _ in model.parameters())} tensors, "
                      f"{sum(p.numel() for p in model.parameters()):,} parameters", "",
                      "| phase | " + " | ".join(f"{v}{' + clip' if c else ''}" for v, c in cols) + " |",
                      "|---|" + "---:|" * len(cols)]
            for name in ("whole step", *(p[0] for p in PHASES)):
                cells = [f"{1e3 * res[k].get(name, 0.0):.3f}" for k in cols]
                lines.append(f"| {name.replace('  ', '&nbsp;&nbsp;')} | " + " | ".join(cells) + " |")
            rec_ms = {k: sum(res[k].get(n, 0.0) for n in TOP) for k in cols}
            lines += ["| recorder total (" + " + ".join(TOP) + ") | "
                      + " | ".join(f"{1e3 * rec_ms[k]:.3f}" for k in cols) + " |", ""]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "recorder_profile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
