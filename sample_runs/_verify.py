"""Checks that a recorded run really shows what its label claims, from the trainer's own measurements.

A label comes from how the run was made (a layer left out of the optimizer,
a learning rate of 1e-4, ...), but a fault does not always produce the
symptom it is named after. Before a run is used to grade the engine, these
checks confirm the symptom from what ``_training`` measured in torch during
training (``truth-<attempt>.npz``, see ``_truth``): the loss, the gradient
norm before clipping, each weight matrix's gradient, weight and update
norms, the validation losses and the exception a step raised. The
recorder's tables and runlens are never read (except ``run.json``'s status
and attempts, and the parquet row count for the resumed run, which are what
those labels are about), and no criterion is a runlens detector's parameter.

The criteria, stated before any run is graded (``head``: mean of the first
10% of the steps, ``tail``: of the last 10%):

- learns: finite, tail < 0.8x the mean of the first 3 steps.
- settles: no step of the second half exceeds 3x that half's median.
- starts_falling: by 20% of the run the loss has made >= 10% of its fall.
- val_follows: validation falls and ends within 5% of its best.
- overfits: validation's minimum comes before 70% of the evaluations, it
  ends >= 30% above it, and the training tail is < 0.5x its level then.
- flat: tail within 5% of head; at_chance: tail within 5% of ln K.
- higher_lr_learns: the same run at its optimizer's ordinary learning rate
  (the healthy runs' rate, trained by the generator beside it,
  ``twin-truth.npz``) falls >= 20%, while this one is flat; every matrix
  still gets gradients (spread of medians > 0.05).
- lower_lr_does_better: the same run at its optimizer's ordinary learning
  rate ends with a validation loss <= 0.8x this run's, and this run's
  second-half validation scatters around its own trend by > 5% of its mean.
- vanishing: the first matrix's gradient is <= 1e-3 of the last one's
  (medians over steps), never exactly zero, and the first matrix moves.
- explodes: the gradient norm grows >= 1000x over its first 10 steps'
  median before any NaN; bounded_grads: it never exceeds 20x its median.
- healthy_until_nan: the 20 steps before the first NaN keep gradients
  within 3x the earlier median.
- dead_layer: a matrix's updates are exactly zero (or its gradient is)
  while others update.
- spikes: >= 2 steps above 1.8x the median of the previous 20 and > 8 MAD
  over it, each back under 1.5x within 10 steps.
- plateau_then_falls: flat (< 5%) until the schedule's jump, then the tail
  is < 0.7x the plateau level.
- weight_growth: the total matrix norm ends >= 10x where it started.
- late_noise: the median |step change| of the last fifth is >= 3x that of
  the middle half.
- crashed_with: the step raised an exception whose text names the injected
  bug, and run.json says crashed.

Each check returns ``(ok, detail)``; ``detail`` carries the numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import _truth
import numpy as np
import pyarrow.parquet as pq


def _steps_on_disk(run: Path) -> np.ndarray:
    """Every scalars row's step as written (a resumed, uncompacted run repeats some)."""
    parts = sorted((run / "scalars").glob("r*-*.parquet")) if (run / "scalars").is_dir() else []
    if not parts:
        return np.array([], dtype=np.int64)
    return np.concatenate([pq.read_table(p, columns=["step"])["step"].to_numpy() for p in parts])


def _last_per_step(steps: np.ndarray, *cols: np.ndarray) -> tuple[np.ndarray, ...]:
    order = np.argsort(steps, kind="stable")
    steps = steps[order]
    keep = np.r_[steps[1:] != steps[:-1], True] if steps.size else np.zeros(0, dtype=bool)
    return (steps[keep],) + tuple(c[order][keep] for c in cols)


class RunData:
    """The trainer's measurements (all attempts, later ones winning on a repeated step)."""

    def __init__(self, run: str | Path) -> None:
        self.path = Path(run)
        meta_path = self.path / "run.json"
        self.meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        self.raw_steps = _steps_on_disk(self.path)
        attempts = _truth.load(self.path)
        if not attempts:
            raise FileNotFoundError(f"{self.path} has no truth-*.npz: regenerate it")
        self.raised = next((a["raised"] for a in reversed(attempts) if a["raised"]), None)
        cat = lambda key: np.concatenate([a[key] for a in attempts])  # noqa: E731
        self.steps, self.loss, self.grad_norm = _last_per_step(cat("step"), cat("loss"), cat("grad_norm"))
        self.val_steps, self.val_loss = _last_per_step(cat("val_step"), cat("val_loss"))
        self.layer_names = attempts[-1]["names"]
        lsteps = cat("layer_step")
        self.layers = {}
        for j, name in enumerate(self.layer_names):
            steps, g, w, u = _last_per_step(lsteps, *(np.concatenate([a[k][:, j] for a in attempts])
                                                    for k in ("layer_grad", "layer_weight", "layer_update")))
            self.layers[name] = {"step": steps, "grad_norm": g, "weight_norm": w, "update_norm": u}
        twin = self.path / "twin-truth.npz"
        self.twin = _truth.load_file(twin) if twin.exists() else None

    def weight_layers(self) -> list[str]:
        """Matrices and kernels, in depth order (registration order; biases are not measured)."""
        return [n for n in self.layer_names if len(self.layers[n]["step"])]

    # -- summaries ------------------------------------------------------------
    def head(self, frac: float = 0.1) -> float:
        n = max(1, int(len(self.loss) * frac))
        return float(np.mean(self.loss[:n]))

    def tail(self, frac: float = 0.1) -> float:
        n = max(1, int(len(self.loss) * frac))
        return float(np.mean(self.loss[-n:]))

    def first_nonfinite(self) -> int | None:
        bad = np.flatnonzero(~np.isfinite(self.loss))
        return int(self.steps[bad[0]]) if bad.size else None

    def update_ratio(self, name: str) -> float:
        d = self.layers[name]
        r = d["update_norm"] / np.maximum(d["weight_norm"], 1e-30)
        r = r[np.isfinite(r)]
        return float(np.median(r)) if r.size else math.nan


def _ok(cond: bool, **detail) -> tuple[bool, dict]:
    return bool(cond), {k: (round(v, 6) if isinstance(v, float) else v) for k, v in detail.items()}


# -- checks: one per symptom a label claims ----------------------------------------


def learns(d: RunData) -> tuple[bool, dict]:
    """The training loss ends below 80% of where it started (first 3 steps) and stays finite."""
    start = float(np.mean(d.loss[:3]))
    return _ok(np.isfinite(d.loss).all() and d.tail() < 0.8 * start, start=start, tail=d.tail())


def settles(d: RunData) -> tuple[bool, dict]:
    """No step of the second half exceeds 3x that half's median loss."""
    half = d.loss[len(d.loss) // 2:]
    ratio = float(np.max(half) / np.median(half))
    return _ok(ratio < 3.0, max_over_median=ratio)


def starts_falling(d: RunData) -> tuple[bool, dict]:
    """No stuck start: by 20% of the run the loss has made >= 10% of its total fall."""
    n = len(d.loss)
    head = float(np.mean(d.loss[: max(3, n // 50)]))
    early = float(np.mean(d.loss[int(0.15 * n): max(int(0.25 * n), int(0.15 * n) + 1)]))
    total = head - d.tail()
    return _ok(total > 0 and head - early >= 0.1 * total, head=head, at_20pct=early, tail=d.tail())


def stays_finite(d: RunData) -> tuple[bool, dict]:
    bad = int(np.sum(~np.isfinite(d.loss)))
    return _ok(bad == 0 and len(d.loss) > 0, nonfinite_steps=bad)


def val_follows(d: RunData) -> tuple[bool, dict]:
    """Validation falls and ends within 5% of its best."""
    if d.val_loss.size < 3:
        return _ok(False, evals=int(d.val_loss.size))
    v = d.val_loss
    return _ok(v[-1] < v[0] and v[-1] <= 1.05 * v.min(), first=float(v[0]), best=float(v.min()),
               last=float(v[-1]))


def overfits(d: RunData) -> tuple[bool, dict]:
    """Validation reaches its minimum early, then rises well above it while training keeps falling."""
    v, vs = d.val_loss, d.val_steps
    if v.size < 5:
        return _ok(False, evals=int(v.size))
    i = int(np.argmin(v))
    train_at_min = float(np.mean(d.loss[(d.steps <= vs[i]) & (d.steps > vs[i] - 20)]))
    return _ok(0 < i < 0.7 * v.size and v[-1] > 1.3 * v[i] and d.tail() < 0.5 * train_at_min,
               val_min_step=int(vs[i]), val_min=float(v[i]), val_last=float(v[-1]),
               train_at_min=train_at_min, train_last=d.tail())


def flat(d: RunData) -> tuple[bool, dict]:
    """The loss barely moves: the last 10% within 5% of the first 10%."""
    change = abs(d.tail() - d.head()) / abs(d.head())
    return _ok(np.isfinite(d.loss).all() and change < 0.05, relative_change=change)


def at_chance(d: RunData) -> tuple[bool, dict]:
    """The loss sits at ln(K): the model predicts the class prior."""
    k = int(d.meta["config"]["classes"])
    return _ok(abs(d.tail() - math.log(k)) < 0.05 * math.log(k), tail=d.tail(), ln_k=math.log(k))


def _twin_val_end(twin: dict) -> float:
    v = twin["val_loss"]
    return float(np.mean(v[-3:])) if v.size else math.nan


def higher_lr_learns(d: RunData) -> tuple[bool, dict]:
    """The ordinary-learning-rate twin falls >= 20% while this run is flat; every matrix gets gradients."""
    names = d.weight_layers()
    grads = np.array([np.nanmedian(d.layers[n]["grad_norm"]) for n in names])
    ratios = np.array([d.update_ratio(n) for n in names])
    spread = float(grads.min() / grads.max())
    if d.twin is None:
        return _ok(False, twin="missing")
    t = d.twin["loss"][np.isfinite(d.twin["loss"])]
    n = max(1, t.size // 10)
    twin_fall = float(1 - np.mean(t[-n:]) / np.mean(t[:3])) if t.size > 3 else math.nan
    change = abs(d.tail() - d.head()) / abs(d.head())
    return _ok(spread > 0.05 and twin_fall >= 0.2 and change < 0.05, grad_spread=spread, twin_fall=twin_fall,
               relative_change=change, max_update_ratio=float(ratios.max()))


def vanishing(d: RunData) -> tuple[bool, dict]:
    """Input-side gradients are >= 3 orders of magnitude below the output side's, yet not exactly zero."""
    names = d.weight_layers()
    first, last = d.layers[names[0]], d.layers[names[-1]]
    ratio = float(np.nanmedian(first["grad_norm"]) / np.nanmedian(last["grad_norm"]))
    moving = float(np.mean(first["update_norm"] > 0)) if "update_norm" in first else math.nan
    nonzero = bool(np.all(first["grad_norm"] > 0))
    return _ok(ratio < 1e-3 and nonzero and moving > 0.99, first_over_last=ratio,
               first_layer_steps_moving=moving)


def lower_lr_does_better(d: RunData) -> tuple[bool, dict]:
    """The ordinary-learning-rate twin ends <= 0.8x this run's validation loss, and this run's
    second-half validation scatters around its own linear trend by > 5% of its mean."""
    ratios = [d.update_ratio(n) for n in d.weight_layers()]
    late = d.val_loss[d.val_loss.size // 2:]
    wobble = math.nan
    if late.size >= 4:
        x = np.arange(late.size)
        wobble = float(np.std(late - np.polyval(np.polyfit(x, late, 1), x)) / np.mean(late))
    mine = float(np.mean(d.val_loss[-3:])) if d.val_loss.size else math.nan
    twin = _twin_val_end(d.twin) if d.twin is not None else math.nan
    return _ok(np.isfinite(d.loss).all() and twin <= 0.8 * mine and wobble > 0.05, val_end=mine,
               twin_val_end=twin, late_val_detrended_cv=wobble, median_update_ratio=float(np.median(ratios)))


def _early_grad(d: RunData) -> float:
    g = d.grad_norm[:10]
    return float(np.nanmedian(g[np.isfinite(g)])) if np.isfinite(g).any() else math.nan


def explodes(d: RunData) -> tuple[bool, dict]:
    """The global gradient norm grows >= 1000x over its first steps, before any NaN."""
    stop = d.first_nonfinite()
    g = d.grad_norm if stop is None else d.grad_norm[d.steps < stop]
    top = float(np.nanmax(np.where(np.isfinite(g), g, np.nan))) if np.isfinite(g).any() else math.nan
    growth = top / _early_grad(d)
    return _ok(growth >= 1e3, growth=growth, early=_early_grad(d), peak=top)


def bounded_grads(d: RunData) -> tuple[bool, dict]:
    """Finite gradient norms never exceed 20x the run's median: no explosion."""
    g = d.grad_norm[np.isfinite(d.grad_norm)]
    peak = float(g.max() / np.median(g)) if g.size else math.nan
    return _ok(peak < 20, peak_over_median=peak)


def nonfinite_loss(d: RunData) -> tuple[bool, dict]:
    return _ok(d.first_nonfinite() is not None, first_nonfinite_step=d.first_nonfinite())


def healthy_until_nan(d: RunData) -> tuple[bool, dict]:
    """Gradients in the 20 steps before the first NaN stay within 3x their earlier median."""
    s = d.first_nonfinite()
    if s is None:
        return _ok(False, first_nonfinite_step=None)
    before = d.grad_norm[(d.steps < s) & (d.steps >= s - 20)]
    earlier = d.grad_norm[(d.steps < s - 20) & (d.steps >= s // 2)]
    ratio = float(np.max(before) / np.median(earlier))
    return _ok(np.isfinite(before).all() and ratio < 3, first_nonfinite_step=s, before_over_earlier=ratio)


def dead_layer(d: RunData) -> tuple[bool, dict]:
    """Some layer's weights never change (or its gradient is exactly zero) while others update."""
    dead, alive = [], []
    for name, v in d.layers.items():
        frozen = "update_norm" in v and np.all(v["update_norm"][1:] == 0)
        zero = np.all(v["grad_norm"] == 0)
        (dead if frozen or zero else alive).append(name)
    return _ok(bool(dead) and bool(alive), dead=dead)


def no_dead_layer(d: RunData) -> tuple[bool, dict]:
    ok, detail = dead_layer(d)
    return _ok(not detail["dead"], **detail)


def spikes(d: RunData) -> tuple[bool, dict]:
    """>= 2 steps jump above 1.8x the median of the previous 20 steps and > 8 robust sd (MAD) over
    it, each back under 1.5x within 10 steps. On healthy runs no step reaches 1.4x or 6 sd."""
    found, recovered = [], 0
    for i in range(20, len(d.loss)):
        window = d.loss[i - 20:i]
        base = np.median(window)
        sd = 1.4826 * np.median(np.abs(window - base))
        if d.loss[i] > 1.8 * base and d.loss[i] - base > 8 * sd:
            found.append(int(d.steps[i]))
            after = d.loss[i + 1:i + 11]
            recovered += int(after.size > 0 and np.min(after) < 1.5 * base)
    return _ok(len(found) >= 2 and recovered == len(found), spike_steps=found[:20], recovered=recovered)


def plateau_then_falls(d: RunData) -> tuple[bool, dict]:
    """Flat (< 5% change) until the schedule's jump (config ``jump_at``, else 40% of the run),
    then ends below 70% of the plateau level."""
    n = len(d.loss)
    first = d.loss[: int(0.9 * float(d.meta["config"].get("jump_at") or 0.4) * n)]
    level = float(np.mean(first[-max(1, len(first) // 4):]))
    start = float(np.mean(first[: max(1, len(first) // 4)]))
    return _ok(abs(level - start) / start < 0.05 and d.tail() < 0.7 * level, start=start, plateau=level,
               tail=d.tail())


def weight_growth(d: RunData) -> tuple[bool, dict]:
    """The total weight norm ends >= 10x where it started."""
    w0 = math.sqrt(sum(v["weight_norm"][0] ** 2 for v in d.layers.values()))
    w1 = math.sqrt(sum(v["weight_norm"][-1] ** 2 for v in d.layers.values()))
    return _ok(w1 >= 10 * w0, start=w0, end=w1)


def late_noise(d: RunData) -> tuple[bool, dict]:
    """The loss's step-to-step change in the last fifth is >= 3x its size in the middle half."""
    loss = d.loss[np.isfinite(d.loss)]
    diff = np.abs(np.diff(loss))
    n = len(diff)
    middle, late = diff[n // 4: n // 2 + n // 4 - n // 20], diff[n - n // 5:]
    ratio = float(np.median(late) / max(np.median(middle), 1e-30)) if n >= 40 else 0.0
    return _ok(ratio >= 3, ratio=ratio)


def long_enough(d: RunData) -> tuple[bool, dict]:
    """At least 50 recorded steps: a curve label is not asked of a shorter run."""
    return _ok(len(d.loss) >= 50, steps=len(d.loss))


def status_is(expected: str):
    def check(d: RunData) -> tuple[bool, dict]:
        status = d.meta.get("status")
        return _ok(status == expected, status=status)
    check.__doc__ = f"run.json status is {expected!r}"
    check.__name__ = f"status_{expected}"
    return check


def crashed_with(*needles: str):
    def check(d: RunData) -> tuple[bool, dict]:
        raised = d.raised or {}
        text = f"{raised.get('type', '')}: {raised.get('message', '')}"
        return _ok(d.meta.get("status") == "crashed" and any(n in text for n in needles), error=text[:160])
    check.__name__ = "crashed_with"
    return check


def resumed(d: RunData) -> tuple[bool, dict]:
    """Two attempts, the first crashed, the second restarted before the crash step; uncompacted
    runs also keep the repeated steps on disk (compaction on close deduplicates them)."""
    attempts = d.meta.get("attempts", [])
    repeated = int(len(d.raw_steps) - len(np.unique(d.raw_steps)))
    first_status = attempts[0].get("status") if attempts else None
    crash_step = ((attempts[0].get("error") or {}).get("step") if attempts else None)
    restart = attempts[1].get("first_step") if len(attempts) > 1 else None
    went_back = crash_step is not None and restart is not None and restart < crash_step
    compacted = d.meta.get("config", {}).get("compact", True)
    return _ok(len(attempts) == 2 and first_status == "crashed" and went_back and (compacted or repeated > 0),
               attempts=len(attempts), first_status=first_status, crash_step=crash_step, restart_step=restart,
               repeated_steps_on_disk=repeated)


def no_scalars(d: RunData) -> tuple[bool, dict]:
    return _ok(len(d.loss) == 0, steps=len(d.loss))


def few_steps(d: RunData) -> tuple[bool, dict]:
    """Fewer than 10 recorded steps: too few for any curve label."""
    return _ok(len(d.loss) < 10, steps=len(d.loss))


def no_validation(d: RunData) -> tuple[bool, dict]:
    return _ok(d.val_loss.size == 0, evals=int(d.val_loss.size))


def run_checks(run: str | Path, checks) -> tuple[bool, dict]:
    """All of ``checks`` on one run: ``(all passed, {name: (ok, detail)})``."""
    try:
        data = RunData(run)
    except (OSError, ValueError, KeyError) as exc:  # no measurements: every check fails, with why
        return False, {c.__name__: (False, {"error": f"{type(exc).__name__}: {exc}"}) for c in checks}
    results = {}
    for check in checks:
        try:
            results[check.__name__] = check(data)
        except Exception as exc:  # a check that cannot compute is a failed check, with why
            results[check.__name__] = (False, {"error": f"{type(exc).__name__}: {exc}"})
    return all(ok for ok, _ in results.values()), results
