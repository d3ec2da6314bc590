"""Short real runs of the held-out generator (``benchmarks/heldout``), one pair per failure class.

Each pair is a run made with a fault and its twin: the same task, model, seed
and training loop with the fault taken out. Most are the catalog's own runs
(``benchmarks/heldout/catalog.py``), shortened so that the whole set trains in
well under a minute of one CPU thread; the names say which catalog run each
comes from. ``record`` trains one into a directory with the generator's
``train`` (recorded by the public ``recorders.Recorder``) and returns what the
generator's probe measured in torch, which the tests use to check that the
run really shows its fault before they look at runlens's verdict.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.heldout.tasks import Setup  # noqa: E402
from benchmarks.heldout.train import Run, train  # noqa: E402

INF = math.inf


def S(task: str, seed: int, **kw) -> Setup:
    return Setup(task=task, seed=seed, **kw)


def _twin(run: Run, **changes) -> Run:
    return dataclasses.replace(run, name=f"{run.name}-twin", **changes)


def _pairs() -> dict[str, tuple[Run, Run]]:
    chance = Run("c-tab-random-labels", S("tabular", 41, random_labels=True, head_gain=8.0), "adamw", 1e-3,
                 steps=800)
    overfit = Run("o-tab-128-noisy", S("tabular", 21, width=256, n_train=128, label_noise=0.3), "adamw", 3e-4,
                  steps=600, batch=32, eval_every=10)
    # The quadrant task is easy: the loss falls from ~1.4 to a few thousandths. Its contrast is the
    # catalog's too-high learning rate on the same model, a run that is unstable.
    near_zero = Run("z-vit-easy", S("vit", 52, width=32), "adamw", 3e-3, steps=400)
    plateau = Run("p-tab-adam-step", S("tabular", 111), "adam", 1e-6, schedule="step_up", change_at=0.4,
                  change_factor=1000.0, steps=400)
    # Plain SGD at 0.1 trains the tabular model; 30x that from mid-run throws the loss up to a
    # higher level that it never comes back down from.
    jump = Run("j-tab-sgd-step", S("tabular", 31), "sgd", 0.1, schedule="step_up", change_at=0.5,
               change_factor=30.0, steps=400)
    diverged = Run("d-vae-sgd-step", S("vae", 61), "sgd", 0.01, schedule="step_up", change_at=0.5,
                   change_factor=100.0, steps=300)
    too_high = Run("hi-vae-rmsprop-0.03", S("vae", 54), "rmsprop", 0.03, steps=600, clip=1.0)
    exploding = Run("x-rnn-sgd", S("rnn", 81, width=32), "sgd", 0.05, schedule="step_up", change_at=0.5,
                    change_factor=20.0, steps=300, stop_grad_norm=1e7)
    vanishing = Run("v-deep-tanh12", S("deep", 72, width=32, depth=12, activation="tanh", init_gain=0.4),
                    "nesterov", 0.05, steps=300)
    late = Run("lv-tab-batch2", S("tabular", 121), "adamw", 1e-3, steps=600, batch=128, late_batch=2)
    # One corrupted batch (inputs x8, labels shuffled) late in a run that has fit its task well.
    spike = Run("gs-rnn-corrupt600", S("rnn", 15, width=32), "adam", 5e-3, steps=800, spike_every=600)
    # A dozen steps: at step 9 the learning rate is multiplied by 1e10 and the loss turns NaN.
    short_nan = Run("n-rnn-short", S("rnn", 61, width=32), "sgd", 0.01, schedule="step_up", change_at=0.7,
                    change_factor=1e10, steps=14, eval_every=4, stop_grad_norm=INF)
    # A too-high rate whose training loss looks settled: the validation loss jumps as the large
    # steps move the weights (the catalog's run; its twin at Nesterov's ordinary rate).
    settled_high = Run("hi-deep-tanh-nesterov-0.5", S("deep", 53, depth=3, activation="tanh"), "nesterov", 0.5,
                       steps=800, clip=1.0)
    # Weight decay so strong that the weights collapse toward zero and the loss sits at ln 3.
    collapse = Run("u-tab-decay", S("tabular", 31), "adamw", 1e-2, 50.0, steps=400)
    # A vision transformer sits at ln 4 for its first steps, then learns, at an unchanged rate.
    vit_start = Run("h-vit-bf16-linear", S("vit", 8, width=32), "adamw", 2e-3, schedule="linear", steps=400,
                    bf16=True)
    return {
        "settled_too_high": (settled_high, _twin(settled_high, lr=0.02)),
        "weight_collapse": (collapse, _twin(collapse, weight_decay=1e-2)),
        # No fault to take out: the "twin" is another draw (the fresh set's seed) of the same run.
        "vit_start": (vit_start, _twin(vit_start, setup=dataclasses.replace(vit_start.setup, seed=1008))),
        "chance": (chance, _twin(chance, setup=dataclasses.replace(chance.setup, random_labels=False))),
        "overfitting": (overfit, _twin(overfit, setup=dataclasses.replace(overfit.setup, n_train=None))),
        "near_zero": (near_zero, _twin(near_zero, lr=0.03, steps=600)),
        "plateau": (plateau, _twin(plateau, lr=1e-3, schedule="constant")),
        "jump": (jump, _twin(jump, schedule="constant")),
        "diverged": (diverged, _twin(diverged, schedule="constant")),
        "too_high": (too_high, _twin(too_high, lr=1e-3)),
        "exploding": (exploding, _twin(exploding, schedule="constant")),
        # Tanh's own gain (5/3) over PyTorch's default init, whose std is 1/sqrt(3 fan_in).
        "vanishing": (vanishing, _twin(vanishing, setup=dataclasses.replace(vanishing.setup, init_gain=2.5))),
        "late_variance": (late, _twin(late, late_batch=None)),
        "grad_norm_spike": (spike, _twin(spike, spike_every=None)),
        "short_nan": (short_nan, _twin(short_nan, schedule="constant")),
    }


PAIRS = _pairs()


def record(run: Run, out: Path) -> dict[str, np.ndarray]:
    """Train ``run`` into ``out`` with the generator's loop; the probe's measurements."""
    probe, raised = train(run, out)
    if raised is not None:
        raise AssertionError(f"{run.name} raised {raised} while training")
    return probe.arrays()
