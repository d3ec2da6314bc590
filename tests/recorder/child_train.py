"""A small training script the recorder tests run as a real child process.

Prints ``step N`` after each recorded step (flushing stdout), so a parent can
kill it at a known point; ``--crash-at`` raises inside the loop.
"""

from __future__ import annotations

import argparse
import resource
import signal
import sys
import time

import torch
from torch import nn

from recorders.torch import Recorder


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--flush-every", type=int, default=10)
    ap.add_argument("--flush-seconds", type=float, default=30.0)
    ap.add_argument("--crash-at", type=int, default=None)
    ap.add_argument("--start-step", type=int, default=None)
    ap.add_argument("--no-with", action="store_true")
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--fsize-limit", type=int, default=None)
    ap.add_argument("--attempt", type=int, default=1)
    ap.add_argument("--extra-layers", type=int, default=0, help="more hidden layers: more layer rows per step")
    ap.add_argument("--slow-disk", type=float, default=0.0, help="seconds every part write sleeps")
    args = ap.parse_args()
    if args.slow_disk:
        slow_disk(args.slow_disk)
    torch.set_num_threads(1)
    if args.fsize_limit is not None:
        # Without ignoring SIGXFSZ the kernel would kill the process instead of failing the write.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize_limit, args.fsize_limit))
    torch.manual_seed(0)
    extra = [m for _ in range(args.extra_layers) for m in (nn.Linear(64, 64), nn.Tanh())]
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), *extra, nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(128, 16), torch.randn(128, 1)
    rec = Recorder(args.run_dir, model, opt, config={"attempt": args.attempt}, seed=0,
                   flush_every=args.flush_every, flush_seconds=args.flush_seconds,
                   start_step=args.start_step, resume=args.attempt > 1 or args.start_step is not None)
    first = args.start_step or 0
    if args.no_with:
        train(rec, model, opt, x, y, first, args)
        rec.close()
    else:
        with rec:
            train(rec, model, opt, x, y, first, args)
    print(f"done {len(rec.warnings)} warnings", flush=True)
    for w in rec.warnings:
        print("warning:", w, flush=True)
    return 0


def train(rec, model, opt, x, y, first, args) -> None:
    for step in range(first, args.steps):
        if step == args.crash_at:
            raise ValueError(f"boom at step {step}")
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        rec.step(loss, attempt=args.attempt)
        print(f"step {step} unwritten {rec.summary()['unwritten_steps']}", flush=True)
        if args.sleep:
            time.sleep(args.sleep)


def slow_disk(seconds: float) -> None:
    """Every part write sleeps first, as on a slow or overloaded disk (the writer thread's problem)."""
    from recorders import _parts

    real = _parts.write_part

    def slow(*a, **k):
        time.sleep(seconds)
        return real(*a, **k)

    _parts.write_part = slow


if __name__ == "__main__":
    sys.exit(main())
