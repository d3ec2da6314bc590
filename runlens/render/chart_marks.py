"""Where the findings point, gathered once for every chart: loss spikes, the
first non-finite loss, the crash or kill step, each finding's step and the
layers findings name."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from runlens.diagnosis import SEVERITY_RANK


@dataclass(frozen=True)
class Marks:
    """Steps the findings point at, gathered once for every chart."""

    spikes: tuple[int, ...]
    first_nan: int | None
    stop: int | None
    stop_label: str
    finding_steps: dict[str, int]
    layers: tuple[tuple[str, tuple[str, ...]], ...]  # (code, layers named), most severe first

    @classmethod
    def of(cls, diagnosis: Any) -> Marks:
        run = diagnosis.run
        spikes: set[int] = set()
        steps: dict[str, int] = {}
        for f in diagnosis.findings:
            if f.step is not None:
                steps.setdefault(f.code, f.step)
            if f.code == "loss_spikes":
                spikes.update(_int_list(f.evidence))
                if f.step is not None:
                    spikes.add(f.step)
        first_nan = steps.get("nonfinite_loss")
        if first_nan is None:
            loss = run.column("scalars", "loss")
            if loss is not None and not np.isfinite(loss).all():
                first_nan = int(run.steps("scalars")[np.argmin(np.isfinite(loss))])
        stop, label = None, ""
        error = run.error
        if error is not None and isinstance(error.get("step"), int):
            stop, label = int(error["step"]), f"crash ({error.get('type', 'error')})"
        elif run.status in ("crashed", "killed") and len(run.steps("scalars")):
            stop, label = int(run.steps("scalars")[-1]), run.status
        named = tuple((f.code, tuple(f.layers)) for f in sorted(diagnosis.findings, key=_severity) if f.layers)
        return cls(tuple(sorted(spikes)), first_nan, stop, label, steps, named)


def _severity(finding: Any) -> int:
    return SEVERITY_RANK.get(finding.severity, 9)


def _int_list(evidence: Any) -> Iterable[int]:
    """Integer step lists in a finding's evidence (``steps``, ``spike_steps`` ...)."""
    for key, value in evidence.items():
        if "step" in str(key) and isinstance(value, (list, tuple)):
            yield from (int(v) for v in value if isinstance(v, (int, np.integer)))
