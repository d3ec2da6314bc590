"""A real training process for the reliability campaign (run as a subprocess).

    python _train_child.py RUN_DIR PROGRESS_FILE --steps N --flush-every K
        [--flush-seconds S] [--pause-in replace-part|replace-meta] [--marker FILE]
        [--layers-every L] [--step-sleep SEC]

After every ``rec.step`` returns it appends the step number to PROGRESS_FILE
with one unbuffered ``os.write``, so the parent knows exactly which rows the
recorder had been handed when it SIGKILLs this process. ``--pause-in`` makes
the next atomic rename of a part (or of run.json) announce itself in MARKER
and stall, so the parent's kill lands inside that window: between the temp
file being written and being renamed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _install_pause(kind: str, marker: str, nth: int) -> None:
    real_replace = os.replace
    seen = 0

    def stalling_replace(src, dst, *args, **kwargs):
        nonlocal seen
        name = os.path.basename(os.fspath(src))
        is_part = name.startswith(".tmp-r")
        if (kind == "replace-part" and is_part) or (kind == "replace-meta" and not is_part):
            seen += 1
            if seen == nth:
                with open(marker, "a") as f:
                    f.write(f"{name}\n")
                time.sleep(30)  # the parent kills us here: temp file fully written, not yet renamed
        return real_replace(src, dst, *args, **kwargs)

    os.replace = stalling_replace


def _count_warnings() -> list[str]:
    import warnings

    caught: list[str] = []
    warnings.simplefilter("always")
    warnings.showwarning = lambda message, *a, **k: caught.append(str(message))
    return caught


def _install_slow_io(delay: float) -> None:
    real_replace = os.replace

    def slow_replace(src, dst, *args, **kwargs):
        time.sleep(delay)
        return real_replace(src, dst, *args, **kwargs)

    os.replace = slow_replace


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("run_dir")
    p.add_argument("progress")
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--flush-every", type=int, default=10)
    p.add_argument("--flush-seconds", type=float, default=30.0)
    p.add_argument("--layers-every", type=int, default=1)
    p.add_argument("--pause-in", choices=["replace-part", "replace-meta"])
    p.add_argument("--marker")
    p.add_argument("--pause-at", type=int, default=1, help="stall at the N-th matching rename")
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--slow-io", type=float, default=0.0, help="seconds added to every rename")
    p.add_argument("--report", action="store_true", help="print a JSON summary on exit")
    args = p.parse_args(argv)
    caught = _count_warnings() if args.report else None
    if args.slow_io:
        _install_slow_io(args.slow_io)

    import torch
    from torch import nn

    from recorders.torch import Recorder

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(256, 16)
    y = (x[:, :4].argmax(dim=1))
    if args.pause_in:
        _install_pause(args.pause_in, args.marker, args.pause_at)
    step_times: list[float] = []
    fd = os.open(args.progress, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    with Recorder(args.run_dir, model, opt, config={"campaign": True}, seed=args.seed,
                  flush_every=args.flush_every, flush_seconds=args.flush_seconds,
                  layers_every=args.layers_every) as rec:
        for step in range(args.steps):
            t0 = time.perf_counter()
            idx = torch.randint(0, 256, (32,))
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            rec.step(loss)
            if step % 25 == 0:
                rec.validation(float(loss.detach()) * 1.1)
            os.write(fd, f"{step}\n".encode())
            step_times.append(time.perf_counter() - t0)
            if args.step_sleep:
                time.sleep(args.step_sleep)
    if caught is not None:
        import json

        step_times.sort()
        print(json.dumps({"steps_done": len(step_times), "warnings": len(caught),
                          "step_ms_median": 1000 * step_times[len(step_times) // 2] if step_times else None,
                          "step_ms_max": 1000 * step_times[-1] if step_times else None,
                          "first_warning": caught[0] if caught else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
