"""How often runlens is right: recall, precision and false alarms on labeled runs.

    python benchmarks/accuracy.py                 # generate what is missing, evaluate, write the report
    python benchmarks/accuracy.py --evaluate-only # re-grade the runs already in benchmarks/_data/
    python benchmarks/accuracy.py --only healthy,vanishing --jobs 2

It trains a varied labeled set (benchmarks/_data/, git-ignored) with the same
building blocks as the shipped samples (``sample_runs/_training.py``) but many
more variants per label: MLPs, residual MLPs, small CNNs, GRU/LSTM, a tiny
transformer; widths and depths; SGD, SGD+momentum, Adam, AdamW; constant,
cosine, step and warm-up schedules; batch sizes 32..256; 100..3000 steps;
several seeds. Many variants are healthy, because the first promise is no
warning or error on a healthy run.

A label is the condition the run was made with, and it is only used once
``sample_runs/_verify.py`` confirms the recorded tables show the symptom
(read with pyarrow, not runlens). Variants whose data do not bear their label
out are listed as discarded instead of being graded.

Scoring, per finding code: a run labeled with the code that gets it is a true
positive, one that does not is a miss; a run where the code is neither
required nor listed as "may" (true of the data but beside the point, e.g.
weight growth in an explosion) and gets it is a false positive. Curves are
scored by a confusion matrix. The report lists every miss by run name, with
what was expected and what the engine said.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # keep sample_runs/*/ exactly the run directories
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sample_runs"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import _verify as V  # noqa: E402
from _training import Spec, run_spec  # noqa: E402
from generate import CODES  # noqa: E402

DATA = ROOT / "benchmarks" / "_data" / "accuracy"
REPORT = ROOT / "benchmarks" / "results" / "accuracy.md"
CURVES = ("healthy", "overfitting", "underfitting", "unstable", "diverged", "insufficient_data")
LOUD = ("warning", "error")


@dataclass(frozen=True)
class Variant:
    family: str
    spec: Spec
    curve: str | None  # None: the curve is not graded for this family
    status: str
    must: tuple[str, ...]
    checks: tuple
    may: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    def labels(self) -> dict:
        must = list(self.must)
        if self.spec.eval_every is None and "no_validation" not in must:
            must.append("no_validation")
        excluded = set(must) | set(self.may)
        return {"family": self.family, "curve": self.curve, "status": self.status, "must_include": must,
                "must_not_include": [c for c in CODES if c not in excluded], "may_include": list(self.may)}

    def fingerprint(self) -> str:
        blob = json.dumps({"spec": dataclasses.asdict(self.spec), "labels": self.labels(),
                           "checks": [c.__name__ for c in self.checks]}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- the labeled set ------------------------------------------------------------------------

# Configurations that train healthily on the synthetic task, per model kind:
# (model, width, depth, optimizer, lr). Each is checked (learns, settles,
# validation follows) before it is trusted as a healthy label.
HEALTHY_BASES = [
    ("mlp", 64, 2, "adam", 1e-3), ("mlp", 128, 3, "adamw", 1e-3), ("mlp", 64, 2, "momentum", 0.05),
    ("mlp", 32, 1, "sgd", 0.2), ("mlp", 256, 2, "adam", 3e-4), ("resmlp", 64, 3, "adam", 1e-3),
    ("resmlp", 128, 2, "momentum", 0.02), ("cnn", 16, 2, "adam", 2e-3), ("cnn", 32, 1, "momentum", 0.05),
    ("gru", 32, 1, "adam", 1e-2), ("lstm", 32, 1, "adam", 1e-2), ("transformer", 32, 1, "adamw", 1e-3),
    ("transformer", 32, 2, "adam", 1e-3), ("gru", 64, 1, "adamw", 5e-3),
]
SCHEDULES = ("constant", "cosine", "step", "warmup")
# Per-step cost differs by two orders of magnitude between model kinds; run
# lengths are capped so the whole set stays around ten minutes on two cores.
MAX_STEPS = {"mlp": 3000, "resmlp": 1000, "cnn": 500, "gru": 600, "lstm": 600, "transformer": 300,
             "linear": 3000, "rnn": 400}
LENGTHS = (200, 500, 1000, 2000, 3000)
BATCHES = (32, 64, 128, 256)

HEALTHY = (V.learns, V.settles, V.val_follows, V.bounded_grads, V.no_dead_layer)


def _cap(model: str, steps: int) -> int:
    return min(steps, MAX_STEPS[model])


def _layers_every(steps: int) -> int:
    # Long runs record layers every 5th step, as a user would to keep the log small.
    return 1 if steps <= 1000 else 5


def _healthy_spec(i: int, name: str, **over) -> Spec:
    model, width, depth, opt, lr = HEALTHY_BASES[i % len(HEALTHY_BASES)]
    base = dict(model=model, width=width, depth=depth, optimizer=opt, lr=lr, seed=100 + i,
                schedule=SCHEDULES[(i // 2) % len(SCHEDULES)], batch_size=BATCHES[(i + 1) % len(BATCHES)],
                steps=_cap(model, LENGTHS[i % len(LENGTHS)]), classes=(4, 3, 6)[i % 3],
                eval_every=(25, 50, 100)[i % 3])
    base["eval_every"] = max(10, min(base["eval_every"], base["steps"] // 12))
    base["layers_every"] = _layers_every(base["steps"])
    return Spec(name=name, **{**base, **over})


def healthy() -> list[Variant]:
    """Every model kind, optimizer and schedule, trained right: fresh data each step (a third round:
    epochs over 8,192 noisy examples, half clipped), plus tiny-batch runs whose every step is noisy."""
    out = []
    for i in range(3 * len(HEALTHY_BASES)):
        over = {}
        if i >= 2 * len(HEALTHY_BASES):
            # The third round trains for epochs over a finite, slightly noisy dataset (big enough
            # not to overfit in these run lengths), half of it with gradient clipping.
            over = {"n_train": 8192, "label_noise": 0.1, "clip": 1.0 if i % 2 else None}
        spec = _healthy_spec(i, f"healthy-{i:02d}-{HEALTHY_BASES[i % len(HEALTHY_BASES)][0]}", **over)
        out.append(Variant("healthy", spec, "healthy", "finished", (), HEALTHY + (V.starts_falling,)))
    # Tiny batches: every step's loss is noisy, the curve is still healthy.
    for j, (model, opt, lr, batch, steps) in enumerate([("mlp", "adam", 3e-4, 8, 2000), ("mlp", "sgd", 0.02, 16, 1500),
                                                        ("resmlp", "adamw", 3e-4, 8, 1000), ("cnn", "adam", 5e-4, 16, 500)]):
        spec = Spec(f"healthy-{42 + j:02d}-{model}-batch{batch}", model=model, optimizer=opt, lr=lr, batch_size=batch,
                    steps=steps, schedule=("cosine", "constant")[j % 2], eval_every=50, seed=150 + j,
                    layers_every=_layers_every(steps))
        out.append(Variant("healthy", spec, "healthy", "finished", (), HEALTHY + (V.starts_falling,)))
    return out


def no_validation() -> list[Variant]:
    """Healthy runs that never validate."""
    return [Variant("no_validation", _healthy_spec(i * 3, f"noval-{i:02d}-{HEALTHY_BASES[i * 3 % len(HEALTHY_BASES)][0]}",
                                                   eval_every=None), "healthy",
                    "finished", ("no_validation",), (V.learns, V.settles, V.no_validation, V.starts_falling))
            for i in range(6)]


def overfitting() -> list[Variant]:
    """128-512 noisy examples, wide models, validation on fresh data: validation bottoms out, then rises."""
    grid = [("mlp", 256, 2, 256, 0.2, 3e-4, 1000), ("mlp", 512, 3, 128, 0.3, 1e-4, 800),
            ("resmlp", 256, 2, 256, 0.2, 1.5e-4, 1000), ("mlp", 256, 2, 512, 0.3, 1e-3, 1500),
            ("cnn", 64, 2, 128, 0.3, 5e-4, 1000), ("mlp", 128, 2, 128, 0.2, 1e-3, 600),
            ("transformer", 64, 2, 128, 0.3, 5e-4, 600), ("resmlp", 128, 3, 256, 0.3, 3e-4, 1500),
            ("mlp", 256, 2, 256, 0.2, 3e-4, 2000), ("mlp", 1024, 2, 512, 0.25, 2e-4, 1200)]
    out = []
    for i, (model, w, d, n, noise, lr, steps) in enumerate(grid):
        spec = Spec(f"overfit-{i:02d}-{model}", model=model, width=w, depth=d, n_train=n, label_noise=noise,
                    lr=lr, optimizer=("adam", "adamw")[i % 2], steps=_cap(model, steps), batch_size=32,
                    eval_every=20, seed=200 + i)
        out.append(Variant("overfitting", spec, "overfitting", "finished", (), (V.overfits,)))
    return out


def lr_too_low() -> list[Variant]:
    """SGD at 1e-5..1e-4, Adam at 1e-7: healthy gradients everywhere, updates < 1e-4 of the weights, flat loss."""
    grid = [("mlp", "sgd", 1e-4, 500), ("mlp", "sgd", 3e-5, 1500), ("cnn", "sgd", 1e-4, 400),
            ("resmlp", "momentum", 1e-5, 600), ("gru", "sgd", 1e-4, 300), ("transformer", "sgd", 1e-4, 300),
            ("mlp", "adam", 1e-7, 800), ("mlp", "momentum", 1e-5, 3000), ("cnn", "adamw", 1e-7, 400),
            ("transformer", "adam", 1e-7, 300), ("lstm", "adam", 1e-7, 300)]
    return [Variant("lr_too_low", Spec(f"lrlow-{i:02d}-{m}-{o}", model=m, optimizer=o, lr=lr, steps=_cap(m, s),
                                       layers_every=_layers_every(s),
                                       batch_size=BATCHES[i % 4], seed=300 + i),
                    "underfitting", "finished", ("learning_rate_too_low",),
                    (V.flat, V.tiny_updates_healthy_grads))
            for i, (m, o, lr, s) in enumerate(grid)]


def lr_too_high() -> list[Variant]:
    """SGD/momentum far above a stable step, clipped to norm 1 so the loss stays finite and bounces."""
    grid = [("mlp", "tanh", "momentum", 1.0, 600, 256), ("mlp", "tanh", "momentum", 2.0, 600, 256),
            ("mlp", "tanh", "sgd", 12.0, 600, 256), ("resmlp", "tanh", "momentum", 1.0, 800, 128),
            ("mlp", "gelu", "sgd", 6.0, 1000, 256), ("cnn", "tanh", "momentum", 0.5, 500, 128),
            ("mlp", "tanh", "momentum", 1.0, 2000, 64), ("mlp", "relu", "momentum", 0.5, 400, 256)]
    return [Variant("lr_too_high", Spec(f"lrhigh-{i:02d}-{m}-{o}{lr:g}", model=m, activation=a, optimizer=o,
                                        lr=lr, clip=1.0, steps=_cap(m, s), batch_size=b, seed=400 + i),
                    "unstable", "finished", ("learning_rate_too_high",),
                    (V.large_updates_unsettled, V.bounded_grads), may=("late_loss_variance", "loss_spikes"))
            for i, (m, a, o, lr, s, b) in enumerate(grid)]


_BLOWUP_MAY = ("learning_rate_too_high", "weight_norm_growth", "loss_spikes", "late_loss_variance")


def nan_divergence() -> list[Variant]:
    """Learning rates so high the gradient norm grows >= 1000x and the loss turns NaN."""
    # (model, depth, loss, optimizer, lr, batch, steps); the NaN step depends on the seed, so
    # configs far past the limit are mixed with ones just past it.
    grid = [("linear", 1, "mse", "sgd", 3.0, 128, 400), ("linear", 1, "mse", "sgd", 5.0, 64, 200),
            ("mlp", 4, "ce", "sgd", 30.0, 64, 100), ("mlp", 2, "mse", "sgd", 8.0, 64, 100),
            ("mlp", 3, "ce", "momentum", 2.0, 64, 150), ("resmlp", 2, "mse", "momentum", 2.0, 64, 150),
            ("cnn", 2, "mse", "sgd", 8.0, 64, 100), ("linear", 1, "mse", "momentum", 0.5, 128, 300)]
    return [Variant("nan_divergence", Spec(f"nandiv-{i:02d}-{m}-{loss}-{o}{lr:g}", model=m, depth=d, loss=loss,
                                           optimizer=o, lr=lr, batch_size=b, steps=s, seed=500 + i),
                    "diverged", "finished", ("nonfinite_loss", "nonfinite_gradient", "exploding_gradients"),
                    (V.explodes, V.nonfinite_loss), may=_BLOWUP_MAY)
            for i, (m, d, loss, o, lr, b, s) in enumerate(grid)]


def numerical_nan() -> list[Variant]:
    """Healthy training until a batch with a constant feature makes per-batch standardization divide 0 by 0."""
    out = []
    for i in range(8):
        base = _healthy_spec(i + 3, "x")
        at = int(base.steps * (0.5, 0.7, 0.85)[i % 3])
        spec = replace(base, name=f"numnan-{i:02d}-{base.model}", nan_at=at,
                       steps=min(base.steps, at + 60), seed=600 + i)
        out.append(Variant("numerical_nan", spec, "diverged", "finished", ("nonfinite_loss", "nonfinite_gradient"),
                           (V.healthy_until_nan,)))
    return out


def vanishing() -> list[Variant]:
    """Deep sigmoid/tanh MLPs and CNNs, shrunken or default init: input-side gradients >= 1000x below the
    output side, flat loss."""
    grid = [("sigmoid", 5, 32, 0.5, "sgd", 0.5, 500), ("sigmoid", 6, 64, 0.5, "sgd", 0.5, 800),
            ("sigmoid", 5, 64, 0.3, "momentum", 0.1, 400), ("tanh", 8, 32, 0.3, "sgd", 0.5, 600),
            ("sigmoid", 7, 32, 0.7, "sgd", 1.0, 1500), ("sigmoid", 5, 128, 0.5, "momentum", 0.05, 300),
            ("tanh", 10, 64, 0.25, "sgd", 0.2, 1000), ("sigmoid", 6, 32, 0.5, "sgd", 0.5, 2000)]
    return [Variant("vanishing", Spec(f"vanish-{i:02d}-{a}{d}", activation=a, depth=d, width=w, init_gain=g,
                                      optimizer=o, lr=lr, steps=s, batch_size=BATCHES[i % 4], seed=700 + i,
                                      layers_every=_layers_every(s)),
                    "underfitting", "finished", ("vanishing_gradients",), (V.vanishing, V.flat))
            for i, (a, d, w, g, o, lr, s) in enumerate(grid)] + [
        Variant("vanishing", Spec(f"vanish-{8 + i:02d}-cnn-sigmoid{d}", model="cnn", activation="sigmoid", depth=d,
                                  width=8, init_gain=g, optimizer="sgd", lr=0.5, steps=s, seed=750 + i),
                "underfitting", "finished", ("vanishing_gradients",), (V.vanishing, V.flat))
        for i, (d, g, s) in enumerate([(6, 0.5, 300), (8, 0.7, 400)])] + [
        # Wider sigmoid nets at (near) PyTorch's default init, trained with momentum: the
        # saturating activation alone starves the input side.
        Variant("vanishing", Spec(f"vanish-{10 + i:02d}-{a}{d}-gain{g:g}", activation=a, depth=d, width=w,
                                  init_gain=g, optimizer="momentum", lr=lr, steps=s, seed=780 + i,
                                  layers_every=_layers_every(s)),
                "underfitting", "finished", ("vanishing_gradients",), (V.vanishing, V.flat))
        for i, (a, d, w, g, lr, s) in enumerate([("sigmoid", 6, 64, 1.0, 0.5, 1500), ("sigmoid", 5, 64, 0.8, 1.0, 1500),
                                                 ("sigmoid", 7, 64, 1.0, 0.5, 1500)])]


def exploding() -> list[Variant]:
    """SGD past the stability limit: gradient norm grows >= 1000x until the user watchdog stops training (finite)."""
    # The stable step of SGD on this regression shrinks with the batch (a small batch's
    # curvature is larger), hence the lr per batch size.
    grid = [("linear", "mse", "sgd", 2.1, 64), ("linear", "mse", "sgd", 3.2, 128),
            ("linear", "mse", "sgd", 2.3, 64), ("mlp", "ce", "momentum", 2.0, 64),
            ("resmlp", "ce", "momentum", 0.5, 64), ("linear", "mse", "momentum", 0.4, 64),
            ("resmlp", "ce", "momentum", 0.3, 128), ("linear", "mse", "sgd", 3.0, 128)]
    return [Variant("exploding", Spec(f"explode-{i:02d}-{m}-{o}{lr:g}", model=m, loss=loss, optimizer=o, lr=lr,
                                      batch_size=b, steps=1000, stop_grad_norm=1e5, seed=800 + i),
                    "diverged", "finished", ("exploding_gradients",), (V.explodes, V.stays_finite, V.long_enough),
                    may=_BLOWUP_MAY)
            for i, (m, loss, o, lr, b) in enumerate(grid)]


def dead_layers() -> list[Variant]:
    """First layer left out of the optimizer, or a residual ReLU block whose bias kills every unit."""
    out = []
    for i in range(5):
        base = _healthy_spec(i * 2 + 1, "x")
        out.append(Variant("dead_layers", replace(base, name=f"dead-{i:02d}-frozen-{base.model}", frozen_first=True,
                                                  seed=900 + i),
                           "healthy", "finished", ("dead_layers",), (V.dead_layer, V.learns)))
    for i, (w, d, blk) in enumerate([(64, 3, 1), (128, 4, 2), (64, 2, 0)]):
        spec = Spec(f"dead-{i + 5:02d}-relu-block{blk}", model="resmlp", width=w, depth=d, dead_block=blk,
                    steps=(600, 1000, 400)[i], batch_size=128, seed=950 + i)
        out.append(Variant("dead_layers", spec, "healthy", "finished", ("dead_layers",), (V.dead_layer, V.learns)))
    return out


def loss_spikes() -> list[Variant]:
    """Healthy training with a corrupted batch (shuffled labels, rescaled inputs) every 120-300 steps."""
    out = []
    for i in range(8):
        base = _healthy_spec(i + 5, "x")
        steps = _cap(base.model, max(base.steps, 600))
        spec = replace(base, name=f"spikes-{i:02d}-{base.model}", steps=steps,
                       spike_every=min((150, 200, 120, 300)[i % 4], steps // 3), spike_scale=(3.0, 6.0, 10.0)[i % 3], seed=1000 + i)
        out.append(Variant("loss_spikes", spec, "healthy", "finished", ("loss_spikes",),
                           (V.spikes, V.learns, V.starts_falling)))
    return out


_CRASH = {"oom": ("crash_oom", ("can't allocate memory",)),
          "shape": ("crash_shape_mismatch", ("shapes cannot be multiplied", "is invalid for input of size",
                                             "size mismatch", "must match")),
          "dtype": ("crash_dtype_mismatch", ("dtype", "type", "Double")),
          "device": ("crash_device_mismatch", ("device",)),
          "other": ("crash_other", ("out of bounds",))}


def crashes() -> list[Variant]:
    """Each CPU crash kind (OOM, shape, dtype, device via the meta device, out-of-range label) on several models,
    mid-run and within the first steps."""
    out = []
    for i, kind in enumerate(k for k in _CRASH for _ in range(3)):
        base = _healthy_spec(i, "x")
        at = max(150, int(base.steps * 0.4))
        spec = replace(base, name=f"crash-{i:02d}-{kind}-{base.model}", crash=kind, crash_at=at,
                       steps=max(base.steps, at + 10), seed=1100 + i)
        code, needles = _CRASH[kind]
        out.append(Variant("crashes", spec, "healthy", "crashed", (code,), (V.crashed_with(*needles), V.learns)))
    # Dying at once: too few steps for a curve.
    for i, (kind, at) in enumerate([("shape", 0), ("dtype", 4), ("oom", 1), ("device", 6)]):
        base = _healthy_spec(i * 3, "x")
        code, needles = _CRASH[kind]
        spec = replace(base, name=f"crash-{15 + i:02d}-{kind}-at{at}-{base.model}", crash=kind, crash_at=at,
                       seed=1150 + i)
        out.append(Variant("crashes", spec, "insufficient_data", "crashed", (code,),
                           (V.crashed_with(*needles), V.few_steps), may=("no_validation",)))
    return out


def killed() -> list[Variant]:
    """Training in a child process SIGKILLed mid-run."""
    out = []
    for i in range(3):
        base = _healthy_spec(i * 4, "x")
        spec = replace(base, name=f"killed-{i:02d}-{base.model}", kill_at=base.steps // 2 + 3, seed=1200 + i)
        out.append(Variant("killed", spec, "healthy", "killed", ("killed",), (V.status_is("running"), V.learns)))
    return out


def resumed() -> list[Variant]:
    """Attempt 1 dies, attempt 2 resumes from a checkpoint; repeated steps compacted or not."""
    out = []
    for i in range(3):
        base = _healthy_spec(i * 5 + 1, "x")
        spec = replace(base, name=f"resumed-{i:02d}-{base.model}", resume_crash_at=int(base.steps * 0.6) + 7,
                       ckpt_every=max(50, base.steps // 10), compact=bool(i % 2), seed=1300 + i)
        out.append(Variant("resumed", spec, "healthy", "finished", (),
                           (V.resumed, V.learns, V.settles, V.val_follows)))
    return out


def underfitting() -> list[Variant]:
    """Labels independent of the inputs, or a linear model on XOR: loss pinned at ln(K)."""
    grid = [("mlp", "random_labels", 4, "adam", 1e-3), ("cnn", "random_labels", 10, "adam", 1e-3),
            ("gru", "random_labels", 2, "adam", 3e-3), ("resmlp", "random_labels", 6, "momentum", 0.02),
            ("linear", "xor", 2, "adam", 1e-2), ("linear", "xor", 2, "sgd", 0.1)]
    return [Variant("underfitting", Spec(f"under-{i:02d}-{m}-{task}", model=m, task=task, classes=k, optimizer=o,
                                         lr=lr, steps=_cap(m, (500, 1000, 300, 2000)[i % 4]), seed=1400 + i),
                    "underfitting", "finished", (), (V.flat, V.at_chance))
            for i, (m, task, k, o, lr) in enumerate(grid)]


def plateau() -> list[Variant]:
    """A learning rate 100-1000x too low for 30-60% of the run, then the schedule fixes it and the loss falls."""
    grid = [("mlp", "adam", 1e-5, 100.0, 0.5, 600), ("mlp", "adam", 1e-6, 1000.0, 0.3, 1000),
            ("resmlp", "adam", 1e-5, 100.0, 0.4, 800), ("cnn", "adam", 1e-5, 200.0, 0.5, 600),
            ("mlp", "momentum", 1e-4, 500.0, 0.6, 2000)]
    return [Variant("plateau", Spec(f"plateau-{i:02d}-{m}", model=m, optimizer=o, lr=lr, schedule="jump",
                                    jump_factor=f, jump_at=at, steps=_cap(m, s), batch_size=128, seed=1500 + i),
                    "healthy", "finished", ("plateau",), (V.plateau_then_falls,), may=("learning_rate_too_low",))
            for i, (m, o, lr, f, at, s) in enumerate(grid)]


def weight_norm_growth() -> list[Variant]:
    """AdamW-style decoupled decay with the sign flipped: weights grow geometrically (curve not graded)."""
    return [Variant("weight_norm_growth", Spec(f"wgrowth-{i:02d}-wd{wd:g}", optimizer="adamw", lr=lr, weight_decay=wd,
                                               steps=s, seed=1600 + i),
                    None, "finished", ("weight_norm_growth",), (V.weight_growth,),
                    may=("exploding_gradients", "learning_rate_too_high", "loss_spikes", "late_loss_variance",
                         "nonfinite_loss", "nonfinite_gradient"))
            for i, (wd, lr, s) in enumerate([(-2.0, 3e-3, 600), (-1.0, 3e-3, 1000), (-3.0, 1e-3, 1500)])]


FAMILIES = {f.__name__: f for f in (healthy, no_validation, overfitting, lr_too_low, lr_too_high, nan_divergence,
                                    numerical_nan, vanishing, exploding, dead_layers, loss_spikes, crashes, killed,
                                    resumed, underfitting, plateau, weight_norm_growth)}


def variants(only: set[str] | None = None) -> list[Variant]:
    out = [v for name, fam in FAMILIES.items() if not only or name in only for v in fam()]
    names = [v.name for v in out]
    assert len(names) == len(set(names)), "variant names must be unique"
    return out


# -- generation -----------------------------------------------------------------------------


def _generate_one(variant: Variant) -> dict:
    out = DATA / variant.name
    stamp = out / "label.json"
    fp = variant.fingerprint()
    if stamp.exists():
        cached = json.loads(stamp.read_text())
        if cached.get("fingerprint") == fp:
            return cached
    if out.exists():
        shutil.rmtree(out)
    t0 = time.monotonic()
    error = None
    try:
        run_spec(variant.spec, out)
    except Exception as exc:  # a variant that cannot be trained is discarded, with why
        error = f"{type(exc).__name__}: {exc}"
    elapsed = time.monotonic() - t0
    label = {**variant.labels(), "fingerprint": fp, "seconds": round(elapsed, 2), "training_error": error}
    label.update(verify(variant, label))
    out.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(label, indent=1, default=str) + "\n")
    return label


def _labels_from_data(variant: Variant, label: dict) -> None:
    """Facts of the recorded data that the generating condition does not fix.

    - A run stopped (crash, watchdog) before its first validation pass truly has none.
    - Weights that grew >= 10x make ``weight_norm_growth`` true of the data, whatever the cause,
      so it cannot count as a false alarm.
    - A too-high learning rate whose loss ends above where it started is both "unstable" and
      arguably "diverged" (it grew, then stayed bounded): either curve is accepted.
    """
    label["curve_ok"] = [label["curve"]]
    if not label.get("verified"):
        return
    data = V.RunData(DATA / variant.name)

    def allow(code: str, must: bool) -> None:
        label["must_not_include"] = [c for c in label["must_not_include"] if c != code]
        if must and code not in label["must_include"]:
            label["must_include"] = [*label["must_include"], code]
        elif not must and code not in label["must_include"] + label["may_include"]:
            label["may_include"] = [*label["may_include"], code]

    if data.val_loss.size == 0:
        # With no step recorded at all, saying "no validation" is true but beside the point.
        allow("no_validation", must=data.loss.size > 0)
    try:
        grew = V.weight_growth(data)[0]
    except (KeyError, IndexError, ValueError):
        grew = False
    if grew:
        allow("weight_norm_growth", must=False)
    if variant.family == "lr_too_high" and data.tail() > 1.1 * float(np.mean(data.loss[:3])):
        label["curve_ok"] = ["unstable", "diverged"]


def verify(variant: Variant, label: dict) -> dict:
    """Re-run the variant's checks on its tables (cheap; done on every grading, so a sharper
    check applies to cached runs without retraining them)."""
    if label.get("training_error"):
        return {"verified": False, "checks": {"training": {"ok": False, "error": label["training_error"]}}}
    ok, checks = V.run_checks(DATA / variant.name, variant.checks)
    return {"verified": ok, "checks": {k: {"ok": v[0], **v[1]} for k, v in checks.items()}}


def generate(vs: list[Variant], jobs: int) -> dict[str, dict]:
    DATA.mkdir(parents=True, exist_ok=True)
    labels: dict[str, dict] = {}
    t0 = time.monotonic()
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for v, label in zip(vs, pool.map(_generate_one, vs), strict=True):
                labels[v.name] = label
                _progress(v, label, t0)
    else:
        for v in vs:
            labels[v.name] = _generate_one(v)
            _progress(v, labels[v.name], t0)
    return labels


def _progress(v: Variant, label: dict, t0: float) -> None:
    mark = "ok " if label["verified"] else "OFF"
    print(f"[{time.monotonic() - t0:6.1f}s] {mark} {v.name:34s} {label['seconds']:5.1f}s", flush=True)


# -- evaluation -----------------------------------------------------------------------------


def _diagnose(name: str) -> dict:
    import runlens

    try:
        return runlens.analyze(DATA / name).to_dict()
    except Exception as exc:  # an engine crash is a result too: it is reported as such
        return {"status": "error", "curve": "error", "findings": [], "engine_error": f"{type(exc).__name__}: {exc}"}


def evaluate(vs: list[Variant], labels: dict[str, dict]) -> dict:
    graded, discarded = [], []
    for v in vs:
        label = {**labels[v.name], **verify(v, labels[v.name])}
        _labels_from_data(v, label)
        labels[v.name] = label
        if not label["verified"]:
            failed = {k: c for k, c in label["checks"].items() if not c["ok"]}
            discarded.append((v.name, failed))
            continue
        got = _diagnose(v.name)
        graded.append((v, label, got))
    per_code = {c: Counter() for c in CODES}
    confusion: dict[str, Counter] = defaultdict(Counter)
    accepted: Counter = Counter()
    misses, alarms, crash_on_finished, status_wrong = [], [], [], []
    healthy_runs = 0
    for v, label, got in graded:
        found = {f["code"]: f for f in got["findings"]}
        for code in CODES:
            if code in label["must_include"]:
                per_code[code]["tp" if code in found else "fn"] += 1
            elif code in label["must_not_include"]:
                per_code[code]["fp" if code in found else "tn"] += 1
        if label["curve"] is not None:
            confusion[label["curve"]][got["curve"]] += 1
            accepted[label["curve"]] += got["curve"] in label["curve_ok"]
        problems = []
        if label["curve"] is not None and got["curve"] not in label["curve_ok"]:
            problems.append(f"curve {got['curve']} (expected {' or '.join(label['curve_ok'])})")
        if got["status"] != label["status"]:
            problems.append(f"status {got['status']} (expected {label['status']})")
            status_wrong.append(v.name)
        missing = [c for c in label["must_include"] if c not in found]
        unwanted = [c for c in label["must_not_include"] if c in found]
        if missing:
            problems.append("missing " + ", ".join(missing))
        if unwanted:
            problems.append("false alarm " + ", ".join(f"{c} ({found[c]['severity']})" for c in unwanted))
        if got.get("engine_error"):
            problems.append("engine raised " + got["engine_error"])
        if label["status"] == "finished" and any(c.startswith("crash_") for c in found):
            crash_on_finished.append(v.name)
        if v.family in ("healthy", "no_validation", "resumed"):
            healthy_runs += 1
            loud = [f for f in got["findings"] if f["severity"] in LOUD]
            if loud:
                alarms.append((v.name, [(f["code"], f["severity"], f["title"]) for f in loud]))
        if problems:
            said = ", ".join(f"{f['code']}({f['severity'][0]})" for f in got["findings"]) or "no findings"
            misses.append((v.family, v.name, "; ".join(problems), got["curve"], said,
                           _why(unwanted, found)))
    return {"graded": graded, "discarded": discarded, "per_code": per_code, "confusion": confusion,
            "accepted": accepted,
            "misses": misses, "alarms": alarms, "healthy_runs": healthy_runs,
            "crash_on_finished": crash_on_finished, "status_wrong": status_wrong}


def _why(unwanted: list[str], found: dict) -> str:
    """The titles of false alarms: the engine's own words on why it fired."""
    return " | ".join(f"{c}: {found[c]['title']}" for c in unwanted)


def _head() -> str:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def render(result: dict, labels: dict[str, dict], elapsed: float) -> str:
    graded, per_code = result["graded"], result["per_code"]
    lines = ["# runlens accuracy on labeled training runs", "",
             "Generated by `python benchmarks/accuracy.py` (runs in `benchmarks/_data/accuracy/`, git-ignored). "
             "Every run is real PyTorch training on the CPU recorded by `recorders.torch.Recorder`; "
             "labels come from how the run was made and are kept only when "
             "`sample_runs/_verify.py` finds the symptom in the recorded tables. The families share their "
             "generator with `sample_runs/`: thresholds tuned until this page is clean are not thereby "
             "validated on unseen runs.", "",
             f"- graded at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} against the engine in the "
             f"working tree (commit {_head()} plus uncommitted changes); the numbers move as detectors change",
             f"- runs graded: {len(graded)}; discarded (data did not bear the label out): "
             f"{len(result['discarded'])}",
             f"- training time of the whole set: {sum(lbl['seconds'] for lbl in labels.values()):.0f} s "
             f"(sum over runs, on 2 CPU cores shared with other work; this invocation: {elapsed:.0f} s, "
             f"cached runs are reused)",
             f"- healthy false-alarm rate (runs from the healthy, no_validation and resumed families with any "
             f"warning or error): **{len(result['alarms'])}/{result['healthy_runs']} = "
             f"{_ratio(len(result['alarms']), result['healthy_runs'])}** (target 0)",
             f"- crash codes on finished runs: {len(result['crash_on_finished'])} (target 0); "
             f"wrong status: {len(result['status_wrong'])}", "",
             "## Per finding code", "",
             "TP: labeled and found. FN: labeled, not found. FP: found on a run where the code is "
             "neither labeled nor listed as \"may\". Target: recall >= 0.95. `late_loss_variance` has no "
             "positive label: no generating condition makes it unambiguously true without also being "
             "`learning_rate_too_high`, so it is only scored for false alarms (it is \"may\" on too-high "
             "learning rates and blow-ups).", "",
             "| code | labeled runs | TP | FN | FP | recall | precision |", "|---|---:|---:|---:|---:|---:|---:|"]
    for code in CODES:
        c = per_code[code]
        lines.append(f"| `{code}` | {c['tp'] + c['fn']} | {c['tp']} | {c['fn']} | {c['fp']} | "
                     f"{_ratio(c['tp'], c['tp'] + c['fn'])} | {_ratio(c['tp'], c['tp'] + c['fp'])} |")
    lines += ["", "## Curve label confusion (rows: expected, columns: engine)", "",
              "Accuracy counts an accepted alternative as right: a too-high learning rate whose loss ended "
              "above where it started may be called `diverged` as well as `unstable`.", ""]
    cols = [c for c in CURVES + ("error",) if any(result["confusion"][r][c] for r in result["confusion"])]
    lines.append("| expected \\ got | " + " | ".join(cols) + " | accuracy |")
    lines.append("|---|" + "---:|" * (len(cols) + 1))
    for row in CURVES:
        counts = result["confusion"].get(row)
        if not counts:
            continue
        total = sum(counts.values())
        lines.append(f"| {row} | " + " | ".join(str(counts[c]) for c in cols) +
                     f" | {_ratio(result['accepted'][row], total)} |")
    lines += ["", "## Per family", "", "| family | graded | fully right |", "|---|---:|---:|"]
    missed = {m[1] for m in result["misses"]}
    fams: dict[str, list[str]] = defaultdict(list)
    for v, _, _ in graded:
        fams[v.family].append(v.name)
    for fam, names in fams.items():
        lines.append(f"| {fam} | {len(names)} | {sum(n not in missed for n in names)} |")
    lines += ["", "## Misses", "",
              "Every graded run where the engine disagreed with the label. `(e)`/`(w)`/`(i)`: severity.", "",
              "| family | run | problem | engine curve | engine findings |", "|---|---|---|---|---|"]
    for fam, name, problem, curve, said, _ in sorted(result["misses"]):
        lines.append(f"| {fam} | `{name}` | {problem} | {curve} | {said} |")
    titles = [(name, why) for _, name, _, _, _, why in sorted(result["misses"]) if why]
    if titles:
        lines += ["", "### What the engine said when it raised a false alarm", ""]
        lines += [f"- `{name}`: {why}" for name, why in titles]
    if result["discarded"]:
        lines += ["", "## Discarded variants", "",
                  "Their data did not show the labeled symptom (numbers from the failed check), so they are "
                  "not graded.", ""]
        for name, failed in result["discarded"]:
            detail = "; ".join(f"{k}: {json.dumps({x: y for x, y in c.items() if x != 'ok'})}"
                               for k, c in failed.items())
            lines.append(f"- `{name}`: {detail}")
    lines += ["", "## Labeled set", "",
              "Families and how each is made (see the functions of the same name in `benchmarks/accuracy.py`):", ""]
    for name, fam in FAMILIES.items():
        doc = (fam.__doc__ or "").strip()
        n = sum(1 for v, _, _ in graded if v.family == name)
        lines.append(f"- `{name}`: {n} graded" + (f". {doc}" if doc else ""))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated families (default: all): " + ", ".join(FAMILIES))
    parser.add_argument("--jobs", type=int, default=1, help="training processes (default 1: the cores are shared)")
    parser.add_argument("--evaluate-only", action="store_true", help="grade the runs already generated")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--report", type=Path, default=REPORT, help=f"markdown output (default {REPORT})")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if only and only - set(FAMILIES):
        parser.error(f"unknown families: {', '.join(sorted(only - set(FAMILIES)))}")
    vs = variants(only)
    if args.list:
        for v in vs:
            print(f"{v.family:18s} {v.name:34s} {v.spec.model:12s} {v.spec.optimizer:9s} lr={v.spec.lr:g} "
                  f"steps={v.spec.steps}")
        print(f"{len(vs)} variants")
        return 0
    t0 = time.monotonic()
    if args.evaluate_only:
        labels = {}
        for v in vs:
            stamp = DATA / v.name / "label.json"
            if stamp.exists():
                labels[v.name] = json.loads(stamp.read_text())
        vs = [v for v in vs if v.name in labels]
    else:
        labels = generate(vs, args.jobs)
    elapsed = time.monotonic() - t0
    result = evaluate(vs, labels)
    text = render(result, labels, elapsed)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
