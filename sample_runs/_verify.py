"""Checks that a recorded run really shows what its label claims.

A label comes from how the run was made (a layer left out of the optimizer,
a learning rate of 1e-4, ...), but a fault does not always produce the
symptom it is named after: a learning rate can be "too high" and still
converge, a deep sigmoid net can be shallow enough to learn. Before a run is
used to grade the engine, these checks read its tables directly (pyarrow and
numpy only, never runlens, so the grader does not grade itself) and confirm
the symptom is in the data, by margins wide enough that the label is not a
judgement call.

Each check returns ``(ok, detail)``; ``detail`` carries the numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def _table(run: Path, name: str) -> pa.Table | None:
    folder = run / name
    parts = sorted(p for p in folder.glob("r*-*.parquet")) if folder.is_dir() else []
    if not parts:
        return None
    # Parts sorted by name are sorted by seq for one rank; later parts win on
    # a repeated step (a resumed run writes its repeated steps again).
    tables = [pq.read_table(p) for p in parts]
    cols = sorted(set().union(*(t.column_names for t in tables)))
    unified = []
    for t in tables:
        for c in cols:
            if c not in t.column_names:
                t = t.append_column(c, pa.nulls(len(t), pa.float64()))
        unified.append(t.select(cols).cast(pa.schema([(c, _common_type(tables, c)) for c in cols])))
    return pa.concat_tables(unified)


def _common_type(tables: list[pa.Table], col: str) -> pa.DataType:
    types = {t.schema.field(col).type for t in tables if col in t.column_names}
    if len(types) == 1:
        return types.pop()
    if pa.types.is_dictionary(next(iter(types))):
        return pa.string()
    return pa.float64()


def _last_per_step(steps: np.ndarray, *cols: np.ndarray) -> tuple[np.ndarray, ...]:
    order = np.argsort(steps, kind="stable")
    steps = steps[order]
    keep = np.r_[steps[1:] != steps[:-1], True]
    return (steps[keep],) + tuple(c[order][keep] for c in cols)


class RunData:
    """The numbers the checks need, deduplicated by step."""

    def __init__(self, run: str | Path) -> None:
        self.path = Path(run)
        self.meta = json.loads((self.path / "run.json").read_text())
        s = _table(self.path, "scalars")
        self.raw_steps = np.array([], dtype=np.int64) if s is None else s["step"].to_numpy()
        if s is None:
            self.steps = self.loss = self.grad_norm = np.array([])
        else:
            gn = s["grad_norm"].to_numpy(zero_copy_only=False) if "grad_norm" in s.column_names else None
            gn = np.full(len(s), np.nan) if gn is None else gn.astype(float)
            self.steps, self.loss, self.grad_norm = _last_per_step(
                self.raw_steps, s["loss"].to_numpy(zero_copy_only=False).astype(float), gn)
        e = _table(self.path, "evals")
        if e is None:
            self.val_steps = self.val_loss = np.array([])
        else:
            self.val_steps, self.val_loss = _last_per_step(
                e["step"].to_numpy(), e["val_loss"].to_numpy(zero_copy_only=False).astype(float))
        self.layer_names = [layer["name"] for layer in self.meta.get("layers", [])]
        self.layers = self._layers()

    def _layers(self) -> dict[str, dict[str, np.ndarray]]:
        t = _table(self.path, "layers")
        if t is None:
            return {}
        t = t.cast(pa.schema([(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                              for f in t.schema]))
        names = np.array(t["layer"].to_pylist(), dtype=object)
        out = {}
        for name in self.layer_names:
            mask = names == name
            if not mask.any():
                continue
            cols = {c: t[c].to_numpy(zero_copy_only=False)[mask].astype(float)
                    for c in ("grad_norm", "weight_norm", "update_norm") if c in t.column_names}
            steps, *vals = _last_per_step(t["step"].to_numpy()[mask], *cols.values())
            out[name] = {"step": steps, **dict(zip(cols, vals, strict=True))}
        return out

    def weight_layers(self) -> list[str]:
        """Matrices and kernels, in depth order (biases say little about depth)."""
        shapes = {layer["name"]: layer.get("shape", []) for layer in self.meta.get("layers", [])}
        return [n for n in self.layer_names if n in self.layers and len(shapes.get(n, [])) > 1]

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


def tiny_updates_healthy_grads(d: RunData) -> tuple[bool, dict]:
    """Every layer gets gradients of similar size, and updates are < 1e-4 of the weights."""
    names = d.weight_layers()
    grads = np.array([np.nanmedian(d.layers[n]["grad_norm"]) for n in names])
    ratios = np.array([d.update_ratio(n) for n in names])
    spread = float(grads.min() / grads.max())
    return _ok(spread > 0.05 and ratios.max() < 1e-4, grad_spread=spread, max_update_ratio=float(ratios.max()))


def vanishing(d: RunData) -> tuple[bool, dict]:
    """Input-side gradients are >= 3 orders of magnitude below the output side's, yet not exactly zero."""
    names = d.weight_layers()
    first, last = d.layers[names[0]], d.layers[names[-1]]
    ratio = float(np.nanmedian(first["grad_norm"]) / np.nanmedian(last["grad_norm"]))
    moving = float(np.mean(first["update_norm"] > 0)) if "update_norm" in first else math.nan
    nonzero = bool(np.all(first["grad_norm"] > 0))
    return _ok(ratio < 1e-3 and nonzero and moving > 0.99, first_over_last=ratio,
               first_layer_steps_moving=moving)


def large_updates_unsettled(d: RunData) -> tuple[bool, dict]:
    """Updates are > 1% of the weights per step and validation keeps jumping late in the run:
    the sd of the second half's validation losses around their own linear trend is > 6% of
    their mean (the benchmark's healthy runs stay under 3.5%)."""
    ratios = [d.update_ratio(n) for n in d.weight_layers()]
    late = d.val_loss[d.val_loss.size // 2:]
    wobble = math.nan
    if late.size >= 4:
        x = np.arange(late.size)
        wobble = float(np.std(late - np.polyval(np.polyfit(x, late, 1), x)) / np.mean(late))
    return _ok(np.isfinite(d.loss).all() and np.median(ratios) > 0.01 and wobble > 0.06,
               median_update_ratio=float(np.median(ratios)), late_val_detrended_cv=wobble)


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
        err = d.meta.get("error") or {}
        text = f"{err.get('type', '')}: {err.get('message', '')}"
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
    data = RunData(run)
    results = {}
    for check in checks:
        try:
            results[check.__name__] = check(data)
        except Exception as exc:  # a check that cannot compute is a failed check, with why
            results[check.__name__] = (False, {"error": f"{type(exc).__name__}: {exc}"})
    return all(ok for ok, _ in results.values()), results
