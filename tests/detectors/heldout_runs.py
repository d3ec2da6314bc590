"""Short real runs of the held-out generator (``benchmarks/heldout``), one pair per failure class,
and the ground truth each pair must show in torch.

Each pair is a run made with a fault and its twin: the same task, model, seed
and training loop with the fault taken out. Most are the catalog's own runs
(``benchmarks/heldout/catalog.py``), shortened; the names say which catalog run
each comes from.

Where a chaotic run ends up depends on the float kernels of the machine (CPU,
BLAS, thread count), so the tests never train these pairs: they read the runs
recorded once into ``tests/fixtures/trained/<class>/`` by
``tests/fixtures/trained/generate.py``. :data:`TRUTH` states, per class and
before any run is recorded, what the probe's measurements (torch, during
training) must show; the generator refuses to write a pair whose measurements
do not show it (it tries the next seed instead), and the tests check it again
on the committed measurements before they look at runlens's verdict.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.heldout import criteria  # noqa: E402
from benchmarks.heldout.generate import context  # noqa: E402
from benchmarks.heldout.tasks import Setup  # noqa: E402
from benchmarks.heldout.train import Run, train  # noqa: E402

INF = math.inf
FIXTURES = ROOT / "tests" / "fixtures" / "trained"
# Layer rows are recorded every LAYERS_EVERY steps: the fixtures stay small, and the
# detectors that read the layers table see the sampled rows a user with layers_every > 1 has.
LAYERS_EVERY = 10


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
# Robust by construction (a rate multiplied by 1e10 turns the loss NaN on any machine) and a
# dozen steps long: trained at test time, so the recorder -> disk -> engine path stays exercised.
LIVE = ("short_nan",)


def shifted(run: Run, shift: int) -> Run:
    """``run`` drawn ``shift`` seeds further on, with the fixtures' sparse layer rows."""
    setup = dataclasses.replace(run.setup, seed=run.setup.seed + shift)
    return dataclasses.replace(run, setup=setup, layers_every=LAYERS_EVERY)


def definition(run: Run) -> dict:
    """What decides a recorded run, as JSON values (a fixture whose definition differs is stale)."""
    return json.loads(json.dumps(dataclasses.asdict(run), default=str, allow_nan=True).replace("Infinity", '"inf"'))


# -- the ground truth of each class, in torch measurements ----------------------------------------

Measured = dict[str, np.ndarray]
Truth = Callable[[Measured, Measured, tuple[Run, Run]], tuple[bool, dict]]


def _judge(kind: str, m: Measured, run: Run, twin: Measured | None = None) -> tuple[bool, dict]:
    """The held-out generator's own criterion for ``kind``."""
    return criteria.CRITERIA[kind](m, context(kind, run, None, twin))


def _confirmed(kind: str, extra: Truth | None = None) -> Truth:
    """The fault shows ``kind``; the twin does not (a too-high rate's twin is its reference instead)."""
    def truth(fault: Measured, twin: Measured, pair: tuple[Run, Run]) -> tuple[bool, dict]:
        ok, detail = _judge(kind, fault, pair[0], twin if kind == "lr_too_high" else None)
        out = {"fault": detail}
        if kind != "lr_too_high":
            shown, out["twin"] = _judge(kind, twin, pair[1])
            ok = ok and not shown
        if extra is not None:
            more, out["extra"] = extra(fault, twin, pair)
            ok = ok and more
        return ok, out
    return truth


def _median(x: np.ndarray) -> float:
    return float(np.median(x[np.isfinite(x)]))


def _stable_twin(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    """The reference's late validation losses scatter < 5% around their trend (no jumping weights)."""
    v = twin["val_loss"]
    cv = criteria.detrended_cv(v[v.size // 2:])
    return cv < 0.05, {"twin_late_val_detrended_cv": cv}


def _ends_exploding(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    """The explosion ends the run: its largest gradient norms are in the last 10 steps, and they grow
    >= 10^6 over the start, or (>= 10^3 on the way) past float range to Inf/NaN."""
    g = fault["grad_norm"]
    finite = np.isfinite(g)
    at = int(np.argmax(np.where(finite, g, np.inf)))
    grow = criteria.growth(g)
    overflow = bool(not finite[-10:].all() and finite[:-10].all())
    ok = at >= g.size - 10 and (math.log10(grow) >= 6 or (overflow and grow >= 1e3))
    return ok, {"argmax_step": at, "steps": int(g.size), "grad_growth": grow, "overflowed": overflow}


def _by_decades(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    """Finite throughout, and >= 10 decades above its head: magnitude, not NaN, makes it diverged."""
    loss = fault["loss"]
    head, _ = criteria.head_tail(loss)
    finite = bool(np.isfinite(loss).all())
    decades = math.log10(float(np.max(loss[np.isfinite(loss)])) / head)
    return finite and decades >= 10, {"finite": finite, "decades_above_head": decades}


def _near_zero(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    """The easy run falls > 99%; its 10x-rate contrast shows a too-high rate against it."""
    fall = criteria.relative_fall(fault["loss"])
    high, detail = _judge("lr_too_high", twin, pair[1], fault)
    return fall > 0.99 and high, {"relative_fall": fall, "contrast": detail}


def _jump(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    """After the rate's 30x jump the loss settles > 1.2x higher; the twin trains healthily."""
    run = pair[0]
    loss, at = fault["loss"], int(run.change_at * run.steps)
    before, after = _median(loss[at - 50:at]), _median(loss[-100:])
    healthy, detail = _judge("healthy", twin, pair[1])
    return after > 1.2 * before and healthy, {"before": before, "after": after, "twin": detail}


def _one_step_spike(g: np.ndarray, at: int) -> float:
    """The gradient norm at ``at`` over the largest of the 50 steps on either side."""
    others = np.concatenate([g[at - 50:at], g[at + 1:at + 51]])
    return float(g[at] / others.max())


def _spike(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    """One step, >= 10x every step around it, is the run's largest; the twin has none there."""
    at = pair[0].spike_every
    g, tg = fault["grad_norm"], twin["grad_norm"]
    ratio, twin_ratio = _one_step_spike(g, at), _one_step_spike(tg, at)
    return int(np.argmax(g)) == at and ratio >= 10 and twin_ratio < 10, {
        "spike_over_neighbours": ratio, "twin_over_neighbours": twin_ratio}


def _collapse(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    """The weights end at <= 0.1 of their norm at the start."""
    w = fault["weight_norm"]
    ratio = float(w[-1] / w[0])
    return ratio <= 0.1, {"weight_norm_end_over_start": ratio}


def _both_healthy(fault: Measured, twin: Measured, pair) -> tuple[bool, dict]:
    ok_a, a = _judge("healthy", fault, pair[0])
    ok_b, b = _judge("healthy", twin, pair[1])
    return ok_a and ok_b, {"fault": a, "twin": b}


TRUTH: dict[str, Truth] = {
    "chance": _confirmed("chance"),
    "overfitting": _confirmed("overfitting"),
    "plateau": _confirmed("plateau"),
    "diverged": _confirmed("diverged", _by_decades),
    "too_high": _confirmed("lr_too_high", _stable_twin),
    "exploding": _confirmed("exploding", _ends_exploding),
    "vanishing": _confirmed("vanishing"),
    "late_variance": _confirmed("late_variance"),
    "settled_too_high": _confirmed("lr_too_high", _stable_twin),
    "weight_collapse": _confirmed("underfitting", _collapse),
    "near_zero": _near_zero,
    "jump": _jump,
    "grad_norm_spike": _spike,
    "vit_start": _both_healthy,
}


def record(run: Run, out: Path) -> Measured:
    """Train ``run`` into ``out`` with the generator's loop; the probe's measurements."""
    probe, raised = train(run, out)
    if raised is not None:
        raise AssertionError(f"{run.name} raised {raised} while training")
    return probe.arrays()
