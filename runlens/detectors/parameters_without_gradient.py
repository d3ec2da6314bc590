"""parameters_without_gradient: trainable parameters that never receive a gradient."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from runlens.detectors._base import Detector, Needs, Skip, register
from runlens.detectors._bugs import untrained
from runlens.detectors._layerstats import MAX_NAMED

if TYPE_CHECKING:
    from runlens.detectors._base import Context
    from runlens.diagnosis import Finding
    from runlens.io.run import Run


@register
class ParametersWithoutGradient(Detector):
    """Trainable parameters that never receive a gradient: cut off from the loss by a ``.detach()``,
    a ``torch.no_grad()`` block, an ``.item()``/numpy round trip, or a module built but never used.

    What it detects:
        Parameters with ``requires_grad=True`` whose ``.grad`` stays None on
        every recorded step, while other parameters get one. The recorder
        lists them in run.json ``params_without_grad`` (parameters that had
        no gradient on any recorded step); without that key, the layers
        table tells: a trainable layer (run.json ``trainable`` not false)
        whose ``grad_norm`` is null on every recorded row while its weight
        norm is recorded and another layer's gradient is not null.

    Why it matters:
        Those weights stay at their initialization: the part of the model
        they belong to does nothing useful, yet the run trains without an
        error, and the loss settles above what the model could reach. It is
        a graph bug, not a tuning problem.

    How it decides:
        The run.json list when the recorder wrote it (fires when it names a
        trainable parameter that the layers table, when there is one, never
        shows with a gradient: one unfrozen later did get one); else the
        layers table,
        with at least ``min_rows`` recorded rows (a layer recorded with a
        gradient once is excluded). Frozen parameters (``trainable`` false)
        never count. ``without_grad_share`` is the share of trainable
        parameter elements without a gradient. Severity error.

    What to try:
        Find where the named modules leave the graph: a .detach(), .data,
        .item() or .numpy() on their output, a torch.no_grad() block around
        their forward, a module defined in __init__ but not called in
        forward (or called on a different branch). Remove the detach; if the
        module is meant to be frozen, set requires_grad=False (and leave it
        out of the optimizer) so the intent is explicit.

    Parameters:
        None: the recorder's list, or gradients that are null on every row.
    """

    code = "parameters_without_gradient"
    severity = "error"
    title = "Trainable parameters never receive a gradient"
    needs = Needs(layers=("grad_norm", "weight_norm"))

    min_rows = 3

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        record = untrained(run)
        listed, train = record.without_grad, record.trainable
        if listed is not None:
            got = _had_gradient(run)  # unfrozen later (a two-phase fine-tune): it did get one
            names = [n for n in listed if train.get(n, True) and n not in got]
            source = "run.json params_without_grad"
        else:
            names, source = self._from_layers(run, train), "layers.grad_norm null on every row"
        if not names:
            return []
        numel = {e["name"]: e.get("numel") for e in run.layer_info}
        total = sum(v for n, v in numel.items() if isinstance(v, int) and train.get(n, True))
        missing = sum(numel.get(n) or 0 for n in names if isinstance(numel.get(n), int))
        modules = sorted({n.rsplit(".", 1)[0] if "." in n else n for n in names})
        ev = {"params": names[:MAX_NAMED], "params_count": len(names), "modules": modules[:MAX_NAMED],
              "without_grad_share": (missing / total) if total else None, "source": source}
        return [self.finding(
            f"{len(names)} trainable parameter(s) never received a gradient ({', '.join(modules[:5])}"
            f"{'...' if len(modules) > 5 else ''}; from {source})", layers=names[:MAX_NAMED], evidence=ev)]

    def _from_layers(self, run: Run, train: dict[str, bool]) -> list[str]:
        grads, weights = run.layer_matrix("grad_norm"), run.layer_matrix("weight_norm")
        if grads is None or weights is None:
            raise Skip("needs run.json params_without_grad or the layers table's grad_norm and weight_norm")
        if grads.values.shape[0] < self.min_rows:
            raise Skip(f"needs at least {self.min_rows} recorded layer rows")
        recorded = weights.present.sum(axis=0) >= self.min_rows
        no_grad = recorded & ~grads.present.any(axis=0)
        if no_grad.all() or not grads.present.any():
            return []  # nothing had a gradient: a logging gap, not a graph bug
        return [n for j, n in enumerate(grads.layers) if no_grad[j] and train.get(n, True)]


def _had_gradient(run: Run) -> set[str]:
    """Layers with a (non-null) gradient on some recorded row."""
    grads = run.layer_matrix("grad_norm")
    if grads is None:
        return set()
    return {n for j, n in enumerate(grads.layers) if grads.present[:, j].any()}
