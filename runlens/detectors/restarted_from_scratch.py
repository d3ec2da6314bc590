"""The ``restarted_from_scratch`` detector: a later attempt's loss starts again at the initial level."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from runlens.detectors._base import Context, Detector, Interval, Needs, Skip, register
from runlens.diagnosis import Finding
from runlens.stats.progress import level_return

if TYPE_CHECKING:
    from runlens.io.run import Run


def later_attempts(meta: Mapping[str, Any]) -> list[tuple[int, int]]:
    """``(attempt index, first_step)`` of every attempt after the first that states its first step."""
    attempts = meta.get("attempts")
    if not isinstance(attempts, list):
        return []
    out = []
    for i, a in enumerate(attempts[1:], start=1):
        step = a.get("first_step") if isinstance(a, Mapping) else None
        if isinstance(step, int) and not isinstance(step, bool):
            out.append((i, step))
    return out


@register
class RestartedFromScratch(Detector):
    """A later attempt of the run started training again from scratch instead of from its checkpoint.

    What it detects:
        A run directory written by more than one start (run.json
        ``attempts``), where a later attempt's loss begins again near the
        level the first attempt started from, not at the level the first
        attempt had reached when it stopped: the checkpoint was not loaded
        (or not into the model and optimizer that train), or the folder was
        reused for a new training. Also an attempt whose step counter went
        back to the first attempt's first step: a second training written
        over the first (``kind: steps_restarted``).

    Why it matters:
        The run looks like one long training, but its last stretch is a
        fresh start: the steps and the compute of the first attempt are
        lost, the curve's shape and every per-step comparison mix two
        trainings, and a "resumed" job that silently restarts will never
        finish.

    How it decides:
        For each later attempt with a ``first_step`` after the first
        attempt's first loss step: ``k`` = a tenth of the first attempt's
        losses (3 to 20), the first attempt's first ``k`` losses
        (``first``), its last ``k`` before the attempt (``before``) and the
        attempt's first ``k`` (``after``). It fires when the first attempt
        had made progress (``before`` below ``first``, Mann-Whitney
        one-sided p < ``alpha``), the attempt starts above where the first
        one stopped (``after`` above ``before``, p < ``alpha``) and it gave
        back at least ``min_given_back`` of that progress
        (``(median after - median before) / (median first - median
        before)``): nearer the initial level than the reached one. An
        attempt whose first step is at or before the first attempt's first
        step fires whatever the levels (its rows replaced the first
        training's). Severity error.

    What to try:
        Load the checkpoint before training resumes, into the same model and
        optimizer objects (``model.load_state_dict``,
        ``optimizer.load_state_dict``, the scheduler and the step counter
        too), and check that the loaded keys match (``strict=True``); write
        a new training into a new folder, or pass ``resume=False`` to the
        recorder for a fresh start.

    Parameters:
        alpha: significance level of the rank tests (0.01). min_given_back:
        share of the first attempt's progress the restart must give back
        (0.5: nearer the initial level than the level reached).
    """

    code = "restarted_from_scratch"
    severity = "error"
    title = "Later attempt restarted from scratch"
    needs = Needs(scalars=("loss", "step_skipped"), requires=("scalars.loss",))
    constraints: ClassVar[dict[str, Interval]] = {"alpha": Interval(float, 0, 1, closed="neither"),
                                                  "min_given_back": Interval(float, 0, 1, closed="right")}

    def __init__(self, *, alpha: float = 0.01, min_given_back: float = 0.5) -> None:
        self.alpha = alpha
        self.min_given_back = min_given_back

    def check(self, run: Run, ctx: Context) -> Iterable[Finding]:
        attempts = later_attempts(run.meta)
        if not attempts:
            return []
        loss = ctx.signals_of(run).loss
        steps, x = loss.steps, loss.values
        if x.size < 6:
            raise Skip(f"only {x.size} finite training losses")
        first_step = int(steps[0])
        for i, at in attempts:
            if at <= first_step:
                return [self.finding(
                    f"Attempt {i + 1} started again at step {at:,}, at or before the first attempt's first step: "
                    "a second training was written over the first in the same folder",
                    step=at, evidence={"attempt": i + 1, "attempt_first_step": at, "first_step": first_step,
                                       "kind": "steps_restarted", "n_attempts": len(run.meta["attempts"])})]
            hit = self._level_return(steps, x, at)
            if hit is not None:
                return [self.finding(
                    f"Attempt {i + 1} (from step {at:,}) starts its loss at {hit['level_after']:.4g}, back near the "
                    f"first attempt's initial {hit['first_level']:.4g} instead of the {hit['level_before']:.4g} it had "
                    f"reached ({hit['given_back']:.0%} of the progress given back, Mann-Whitney "
                    f"p={hit['p_above_before']:.1e}): the checkpoint was not loaded",
                    step=at, evidence={"attempt": i + 1, "attempt_first_step": at, "kind": "level_return", **hit,
                                       "n_attempts": len(run.meta["attempts"])})]
        return []

    def _level_return(self, steps: np.ndarray, x: np.ndarray, at: int) -> dict[str, Any] | None:
        j = int(np.searchsorted(steps, at))
        k = int(np.clip(j // 10, 3, 20))
        if j < 2 * k or x.size - j < 3:
            return None
        hit = level_return(x[:k], x[j - k:j], x[j:j + k])
        if hit is None or not (hit["p_progress"] < self.alpha and hit["p_above_before"] < self.alpha
                               and hit["given_back"] >= self.min_given_back):
            return None
        return {**hit, "points_compared": k}
