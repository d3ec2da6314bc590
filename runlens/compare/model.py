"""The comparison's data model (thresholds, test results, ``Comparison``) and the small
statistics its checks share; the checks themselves are in ``checks.py``, the entry point
``compare_runs`` in the package."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats as sps

from runlens.diagnosis import Finding, jsonable, reaches, worst
from runlens.stats.robust import rolling_median
from runlens.stats.spikes import difference_spikes

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from runlens.compare.config import ConfigChange

#: What a comparison reads (the loader projects on it).
COLUMNS = {"scalars": ["loss", "grad_norm", "step_skipped", "loss_scale", "time"], "evals": ["val_loss"],
           "layers": ["grad_norm"]}


@dataclass(frozen=True)
class Thresholds:
    """When a difference counts. Keyword-only, stored verbatim."""

    window: float = 0.10
    min_window: int = 20
    alpha: float = 0.01
    min_effect: float = 0.5
    min_change: float = 0.02
    min_range_change: float = 0.05
    error_change: float = 0.10
    fraction: float = 0.9
    slow_ratio: float = 1.5
    spike_z: float = 8.0
    min_spikes: int = 3
    gradient_orders: float = 1.0
    min_shared_steps: int = 20


@dataclass(frozen=True)
class LevelTest:
    """One metric's last-window comparison (run minus baseline)."""

    metric: str
    run_median: float
    baseline_median: float
    relative_change: float
    test: str
    p_value: float
    effect_size: float
    n_run: int
    n_baseline: int
    first_step: int
    last_step: int
    worse: bool
    better: bool = False  # lower than the baseline's beyond noise (the same test, the other way)


@dataclass(frozen=True)
class Convergence:
    target_loss: float
    fraction: float
    baseline_step: int
    run_step: int | None
    ratio: float | None
    slower: bool


@dataclass(frozen=True)
class SpikeTest:
    run_count: int
    baseline_count: int
    run_steps: tuple[int, ...]
    p_value: float
    more: bool


@dataclass(frozen=True)
class GradientShift:
    layer: str
    run_median: float
    baseline_median: float
    log10_ratio: float


@dataclass(frozen=True)
class Comparison:
    """Everything ``compare_runs`` concluded; ``findings`` is what the reports list."""

    run: str
    baseline: str
    run_name: str
    baseline_name: str
    shared_steps: int
    loss: LevelTest | None = None
    val_loss: LevelTest | None = None
    convergence: Convergence | None = None
    run_nonfinite_step: int | None = None  # the first non-finite training loss (a key number)
    baseline_nonfinite_step: int | None = None
    run_nonfinite_grad_step: int | None = None  # the first non-finite gradient norm on a step taken
    baseline_nonfinite_grad_step: int | None = None
    #: Each run's key numbers (``runlens.summary.run_numbers``): the numbers every command shows.
    run_numbers: Mapping[str, Any] = field(default_factory=dict)
    baseline_numbers: Mapping[str, Any] = field(default_factory=dict)
    spikes: SpikeTest | None = None
    gradient_shifts: tuple[GradientShift, ...] = ()
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    thresholds: Thresholds = field(default_factory=Thresholds)
    config_changes: tuple[ConfigChange, ...] = ()  # run vs baseline

    @property
    def worst(self) -> str | None:
        return worst(f.severity for f in self.findings)

    def reaches(self, fail_on: str) -> bool:
        """Whether a finding reaches ``--fail-on`` (the one rule of ``runlens.diagnosis``)."""
        return reaches((f.severity for f in self.findings), fail_on)

    def to_dict(self) -> dict[str, Any]:
        def obj(x: DataclassInstance | None) -> dict[str, Any] | None:
            return None if x is None else {k: getattr(x, k) for k in x.__dataclass_fields__}

        return jsonable({
            "run": self.run, "baseline": self.baseline, "name": self.run_name,
            "baseline_name": self.baseline_name, "shared_steps": self.shared_steps,
            "loss": obj(self.loss), "val_loss": obj(self.val_loss),
            "convergence": obj(self.convergence),
            "nonfinite": {"run_step": self.run_nonfinite_step,
                          "baseline_step": self.baseline_nonfinite_step,
                          "run_grad_step": self.run_nonfinite_grad_step,
                          "baseline_grad_step": self.baseline_nonfinite_grad_step},
            "key_numbers": {"run": dict(self.run_numbers), "baseline": dict(self.baseline_numbers)},
            "spikes": obj(self.spikes),
            "gradient_shifts": [obj(g) for g in self.gradient_shifts],
            "findings": [f.to_dict() for f in self.findings], "notes": list(self.notes),
            "config_diff": [{"key": c.key, "kind": c.kind, "run": c.run_value, "baseline": c.baseline_value,
                             "knob": c.knob or None} for c in self.config_changes],
            "thresholds": obj(self.thresholds),
        })


# -- statistics used by the checks (pure numpy/scipy) ------------------------

def cliffs_delta(u_statistic: float, n_a: int, n_b: int) -> float:
    """Cliff's delta from Mann-Whitney's U of ``a``: P(a > b) - P(a < b)."""
    return 2.0 * u_statistic / (n_a * n_b) - 1.0


def smooth(y: np.ndarray) -> np.ndarray:
    """A rolling median wide enough to hide batch noise, narrow enough to keep the shape."""
    return rolling_median(y, max(5, len(y) // 50))


def spike_steps(steps: np.ndarray, loss: np.ndarray, z_min: float, window: int = 25) -> list[int]:
    """First step of each run of consecutive upward outliers of the finite loss
    (:func:`~runlens.stats.spikes.difference_spikes`)."""
    return [int(steps[int(s["start"])]) for s in difference_spikes(loss, z_min=z_min, window=window)]


def binom_more(k_run: int, k_base: int, n_run: int, n_base: int) -> float:
    """One-sided p that the run's spike rate exceeds the baseline's (exact, conditional)."""
    total = k_run + k_base
    if total == 0:
        return 1.0
    share = n_run / (n_run + n_base)
    return float(sps.binomtest(k_run, total, share, alternative="greater").pvalue)
