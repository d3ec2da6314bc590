"""The held-out runs and what each fault's label says, fixed before any scoring.

A :class:`Fault` names the curve label(s) accepted, the finding codes the
engine must report (``must``), codes true of such a run but beside the point
(``may``: neither required nor a false alarm), and the codes that name the
injected fault (``first``: one of them should lead the findings). Every code
outside ``must`` and ``may`` counts as a false alarm when it fires.

Each non-healthy curve label has a finding code of its own (``overfitting``,
``underfitting``, ``unstable``, ``diverged``), so those codes are required
wherever the curve is; a loss sitting at ln K is ``loss_at_chance``
(required for the chance fault, allowed where a flat loss sits at ln K).
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass

from benchmarks.heldout.tasks import Setup
from benchmarks.heldout.train import Run

BLOWUP_MAY = ("nonfinite_gradient", "exploding_gradients", "learning_rate_too_high", "weight_norm_growth",
              "loss_spikes", "late_loss_variance", "unstable", "grad_norm_spike")


@dataclass(frozen=True)
class Fault:
    curve_ok: tuple[str, ...]
    must: tuple[str, ...]
    may: tuple[str, ...] = ()
    first: tuple[str, ...] = ()
    why: str = ""


CRASH_CODE = {"shape": "crash_shape_mismatch", "hidden": "crash_shape_mismatch", "dtype": "crash_dtype_mismatch",
              "inplace": "crash_dtype_mismatch", "device": "crash_device_mismatch", "oom": "crash_oom",
              "index": "crash_other"}

FAULTS = {
    "healthy": Fault(("healthy",), ()),
    "overfitting": Fault(("overfitting",), ("overfitting",), first=("overfitting",)),
    "underfitting": Fault(("underfitting",), ("underfitting",),
                          may=("learning_rate_too_low", "plateau", "loss_at_chance"),
                          first=("underfitting",), why="weight decay so strong the weights stay pinned near 0"),
    "chance": Fault(("underfitting",), ("underfitting", "loss_at_chance"), may=("plateau",),
                    first=("loss_at_chance", "underfitting"),
                    why="labels independent of the inputs, started above ln K: the loss falls to ln K, stays"),
    "lr_too_high": Fault(("unstable",), ("learning_rate_too_high", "unstable"),
                         may=("loss_spikes", "late_loss_variance", "weight_norm_growth", "exploding_gradients",
                              "grad_norm_spike"),
                         first=("learning_rate_too_high",)),
    "diverged": Fault(("diverged",), ("diverged",), may=BLOWUP_MAY + ("nonfinite_loss",),
                      first=("learning_rate_too_high", "diverged", "nonfinite_loss")),
    "vanishing": Fault(("underfitting",), ("vanishing_gradients", "underfitting"),
                       may=("learning_rate_too_low", "plateau", "loss_at_chance"), first=("vanishing_gradients",)),
    # A run stopped by the watchdog as its gradient explodes may end before its loss has
    # grown: its curve is accepted as diverged or unstable, decided here, before scoring.
    "exploding": Fault(("diverged", "unstable"), ("exploding_gradients",),
                       may=tuple(c for c in BLOWUP_MAY if c != "exploding_gradients") + ("nonfinite_loss", "diverged"),
                       # Made like the diverged runs, by a mid-run raise of the learning rate: the
                       # rate is an accepted first code for both (changed after scoring, see the page).
                       first=("exploding_gradients", "learning_rate_too_high")),
    "dead_layer": Fault(("healthy",), ("dead_layers",), first=("dead_layers",)),
    "lr_too_low": Fault(("underfitting",), ("learning_rate_too_low", "underfitting"),
                        may=("plateau", "loss_at_chance"),
                        first=("learning_rate_too_low",)),
    "plateau": Fault(("healthy",), ("plateau",), may=("learning_rate_too_low",), first=("plateau",)),
    # The level is fine and only the noise grew: "unstable" and "healthy" are both accepted
    # readings of the curve (decided before scoring).
    "late_variance": Fault(("unstable", "healthy"), ("late_loss_variance",), may=("unstable", "loss_spikes"),
                           first=("late_loss_variance",)),
    "spikes": Fault(("healthy",), ("loss_spikes",), may=("grad_norm_spike",), first=("loss_spikes",)),
}


def crash_fault(kind: str) -> Fault:
    return Fault(("healthy",), (CRASH_CODE[kind],), first=(CRASH_CODE[kind],))


def S(task: str, seed: int, **kw) -> Setup:
    return Setup(task=task, seed=seed, **kw)


def _healthy() -> list[tuple[str, Run]]:
    runs = [
        Run("h-tab-adamw-onecycle", S("tabular", 1, width=128), "adamw", 3e-3, 1e-2, "onecycle", steps=1500),
        Run("h-tab-rmsprop-linear-clip", S("tabular", 2), "rmsprop", 1e-3, schedule="linear", steps=800, clip=1.0),
        Run("h-tab-nesterov-accum4", S("tabular", 3), "nesterov", 0.02, steps=600, batch=32, accum=4),
        Run("h-tab-adamw-6000", S("tabular", 4, width=64), "adamw", 1e-3, 1e-2, "linear", steps=6000,
            eval_every=200, layers_every=10),
        Run("h-tab-finite-noisy", S("tabular", 5, n_train=8192, label_noise=0.1), "adamw", 1e-3, steps=2000,
            eval_every=50, layers_every=5),
        Run("h-tab-sgd-onecycle-200", S("tabular", 6), "sgd", 0.3, schedule="onecycle", steps=200, eval_every=20),
        Run("h-vit-adamw-onecycle", S("vit", 7, width=32), "adamw", 3e-3, 1e-2, "onecycle", steps=600),
        Run("h-vit-bf16-linear", S("vit", 8, width=32), "adamw", 2e-3, schedule="linear", steps=400, bf16=True),
        Run("h-gru-adam-clip", S("gru_lm", 9, width=48), "adam", 1e-2, schedule="linear", steps=500, clip=1.0),
        Run("h-gru-adam-accum2", S("gru_lm", 10, width=48), "adam", 1e-2, schedule="linear", steps=800, accum=2,
            batch=32, clip=1.0),
        Run("h-vae-adam-onecycle", S("vae", 11), "adam", 3e-3, schedule="onecycle", steps=1000, eval_every=40),
        Run("h-vae-rmsprop-2000", S("vae", 12), "rmsprop", 3e-4, schedule="linear", steps=2000, eval_every=50,
            layers_every=5),
        Run("h-nce-adamw-onecycle", S("infonce", 13), "adamw", 2e-3, 1e-2, "onecycle", steps=600),
        Run("h-nce-bf16-onecycle", S("infonce", 14), "adamw", 3e-3, schedule="onecycle", steps=400, bf16=True),
        Run("h-rnn-adam-clip", S("rnn", 15, width=32), "adam", 2e-3, steps=600, clip=1.0),
        Run("h-deep-tanh-adam", S("deep", 16, width=32, depth=4, activation="tanh"), "adam", 1e-3, steps=800),
    ]
    return [("healthy", r) for r in runs]


def _faults() -> list[tuple[str, Run]]:
    F = []
    F += [("overfitting", r) for r in (
        Run("o-tab-128-noisy", S("tabular", 21, width=256, n_train=128, label_noise=0.3), "adamw", 3e-4,
            steps=1500, batch=32, eval_every=10),
        Run("o-vit-128", S("vit", 22, width=48, n_train=128, label_noise=0.3), "adam", 5e-4, steps=1000,
            batch=32, eval_every=20),
        Run("o-gru-48-seqs", S("gru_lm", 23, width=96, n_train=48), "adam", 3e-3, steps=1000, batch=16,
            eval_every=20),
        Run("o-tab-256-rmsprop", S("tabular", 24, width=256, n_train=256, label_noise=0.3), "rmsprop", 2e-4,
            steps=2000, batch=32, eval_every=20, layers_every=5))]
    F += [("underfitting", r) for r in (
        Run("u-tab-decay", S("tabular", 31), "adamw", 1e-2, 50.0, steps=600),
        Run("u-vit-decay", S("vit", 32, width=32), "adamw", 1e-2, 80.0, steps=400),
        Run("u-gru-decay", S("gru_lm", 33, width=48), "adamw", 5e-3, 150.0, steps=400))]
    F += [("chance", r) for r in (
        Run("c-tab-random-labels", S("tabular", 41, random_labels=True, head_gain=8.0), "adamw", 1e-3, steps=800),
        Run("c-vit-random-labels", S("vit", 42, width=32, random_labels=True, head_gain=10.0), "adam", 1e-3,
            steps=500),
        Run("c-gru-random-tokens", S("gru_lm", 43, width=48, random_labels=True, head_gain=6.0), "adam", 3e-3,
            steps=400))]
    return F


def _faults_2() -> list[tuple[str, Run]]:
    F = []
    F += [("lr_too_high", r) for r in (
        Run("hi-vit-adamw-0.03", S("vit", 52, width=32), "adamw", 0.03, steps=600),
        Run("hi-deep-tanh-nesterov-0.5", S("deep", 53, depth=3, activation="tanh"), "nesterov", 0.5, steps=800,
            clip=1.0),
        Run("hi-vae-rmsprop-0.03", S("vae", 54), "rmsprop", 0.03, steps=600, clip=1.0),
        Run("hi-gru-rmsprop-0.1", S("gru_lm", 55, width=48), "rmsprop", 0.1, steps=500, clip=1.0))]
    F += [("diverged", r) for r in (
        # A schedule that raises the learning rate 100-300x mid-run (a misplaced decimal).
        Run("d-vae-sgd-step", S("vae", 61), "sgd", 0.01, schedule="step_up", change_at=0.5, change_factor=100.0,
            steps=300),
        Run("d-deep-relu-sgd-step", S("deep", 62, depth=3, activation="relu"), "sgd", 0.05, schedule="step_up",
            change_at=0.5, change_factor=200.0, steps=300),
        Run("d-rnn-nesterov-step", S("rnn", 63, width=32), "nesterov", 0.01, schedule="step_up", change_at=0.4,
            change_factor=100.0, steps=300),
        Run("d-vae-rmsprop-step", S("vae", 64), "rmsprop", 1e-3, schedule="step_up", change_at=0.6,
            change_factor=300.0, steps=400))]
    F += [("vanishing", r) for r in (
        Run("v-deep-sigmoid8", S("deep", 71, width=32, depth=8, activation="sigmoid", init_gain=0.5), "sgd",
            0.5, steps=600),
        Run("v-deep-tanh12", S("deep", 72, width=32, depth=12, activation="tanh", init_gain=0.4), "nesterov",
            0.05, steps=800),
        Run("v-deep-sigmoid10-1500", S("deep", 73, width=32, depth=10, activation="sigmoid", init_gain=0.7),
            "sgd", 1.0, steps=1500, layers_every=5))]
    F += [("exploding", r) for r in (
        Run("x-rnn-sgd", S("rnn", 81, width=32), "sgd", 0.05, schedule="step_up", change_at=0.5,
            change_factor=20.0, steps=400, stop_grad_norm=1e7),
        Run("x-rnn-nesterov", S("rnn", 82, width=32), "nesterov", 0.02, schedule="step_up", change_at=0.5,
            change_factor=10.0, steps=400, stop_grad_norm=1e7),
        Run("x-rnn-sgd-wide", S("rnn", 83, width=64), "sgd", 0.05, schedule="step_up", change_at=0.6,
            change_factor=10.0, steps=500, stop_grad_norm=1e7))]
    return F


def _faults_3() -> list[tuple[str, Run]]:
    F = []
    F += [("dead_layer", r) for r in (
        Run("dl-deep-first-frozen", S("deep", 91, width=128, depth=2), "adamw", 3e-3, steps=1000, frozen_first=True),
        Run("dl-vit-embed-frozen", S("vit", 92, width=32), "adamw", 2e-3, steps=500, frozen_first=True),
        Run("dl-gru-embed-frozen", S("gru_lm", 93, width=48), "adam", 5e-3, steps=500, frozen_first=True),
        Run("dl-vae-encoder-frozen", S("vae", 94), "adam", 2e-3, steps=800, frozen_first=True, eval_every=40))]
    F += [("lr_too_low", r) for r in (
        Run("lo-tab-sgd-1e-5", S("tabular", 101), "sgd", 1e-5, steps=600),
        Run("lo-vit-adam-1e-7", S("vit", 102, width=32), "adam", 1e-7, steps=400),
        Run("lo-vae-nesterov-1e-6", S("vae", 103), "nesterov", 1e-6, steps=600))]
    F += [("plateau", r) for r in (
        Run("p-tab-adam-step", S("tabular", 111), "adam", 1e-6, schedule="step_up", change_at=0.4,
            change_factor=1000.0, steps=1000),
        Run("p-gru-adamw-step", S("gru_lm", 112, width=48), "adamw", 1e-6, schedule="step_up", change_at=0.5,
            change_factor=3000.0, steps=800),
        Run("p-nce-adam-step", S("infonce", 113), "adam", 1e-6, schedule="step_up", change_at=0.3,
            change_factor=1000.0, steps=800))]
    F += [("late_variance", r) for r in (
        Run("lv-tab-batch2", S("tabular", 121), "adamw", 1e-3, steps=1200, batch=128, late_batch=2),
        Run("lv-vae-batch2", S("vae", 122), "adam", 1e-3, steps=1000, batch=128, late_batch=2, eval_every=40),
        Run("lv-vit-batch2", S("vit", 123, width=32), "adamw", 2e-3, steps=600, batch=64, late_batch=2))]
    F += [("spikes", r) for r in (
        Run("s-tab-corrupt150", S("tabular", 131), "adamw", 1e-3, steps=900, spike_every=150),
        Run("s-vit-corrupt120", S("vit", 132, width=32), "adamw", 2e-3, steps=600, spike_every=120),
        Run("s-gru-corrupt100", S("gru_lm", 133, width=48), "adam", 5e-3, steps=600, spike_every=100))]
    return F


def _crashes() -> list[tuple[str, Run]]:
    spec = [("shape", "vit", 300), ("hidden", "gru_lm", 250), ("dtype", "tabular", 200), ("inplace", "vae", 300),
            ("device", "infonce", 250), ("oom", "tabular", 300), ("index", "gru_lm", 200)]
    return [(f"crash:{kind}", Run(f"k-{kind}-{task}", S(task, 140 + i, width=48 if task == "gru_lm" else 32),
                                  "adamw", 2e-3, steps=at + 100, crash=kind, crash_at=at))
            for i, (kind, task, at) in enumerate(spec)]


RUNS: list[tuple[str, Run]] = _healthy() + _faults() + _faults_2() + _faults_3() + _crashes()


def runs(seed_offset: int = 0) -> list[tuple[str, Run]]:
    """The catalog with every seed shifted by ``seed_offset``: same definitions, new draws.

    A fresh set (``seed_offset`` > 0) repeats the held-out set on data, initializations and
    batches nobody has looked at, so a set that has been looked at can be replaced by one
    that has not, without changing what a fault is.
    """
    if not seed_offset:
        return list(RUNS)
    return [(kind, dataclasses.replace(run, setup=dataclasses.replace(run.setup, seed=run.setup.seed + seed_offset)))
            for kind, run in RUNS]


def varied(seed_offset: int) -> list[tuple[str, Run]]:
    """The catalog redrawn at other lengths and sizes, as well as other seeds.

    Each run's step count is scaled by a factor drawn log-uniformly from [0.6, 1.8]
    (evaluation interval, crash step and spike interval with it, so a run keeps its
    number of evaluations and the fault keeps its place in the run), its width by one
    of 0.5, 1, 1.5 or 2, and its layer-row interval is one of 1, 2 or 5. Drawn from the
    run's own shifted seed, so the set is fixed by ``seed_offset`` alone.
    """
    out = []
    for kind, run in runs(seed_offset):
        rng = random.Random(run.setup.seed * 104_729 + 17)
        f = math.exp(rng.uniform(math.log(0.6), math.log(1.8)))
        width = max(8, int(run.setup.width * rng.choice((0.5, 1.0, 1.5, 2.0))))
        steps = max(100, int(run.steps * f))
        scale = steps / run.steps
        out.append((kind, dataclasses.replace(
            run, steps=steps, eval_every=max(5, round(run.eval_every * scale)),
            layers_every=rng.choice((1, 2, 5)),
            crash_at=None if run.crash_at is None else int(run.crash_at * scale),
            spike_every=None if run.spike_every is None else max(20, round(run.spike_every * scale)),
            setup=dataclasses.replace(run.setup, width=width))))
    return out


def fault_of(kind: str) -> Fault:
    return crash_fault(kind.split(":", 1)[1]) if kind.startswith("crash:") else FAULTS[kind]
