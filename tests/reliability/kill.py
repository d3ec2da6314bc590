"""Kill campaign: SIGKILL a real training process at random moments.

Three kinds of moment: a random time after training started, the window
between a part's temp file being written and its rename, and the same
window for run.json. After each kill the run must be readable by runlens,
conform to the format, hold no unreadable part, and have lost no row that
the recorder could have flushed: every step up to the last recorded one is
there, and at most the buffered and queued steps (``6 * flush_every``: the
buffer, the batch being written and the writer thread's queue of 4) handed
to the recorder are missing.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import _harness as h

MODES = ("random", "replace-part", "replace-meta")


@dataclass(frozen=True)
class KillTrial:
    mode: str
    flush_every: int
    handed: int  # steps the recorder had been handed when killed
    recorded: int  # steps runlens reads back
    readable: bool
    unreadable_parts: int
    rows_lost_beyond_buffer: int
    run_json_valid: bool
    format_ok: bool
    detail: str = ""
    before_first_meta: bool = False  # killed inside the very first run.json write: no run yet, nothing lost


def kill_trial(workdir: Path, rng: random.Random, mode: str, zygote: h.Zygote) -> KillTrial:
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    run, progress, marker = workdir / "run", workdir / "progress", workdir / "marker"
    flush_every = rng.choice([1, 2, 5, 10, 40])
    flush_seconds = rng.choice([0.05, 0.3, 30.0])
    args = ["--flush-every", str(flush_every), "--flush-seconds", str(flush_seconds),
            "--layers-every", str(rng.choice([1, 3])), "--seed", str(rng.randrange(1000))]
    if mode != "random":
        # a random window, so kills land early and late in the run
        args += ["--pause-in", mode, "--marker", str(marker), "--pause-at", str(rng.randint(1, 30 if mode == "replace-part" else 6))]
    proc = zygote.spawn(run, progress, *args)
    try:
        # a stall in the very first run.json write comes before any step
        started = h.wait_for(lambda: len(h.progress_steps(progress)) > 0 or _lines(marker) >= 1
                             or proc.poll() is not None, 120)
        if mode == "random":
            h.wait_for(lambda: proc.poll() is not None, rng.uniform(0.0, 1.5))
        else:
            h.wait_for(lambda: _lines(marker) >= 1 or proc.poll() is not None, 120)
    finally:
        h.sigkill(proc)
    if not started:
        return KillTrial(mode, flush_every, 0, 0, False, 0, 0, False, False, "child never started")
    return _verify(run, progress, mode, flush_every)


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _verify(run: Path, progress: Path, mode: str, flush_every: int) -> KillTrial:
    handed = h.progress_steps(progress)
    if not (run / "run.json").exists() and not handed and not h.unreadable_parts(run):
        return KillTrial(mode, flush_every, 0, 0, True, 0, 0, True, True, "", before_first_meta=True)
    bad_parts = h.unreadable_parts(run)
    json_ok = h.run_json_valid(run)
    problems = h.format_problems(run) if (run / "run.json").exists() else ["no run.json"]
    try:
        steps = h.recorded_steps(run)
        readable = True
    except Exception as exc:  # noqa: BLE001 - the figure is "readable or not"
        return KillTrial(mode, flush_every, len(handed), 0, False, len(bad_parts), len(handed),
                         json_ok, not problems, f"load_run failed: {exc}")
    last_handed = handed[-1] if handed else -1
    last_recorded = steps[-1] if steps else -1
    gaps = (last_recorded + 1) - len(steps) if steps else 0
    # Unwritten at a kill: the buffer, the batch the writer thread is writing and its queue of
    # 4 batches (recorders.writer: rows are handed to a background thread), flush_every rows each.
    beyond = max(0, (last_handed - last_recorded) - flush_every * 6) + max(0, gaps)
    return KillTrial(mode, flush_every, len(handed), len(steps), readable, len(bad_parts), beyond,
                     json_ok, not problems, "; ".join(problems[:3] + bad_parts[:3]))


def campaign(workdir: Path, trials: int, seed: int = 0) -> list[KillTrial]:
    rng = random.Random(seed)
    results = []
    with h.Zygote() as zygote:
        for i in range(trials):
            mode = MODES[i % len(MODES)]
            results.append(kill_trial(workdir / f"t{i:04d}", rng, mode, zygote))
            shutil.rmtree(workdir / f"t{i:04d}", ignore_errors=True)
    return results


def figures(results: list[KillTrial]) -> dict[str, object]:
    n = len(results)
    return {
        "kills": n,
        "kills during a part rename window": sum(r.mode == "replace-part" for r in results),
        "kills during a run.json rewrite window": sum(r.mode == "replace-meta" for r in results),
        "kills inside the very first run.json write (no run yet, no step lost)":
            sum(r.before_first_meta for r in results),
        "runs readable (must be all)": f"{sum(r.readable for r in results)} / {n}",
        "runs conforming to format v1": f"{sum(r.format_ok for r in results)} / {n}",
        "parts unreadable (must be 0)": sum(r.unreadable_parts for r in results),
        "rows lost beyond the unflushed buffer (must be 0)": sum(r.rows_lost_beyond_buffer for r in results),
        "run.json valid (must be all)": f"{sum(r.run_json_valid for r in results)} / {n}",
        "steps handed to the recorder / read back": f"{sum(r.handed for r in results)} / {sum(r.recorded for r in results)}",
    }
