"""The third set's runs, fixed before any of them was trained or graded.

Fourteen bugs as people write them into a training loop (each on two of the
six tasks) and fifteen healthy runs with shapes that look alarming but are
normal (warm restarts, ReduceLROnPlateau drops, batch size 4, a two-phase
unfreeze, sparse logging, long warmup, label smoothing, heavy dropout,
scaled gradient accumulation, 60 and 20,000 steps): a third of the set.
"""

from __future__ import annotations

import dataclasses
import math
import random

from benchmarks.third.loops import Scenario as S
from benchmarks.third.models import WIDTHS

BUGGY = (
    S("nozero-mixer", "mixer", 11, 300, "no_zero_grad", optimizer="sgd", lr=0.01),
    S("nozero-resreg", "resreg", 12, 400, "no_zero_grad", optimizer="momentum", lr=0.005),
    S("softmax-moe", "moe", 13, 600, "softmax_ce", lr=3e-3),
    S("softmax-sepconv", "sepconv", 14, 400, "softmax_ce", lr=3e-3),
    S("trainmode-bag", "bag", 15, 400, "eval_missing", lr=3e-3, dropout=0.5),
    S("trainmode-mixer", "mixer", 16, 300, "eval_missing", lr=2e-3, dropout=0.5),
    S("perbatch-tagger", "tagger", 17, 500, "sched_per_batch", optimizer="momentum", lr=0.05,
      schedule="step_epoch"),
    S("perbatch-resreg", "resreg", 18, 600, "sched_per_batch", lr=3e-3, schedule="step_epoch"),
    S("shuffled-moe", "moe", 19, 500, "labels_shuffled"),
    S("shuffled-sepconv", "sepconv", 20, 300, "labels_shuffled", lr=2e-3),
    S("raw-moe", "moe", 21, 400, "unnormalized"),
    S("raw-resreg", "resreg", 22, 400, "unnormalized", optimizer="sgd", lr=1e-3),
    S("subset-bag", "bag", 23, 400, "optimizer_subset", lr=3e-3),
    S("subset-tagger", "tagger", 24, 400, "optimizer_subset", lr=3e-3),
    S("sum-sepconv", "sepconv", 25, 300, "reduction_sum", optimizer="momentum", lr=0.05),
    S("sum-moe", "moe", 26, 300, "reduction_sum", optimizer="sgd", lr=0.1),
    S("accum-mixer", "mixer", 27, 300, "accum_unscaled", optimizer="sgd", lr=0.05, batch=16, accum=8),
    S("accum-bag", "bag", 28, 300, "accum_unscaled", optimizer="momentum", lr=0.02, batch=16, accum=8),
    S("detach-sepconv", "sepconv", 29, 300, "detached_stem", lr=2e-3),
    S("detach-tagger", "tagger", 30, 400, "detached_stem", lr=3e-3),
    S("restart-resreg", "resreg", 31, 600, "restart", lr=2e-3),
    S("restart-mixer", "mixer", 32, 400, "restart", optimizer="adamw", lr=2e-3),
    S("sorted-bag", "bag", 33, 640, "class_sorted"),
    S("sorted-moe", "moe", 34, 800, "class_sorted"),
    S("clip-mixer", "mixer", 35, 300, "tiny_clip", optimizer="sgd", lr=0.05),
    S("clip-resreg", "resreg", 36, 400, "tiny_clip", optimizer="momentum", lr=0.01),
    S("leak-moe", "moe", 37, 400, "target_leak", lr=3e-3),
    S("leak-sepconv", "sepconv", 38, 300, "target_leak", lr=3e-3),
)

HEALTHY = (
    S("restarts-mixer", "mixer", 41, 800, lr=2e-3, schedule="warm_restarts"),
    S("restarts-resreg", "resreg", 42, 1200, optimizer="adamw", lr=1e-3, schedule="warm_restarts"),
    S("onplateau-bag", "bag", 43, 600, lr=3e-3, schedule="on_plateau"),
    S("batch4-moe", "moe", 44, 1500, lr=3e-4, batch=4),
    S("batch4-tagger", "tagger", 45, 1000, lr=5e-4, batch=4),
    S("unfreeze-sepconv", "sepconv", 46, 600, lr=2e-3, unfreeze_at=0.4),
    S("sparse-tagger", "tagger", 47, 2000, lr=3e-3, log_every=25, layers_every=25),
    S("warmup-mixer", "mixer", 48, 600, optimizer="adamw", lr=3e-3, schedule="warmup_cosine"),
    S("smooth-moe", "moe", 49, 600, lr=3e-3, label_smoothing=0.2),
    S("dropout-bag", "bag", 50, 500, lr=3e-3, dropout=0.5),
    S("accum-sepconv", "sepconv", 51, 400, optimizer="momentum", lr=0.02, batch=16, accum=4),
    S("long-resreg", "resreg", 52, 20_000, lr=5e-4, layers_every=100, evals=40),
    S("short-resreg", "resreg", 53, 60, lr=5e-3, evals=6),
    S("momentum-tagger", "tagger", 54, 800, optimizer="momentum", lr=0.05),
    S("longish-bag", "bag", 55, 5_000, optimizer="adamw", lr=1e-3, layers_every=50),
)

RUNS = BUGGY + HEALTHY

DEFAULT_BATCH = S.__dataclass_fields__["batch"].default


def redraw(sc: S, rng: random.Random) -> S:
    """``sc`` at another length, width, learning rate and batch size, each within the scenario's intent.

    The length is scaled by a factor drawn log-uniformly from [0.6, 1.8] (at least 40 steps; the
    evaluation count, warmup, restart, unfreeze point and schedule period are fractions of the
    length, so they keep their place in the run); the hidden width by one of 0.5, 1, 1.5 or 2; the
    learning rate by a factor log-uniform in [0.5, 2]; the batch size, where the catalog leaves it
    at its default (64), is one of 32, 64 or 128, and where the catalog names a small one (4, or 16
    under accumulation, the run's point) it is that or twice that, so it stays small. Bug, optimizer,
    schedule, dropout, accumulation count and logging intervals are the catalog's.
    """
    steps = max(40, round(sc.steps * math.exp(rng.uniform(math.log(0.6), math.log(1.8)))))
    width = int(WIDTHS[sc.task] * rng.choice((0.5, 1.0, 1.5, 2.0)))
    lr = float(f"{sc.lr * math.exp(rng.uniform(math.log(0.5), math.log(2.0))):.3g}")
    batch = rng.choice((32, 64, 128)) if sc.batch == DEFAULT_BATCH else sc.batch * rng.choice((1, 2))
    return dataclasses.replace(sc, steps=steps, width=width, lr=lr, batch=batch)


def draw(seed_shift: int = 0, vary: bool = False) -> tuple[S, ...]:
    """The catalog with every seed shifted by ``seed_shift`` (new data, initialisation, batch order and
    label permutation: all of them derive from the run's seed), each run redrawn by :func:`redraw` when
    ``vary``, from a generator seeded by the run's shifted seed alone; ``draw()`` is :data:`RUNS`. Each fresh
    draw's shift is in ``benchmarks/_accuracy/draws.py``."""
    out = []
    for sc in RUNS:
        sc = dataclasses.replace(sc, seed=sc.seed + seed_shift)
        out.append(redraw(sc, random.Random(sc.seed * 104_729 + 17)) if vary else sc)
    return tuple(out)
