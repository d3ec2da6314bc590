"""dead_layers: layers that get no gradient, or never move, while others learn."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._layerstats import MAX_NAMED, MAX_ROWS
from runlens.stats.growth import longest_true_run

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run

_FLOAT32_EPS = 2.0 ** -23


@register
class DeadLayers(Detector):
    """Layers whose gradient is exactly zero, or whose weights do not change
    at all, for a long stretch while the other layers learn.

    What it detects:
        Parameters that receive an exactly-zero gradient (every unit behind
        them is a dead ReLU, or the output does not depend on them), and
        parameters that receive a gradient but are never updated (left out
        of the optimizer, or in a param group with learning rate 0).

    Why it matters:
        A dead layer is capacity the run pays for and does not use; a layer
        missing from the optimizer is usually a bug (the optimizer was built
        before the layer, or from ``model.head.parameters()`` only) that makes
        the model silently worse.

    How it decides:
        At each recorded step a parameter is dead when its gradient norm is
        exactly 0 (``grad_zero_frac`` = 1 means the same; the required
        ``grad_norm`` is what is read, so a log without ``grad_zero_frac``
        loses nothing), or when it has a non-zero gradient but its
        ``update_norm`` is exactly 0 (without ``update_norm``: its weight
        norm is bit-for-bit unchanged since the previous record, however many
        steps apart; the evidence's ``no_update_source`` says which), while
        at least one other parameter has a non-zero gradient and update.
        It fires when a parameter's dead stretch lasts
        to the end of the run and covers at least ``min_fraction`` of the
        recorded steps (a stretch that ends earlier, like a layer unfrozen
        on schedule, needs twice that share), at least ``min_points`` of
        them, and at least ``min_steps`` training steps (a dozen saturated
        steps before a blow-up are not a dead layer). A zero update is
        only believed when the learning layers' updates are well above
        float32 resolution (median update/weight >= ``min_learning_ratio``),
        the layer's own updates, on the records where it did move, were too
        (one whose steps were already at float32 resolution rounds to
        nothing next), and the layer's own
        gradient relative to its weights is within ``max_gap_decades`` of
        theirs: otherwise the update may simply round to nothing (a
        learning rate too low, or a vanishing gradient under SGD).
        A parameter with no gradient recorded at any step was frozen on
        purpose (``requires_grad=False``) or is unused: it is not reported.

    What to try:
        For a zero update: build the optimizer after the model is complete
        and from ``model.parameters()``; check param groups and their
        learning rates; if the layer is meant to be frozen, set
        ``requires_grad_(False)`` so no gradient is computed. For a zero
        gradient: look for dead ReLUs (lower the learning rate, use
        LeakyReLU/GELU, check bias initialization) and for a ``detach()``,
        ``torch.no_grad()`` or an unused output cutting the layer off.

    Parameters:
        min_fraction: smallest share of recorded steps the dead stretch covers (0.25).
        min_points: smallest number of recorded steps in the dead stretch (3).
        min_steps: smallest number of training steps the dead stretch spans (50).
        min_learning_ratio: smallest median update/weight of the learning layers (1e-6).
        max_gap_decades: how far the layer's ||g||/||w|| may sit below theirs (3.0).
    """

    code = "dead_layers"
    severity = "warning"
    title = "Dead layers"
    needs = Needs(layers=("grad_norm", "weight_norm", "update_norm"), requires=("layers.grad_norm",))
    constraints = {"min_fraction": Interval(float, 0, 1, closed="right"), "min_points": Interval(int, 1, None),
                   "min_steps": Interval(int, 0, None), "min_learning_ratio": Interval(float, 0, None),
                   "max_gap_decades": Interval(float, 0, None)}

    def __init__(self, *, min_fraction: float = 0.25, min_points: int = 3, min_steps: int = 50,
                 min_learning_ratio: float = 1e-6, max_gap_decades: float = 3.0) -> None:
        self.min_fraction = min_fraction
        self.min_points = min_points
        self.min_steps = min_steps
        self.min_learning_ratio = min_learning_ratio
        self.max_gap_decades = max_gap_decades

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        lay = ctx.signals_of(run).layers
        if not lay or lay.grad_norm is None or lay.weight_norm is None:
            raise Skip("needs per-layer gradient and weight norms")
        rows = lay.usable
        cut = (lambda a: a) if rows.all() else (lambda a: a[rows])  # the matrices are large: no copies
        g, w = cut(lay.grad_norm), cut(lay.weight_norm)  # null and unrecorded cells are NaN already
        source = "update_norm"
        if lay.update_norm is not None:
            u = cut(lay.update_norm)
        else:
            source = "weight_norm unchanged since the previous record (update_norm not logged)"
            u = np.abs(np.diff(w, axis=0, prepend=np.nan))
            u[0] = np.nan
        n = g.shape[0]
        if n < self.min_points:
            raise Skip(f"needs at least {self.min_points} recorded steps before any non-finite loss (has {n})")
        # A dead cell has a zero gradient or a zero update: the columns with enough of
        # either are the only ones worth the full test (on a healthy run, none).
        u_zero = u == 0
        cols = np.flatnonzero(((g == 0) | u_zero).sum(axis=0) >= self.min_points)
        if not len(cols):
            return []
        has_grad = np.isfinite(g) & (g > 0)
        learning = has_grad & ~u_zero
        believed = self._update_believed(g, w, u, learning)[cols]
        learners_per_row = learning.sum(axis=1)[:, None]
        zero_grad = g[:, cols] == 0
        no_update = has_grad[:, cols] & u_zero[:, cols] & believed
        dead = (zero_grad | no_update) & (learners_per_row - learning[:, cols] >= 1)
        steps = lay.steps[rows]
        found = self._stretches(dead, zero_grad, steps, [lay.names[j] for j in cols])
        if not found:
            return []
        return [self._finding(found, int(learning.any(axis=0).sum()), n, source, steps)]

    def _stretches(self, dead: np.ndarray, zero_grad: np.ndarray, steps: np.ndarray,
                   names: list[str]) -> list[tuple[str, int, int, str]]:
        """``(layer, from_step, recorded_steps, kind)`` of each column whose dead stretch counts."""
        n = dead.shape[0]
        need = max(self.min_points, int(np.ceil(self.min_fraction * n)))
        anywhere = max(need, int(np.ceil(2 * self.min_fraction * n)))
        stride = float(np.median(np.diff(steps))) if n > 1 else 1.0
        tails = np.where(dead.all(axis=0), n, (~dead)[::-1].argmax(axis=0))
        found = []
        for j in range(dead.shape[1]):
            tail = int(tails[j])
            start, length = (n - tail, tail) if tail >= need else longest_true_run(dead[:, j])
            if length < (need if start + length == n else anywhere):
                continue
            if steps[start + length - 1] - steps[start] + stride >= self.min_steps:
                why = "zero gradient" if zero_grad[start:start + length, j].mean() >= 0.5 else "no update"
                found.append((names[j], int(steps[start]), length, why))
        return found

    def _finding(self, found: list[tuple[str, int, int, str]], learners: int, n: int, source: str, steps: np.ndarray) -> Finding:
        names = [f[0] for f in found]
        kinds = sorted({f[3] for f in found})
        longest = max(f[2] for f in found)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        return self.finding(
            f"{len(names)} layer(s) with {' / '.join(kinds)} for up to {longest} of {n} recorded steps "
            f"(>= {self.min_fraction:.0%}) while {learners} others learned: {shown}",
            step=min(f[1] for f in found), layers=names[:MAX_NAMED],
            evidence={
                "layers": {f[0]: {"from_step": f[1], "recorded_steps": f[2], "kind": f[3]} for f in found[:MAX_NAMED]},
                "dead_layers": len(found),
                "recorded_steps": n, "learning_layers": learners, "zero_gradient_source": "grad_norm == 0",
                "no_update_source": source,
                "step_range": [int(steps[0]), int(steps[-1])],
            },
        )

    def _update_believed(self, g: np.ndarray, w: np.ndarray, u: np.ndarray, learning: np.ndarray) -> np.ndarray:
        """Per column: whether an exact-zero update cannot be float32 rounding."""
        if len(g) > MAX_ROWS:  # medians only: an evenly spaced sample of steps will do
            pick = np.linspace(0, len(g) - 1, MAX_ROWS).round().astype(np.int64)
            g, w, u, learning = g[pick], w[pick], u[pick], learning[pick]
        with np.errstate(all="ignore"):
            ratio = np.where(learning & (w > 0), u / w, np.nan)
            rel_grad = np.log10(np.where(np.isfinite(g) & (g > 0) & (w > 0), g / w, np.nan))
        if not np.isfinite(ratio).any():
            return np.zeros(g.shape[1], dtype=bool)
        learn_ratio = float(np.nanmedian(ratio))
        learn_rel = float(np.nanmedian(np.where(learning, rel_grad, np.nan)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a column with no gradient gives NaN
            own_rel = np.nanmedian(rel_grad, axis=0)
            own_ratio = np.nanmedian(ratio, axis=0)  # the column's own updates, where it had any
        near = ~(own_rel < learn_rel - self.max_gap_decades)  # NaN (zero weights) counts as near
        floor = max(self.min_learning_ratio, 10 * _FLOAT32_EPS)
        # A layer whose own updates were already at float32 resolution when it did move (a
        # vanishing gradient under SGD) rounds to exactly zero next: that is not a dead layer.
        own_ok = ~(own_ratio < floor)  # NaN: it never moved (left out of the optimizer), judged by the rest
        return (learn_ratio >= floor) & near & own_ok
