"""parameters_not_in_optimizer: trainable parameters left out of every optimizer param group."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from runlens.detectors._base import Detector, Interval, Needs, Skip, register
from runlens.detectors._bugs import untrained
from runlens.detectors._layerstats import MAX_NAMED
from runlens.detectors._updates import lr_at

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run

_ROUNDING = 2.0 ** -20  # float32 norms of the same tensor, recomputed: a few ulps apart at most
# A step orthogonal to the weights changes their norm only to second order (a relative move d changes
# the norm by d^2 / 2), and most of a gradient's steps are nearly orthogonal to a large weight matrix:
# to show in the norm a hundred times above float32 rounding (2^-20) the weights must have moved by
# sqrt(2 * 100 * 2^-20) = 0.014 of their norm; the summed step sizes bound that move from above, so
# five times as much is asked of them.
_VISIBLE = 0.07


@register
class ParametersNotInOptimizer(Detector):
    """Trainable parameters that get gradients but are in no optimizer param group, so they never change.

    What it detects:
        A model whose optimizer was built from part of its parameters
        (``optimizer = SGD(model.encoder.parameters())``, a head added after
        the optimizer was created, param groups that miss a submodule). The
        recorder lists trainable parameters outside every param group in
        run.json ``params_outside_optimizer``; without it, the layers table
        tells: a trainable layer whose weight norm stays constant to float32
        resolution over the run while its gradient is finite and non-zero
        and other layers' weights move.

    Why it matters:
        Those weights keep their random initialization: a new classifier
        head that never trains caps the accuracy, a frozen-by-accident
        embedding wastes the model. Nothing errors; the loss just settles
        too high.

    How it decides:
        The run.json list when the recorder wrote it (fires when it names a
        parameter whose recorded weight norm never changed beyond float
        rounding: one added to the optimizer later, as in a two-phase
        unfreeze, did change).
        Else, with at least ``min_rows`` recorded rows: a trainable layer
        whose largest relative weight-norm change from its first record is
        below float32 resolution (2^-20), whose gradient norm is finite and
        above 0 on at least half of its rows, while at least one other layer
        changed by more than ``min_change`` of its norm (so the run did take
        steps), and plain SGD with the logged rate (``scalars.lr``, else the
        config's) would have moved it by at least 0.07 of its norm over the
        run (``sum of lr x grad_norm / weight_norm``: a step orthogonal to
        the weights changes their norm only by d^2/2, so a move of 0.014 is
        needed to show a hundred times above float32 rounding, and the
        summed steps bound the move from above; the smallest step of
        the usual optimizers for a given gradient: a gradient that vanished
        moves nothing, in the optimizer or not). ``max_relative_change`` is
        that layer's change. Severity error.

    What to try:
        Build the optimizer from model.parameters() (or check that the
        param groups cover every trainable parameter:
        {id(p) for g in opt.param_groups for p in g['params']}), and create
        it after every module, head or adapter is added to the model; if a
        module is meant to stay fixed, set requires_grad=False.

    Parameters:
        min_rows: least recorded layer rows for the layers-table reading (5).
        min_change: least relative weight change of some other layer that shows steps were taken (1e-4).
    """

    code = "parameters_not_in_optimizer"
    severity = "error"
    title = "Trainable parameters left out of the optimizer"
    needs = Needs(layers=("grad_norm", "weight_norm"))
    constraints = {"min_rows": Interval(int, 2, None), "min_change": Interval(float, 0, 1, closed="neither")}

    def __init__(self, *, min_rows: int = 5, min_change: float = 1e-4) -> None:
        self.min_rows = min_rows
        self.min_change = min_change

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        record = untrained(run)
        listed, train = record.outside_optimizer, record.trainable
        ev: dict = {}
        if listed is not None:
            moved = _moved(run)  # added to the optimizer later (a two-phase unfreeze): it did change
            names = [n for n in listed if train.get(n, True) and n not in moved]
            source = "run.json params_outside_optimizer"
        else:
            names, ev = self._from_layers(run, train)
            source = "layers: weight norm constant while the gradient is not zero"
        if not names:
            return []
        modules = sorted({n.rsplit(".", 1)[0] if "." in n else n for n in names})
        ev = {"params": names[:MAX_NAMED], "params_count": len(names), "modules": modules[:MAX_NAMED],
              "source": source, **ev}
        return [self.finding(
            f"{len(names)} trainable parameter(s) are in no optimizer param group and never change "
            f"({', '.join(modules[:5])}{'...' if len(modules) > 5 else ''}; from {source})",
            layers=names[:MAX_NAMED], evidence=ev)]

    def _from_layers(self, run: Run, train: dict[str, bool]) -> tuple[list[str], dict]:
        grads, weights = run.layer_matrix("grad_norm"), run.layer_matrix("weight_norm")
        if grads is None or weights is None:
            raise Skip("needs run.json params_outside_optimizer or the layers table's grad_norm and weight_norm")
        w = np.where(weights.present, weights.values, np.nan)
        if w.shape[0] < self.min_rows:
            raise Skip(f"needs at least {self.min_rows} recorded layer rows")
        with np.errstate(all="ignore"):
            first = np.array([col[np.isfinite(col)][0] if np.isfinite(col).any() else np.nan for col in w.T])
            change = np.nanmax(np.abs(w - first) / np.abs(first), axis=0)
            g = np.where(grads.present, grads.values, np.nan)
            has_grad = (np.isfinite(g) & (g > 0)).sum(axis=0) >= 0.5 * np.isfinite(w).sum(axis=0)
        lr, _ = lr_at(run, weights.steps)
        if lr is None:
            raise Skip("needs a learning rate to tell a parameter left out from one whose gradient is too small to "
                       "move it")
        # What plain SGD (the smallest step of the usual optimizers for a given gradient) would have moved
        # each layer over the run, relative to its norm: a vanishing gradient moves nothing either.
        gaps = np.diff(weights.steps, append=weights.steps[-1] + 1).astype(float)
        with np.errstate(all="ignore"):
            would = np.nansum(np.where(np.isfinite(g), lr[:, None] * g / np.abs(w) * gaps[:, None], 0.0), axis=0)
        still = (np.isfinite(change) & (change <= _ROUNDING) & has_grad & (would >= _VISIBLE)
                 & (np.isfinite(w).sum(axis=0) >= self.min_rows))
        moved = np.isfinite(change) & (change > self.min_change)
        names = [n for j, n in enumerate(weights.layers) if still[j] and train.get(n, True)]
        if not moved.any() or not names:
            return [], {}
        return names, {"max_relative_change": float(np.nanmax(change[still])),
                       "sgd_would_have_moved": float(np.nanmin(would[still]))}


def _moved(run: Run) -> set[str]:
    """Layers whose recorded weight norm changed beyond float rounding at some point."""
    weights = run.layer_matrix("weight_norm")
    if weights is None:
        return set()
    w = np.where(weights.present, weights.values, np.nan)
    with np.errstate(all="ignore"):
        first = np.array([col[np.isfinite(col)][0] if np.isfinite(col).any() else np.nan for col in w.T])
        change = np.nanmax(np.abs(w - first) / np.abs(first), axis=0) if w.shape[0] else np.full(w.shape[1], np.nan)
    return {n for j, n in enumerate(weights.layers) if np.isfinite(change[j]) and change[j] > _ROUNDING}
