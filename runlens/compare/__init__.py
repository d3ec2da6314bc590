"""Compare a run with its baseline: where is it worse beyond run-to-run noise?

The "deviates from its own historical baseline" alert: a pull request's
run against main's, tonight's run against last week's. The two runs are
aligned by step and compared only over the steps both reached, so a run
that crashed half-way is judged on the half it ran. Each check pairs a
statistical test with a practical threshold, so that a seed twin (the same
recipe, another seed) stays quiet and a real regression does not:

- **final loss / validation loss**: the last window of shared steps (10%,
  at least 20 points; a quarter, at least 5, of a validation curve) of each
  run; one-sided Mann-Whitney U (Welch's t below 5 points a side), Cliff's
  delta as the effect size,
  and a relative change of at least ``min_change`` that is also at least
  ``min_range_change`` of the baseline's own improvement over training.
- **convergence speed**: the step at which each (rolling-median smoothed)
  curve first reaches the loss where the baseline completed ``fraction``
  of its improvement; slower when the run needs ``slow_ratio`` times as
  many steps, or never gets there.
- **new non-finite values**: a NaN/Inf loss (or gradient norm on a step
  that was not skipped by a loss scaler) that the baseline never had, read
  as ``analyze`` reads them (``runlens.signals``: a null is not logged).
- **an improvement is not a regression**: the same level test the other
  way marks a run whose loss ends lower beyond noise; its gradient shift is
  then ``info``, a change.
- **new spikes**: loss spikes (robust z-score above ``spike_z`` against a
  rolling median) counted in both runs; a one-sided binomial test on the
  counts given each run's number of steps.
- **gradient shift**: per layer, the median gradient norm of the run
  against the baseline's; a shift of ``gradient_orders`` orders of
  magnitude or more either way is reported.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np

from runlens.compare.checks import (
    check_convergence,
    check_gradients,
    check_levels,
    check_nonfinite,
    check_spikes,
    findings_for,
)
from runlens.compare.config import ConfigChange, config_diff, explaining
from runlens.compare.model import COLUMNS, Comparison, Thresholds
from runlens.diagnosis import SEVERITY_RANK, Finding
from runlens.io.remote import open_run
from runlens.io.run import Run


def compare_runs(run: Run | str | os.PathLike[str], baseline: Run | str | os.PathLike[str], *,
                 thresholds: Thresholds | None = None) -> Comparison:
    """Compare ``run`` with ``baseline`` (runs, or paths to read)."""
    th = thresholds or Thresholds()
    run, baseline = _as_run(run), _as_run(baseline)
    shared = np.intersect1d(run.steps("scalars"), baseline.steps("scalars"))
    notes: list[str] = []
    parts: dict[str, Any] = {}
    if len(shared) < th.min_shared_steps:
        notes.append(f"the runs share {len(shared)} logged steps (< {th.min_shared_steps}): "
                     "losses and convergence not compared")
    else:
        parts["loss"] = check_levels(run, baseline, "scalars", "loss", th)
        parts["val_loss"] = check_levels(run, baseline, "evals", "val_loss", th)
        parts["convergence"] = check_convergence(run, baseline, th, notes)
    parts.update(check_nonfinite(run, baseline))
    parts["run_numbers"], parts["baseline_numbers"] = _numbers(run), _numbers(baseline)
    if parts.get("loss") is None and len(shared) >= th.min_shared_steps:
        notes.append("final loss not compared: too few finite values in the last window of either run")
    parts["spikes"] = check_spikes(run, baseline, th)
    parts["gradient_shifts"] = check_gradients(run, baseline, th)
    changes = config_diff(run.config, baseline.config)
    result = Comparison(run=run.path, baseline=baseline.path, run_name=run.name,
                        baseline_name=baseline.name, shared_steps=int(len(shared)),
                        notes=tuple(notes), thresholds=th, config_changes=changes, **parts)
    return _with_findings(result, [_linked(f, changes) for f in findings_for(result)])


def _with_findings(result: Comparison, findings: list[Finding]) -> Comparison:
    order = sorted(findings, key=lambda f: (SEVERITY_RANK[f.severity], f.code))
    return replace(result, findings=tuple(order))


def _linked(finding: Finding, changes: tuple[ConfigChange, ...]) -> Finding:
    """The finding with the changed config keys that can explain it (evidence and advice)."""
    hits = explaining(finding.code, changes)
    if not hits:
        return finding
    said = "; ".join(c.describe() for c in hits[:4])
    return replace(finding, evidence={**finding.evidence, "config_changes": [c.describe() for c in hits]},
                   advice=f"The config changed against the baseline ({said}): start there. {finding.advice}")


def _numbers(run: Run) -> dict[str, Any]:
    from runlens.signals import signals_of
    from runlens.summary import run_numbers

    return run_numbers(signals_of(run), run)


def _as_run(x: Run | str | os.PathLike[str]) -> Run:
    if isinstance(x, Run):
        return x
    return open_run(os.fspath(x), columns=COLUMNS)




__all__ = ["COLUMNS", "Comparison", "ConfigChange", "Thresholds", "compare_runs", "config_diff"]
