"""The tuning set: the families of labeled runs built from ``sample_runs/_training.py``.

These share their generator with the shipped samples, so detectors were
tuned against runs like them: figures on this set are the tuning figures.
The held-out set (``benchmarks/heldout``) is the one to quote.

A label is the condition a run was made with, kept only when
``sample_runs/_verify.py`` confirms the symptom from the trainer's own
measurements (``truth-*.npz``, taken in torch during training).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "sample_runs"))

import _verify as V  # noqa: E402
from _training import Spec  # noqa: E402

# The code of each non-healthy curve label (the curve findings): required wherever the curve is.
CURVE_CODE = {"overfitting": "overfitting", "underfitting": "underfitting", "unstable": "unstable",
              "diverged": "diverged"}
# The codes that name each family's injected fault: one of them should lead the findings.
FIRST = {"overfitting": ("overfitting",), "lr_too_low": ("learning_rate_too_low",),
         "lr_too_high": ("learning_rate_too_high",),
         "nan_divergence": ("learning_rate_too_high", "exploding_gradients", "nonfinite_loss", "diverged"),
         "numerical_nan": ("nonfinite_loss", "nonfinite_gradient"), "vanishing": ("vanishing_gradients",),
         "exploding": ("exploding_gradients", "learning_rate_too_high"), "dead_layers": ("dead_layers",),
         "loss_spikes": ("loss_spikes",), "killed": ("killed",), "underfitting": ("underfitting",),
         "plateau": ("plateau",), "weight_norm_growth": ("weight_norm_growth",)}
FIRST["underfitting"] = ("loss_at_chance", "underfitting")
# Codes true of a family's runs by construction, beside the point of its fault (as in sample_runs):
# a flat loss at ln K is at chance; a corrupted batch or a blow-up spikes the gradient norm.
MUST_TOO = {"underfitting": ("loss_at_chance",)}
MAY_TOO = {"vanishing": ("loss_at_chance",), "lr_too_low": ("loss_at_chance",),
           "loss_spikes": ("grad_norm_spike",), "lr_too_high": ("grad_norm_spike",),
           "nan_divergence": ("grad_norm_spike",), "exploding": ("grad_norm_spike",),
           "weight_norm_growth": ("grad_norm_spike",)}
HEALTHY_FAMILIES = ("healthy", "no_validation", "resumed")
# The learning rate each optimizer trains healthily with on these tasks (the healthy bases'): the
# twin of a too-low or too-high run uses it, and doing better there is what confirms the label.
ORDINARY_LR = {"sgd": 0.2, "momentum": 0.05, "adam": 1e-3, "adamw": 1e-3}


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
        must = list(self.must) + [c for c in MUST_TOO.get(self.family, ()) if c not in self.must]
        may = list(self.may) + [c for c in MAY_TOO.get(self.family, ()) if c not in self.may]
        if self.spec.eval_every is None and "no_validation" not in must:
            must.append("no_validation")
        if self.curve in CURVE_CODE and CURVE_CODE[self.curve] not in must:
            must.append(CURVE_CODE[self.curve])
        first = FIRST.get(self.family, ())
        if self.family == "crashes":
            first = tuple(c for c in self.must if c.startswith("crash_"))
        return {"family": self.family, "curve": self.curve, "status": self.status, "must_include": must,
                "may_include": may, "first": list(first)}

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
                                       layers_every=_layers_every(s), extra={"twin_lr": ORDINARY_LR[o]},
                                       batch_size=BATCHES[i % 4], seed=300 + i),
                    "underfitting", "finished", ("learning_rate_too_low",),
                    (V.flat, V.higher_lr_learns))
            for i, (m, o, lr, s) in enumerate(grid)]


def lr_too_high() -> list[Variant]:
    """SGD/momentum far above a stable step, clipped to norm 1 so the loss stays finite and bounces."""
    grid = [("mlp", "tanh", "momentum", 1.0, 600, 256), ("mlp", "tanh", "momentum", 2.0, 600, 256),
            ("mlp", "tanh", "sgd", 12.0, 600, 256), ("resmlp", "tanh", "momentum", 1.0, 800, 128),
            ("mlp", "gelu", "sgd", 6.0, 1000, 256), ("cnn", "tanh", "momentum", 0.5, 500, 128),
            ("mlp", "tanh", "momentum", 1.0, 2000, 64), ("mlp", "relu", "momentum", 0.5, 400, 256)]
    return [Variant("lr_too_high", Spec(f"lrhigh-{i:02d}-{m}-{o}{lr:g}", model=m, activation=a, optimizer=o,
                                        lr=lr, clip=1.0, steps=_cap(m, s), batch_size=b, seed=400 + i,
                                        extra={"twin_lr": ORDINARY_LR[o]}),
                    "unstable", "finished", ("learning_rate_too_high",),
                    (V.lower_lr_does_better, V.bounded_grads), may=("late_loss_variance", "loss_spikes"))
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
