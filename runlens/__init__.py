"""runlens: why did this training run go wrong?

The public API::

    run = runlens.load_run("runs/exp1")       # a Run: metadata + Arrow tables
    diagnosis = runlens.analyze(run)          # or analyze("runs/exp1")
    diagnosis.to_dict()                       # the spec's JSON object

Attributes are imported on first use, so ``import runlens`` stays light
(no scipy, no detectors) until an analysis actually runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runlens.analysis import analyze
    from runlens.diagnosis import CurveVerdict, DetectorOutcome, Diagnosis, Finding
    from runlens.errors import (
        ImportFailedError,
        RunFormatError,
        RunlensError,
        UnsupportedVersionError,
        UsageError,
    )
    from runlens.io.loader import load_run
    from runlens.io.run import LayerMatrix, Run

# public name -> module that defines it
_EXPORTS = {
    "CurveVerdict": "runlens.diagnosis",
    "DetectorOutcome": "runlens.diagnosis",
    "Diagnosis": "runlens.diagnosis",
    "Finding": "runlens.diagnosis",
    "ImportFailedError": "runlens.errors",
    "LayerMatrix": "runlens.io.run",
    "Run": "runlens.io.run",
    "RunFormatError": "runlens.errors",
    "RunlensError": "runlens.errors",
    "UnsupportedVersionError": "runlens.errors",
    "UsageError": "runlens.errors",
    "analyze": "runlens.analysis",
    "load_run": "runlens.io.loader",
}

__all__ = [
    "CurveVerdict",
    "DetectorOutcome",
    "Diagnosis",
    "Finding",
    "ImportFailedError",
    "LayerMatrix",
    "Run",
    "RunFormatError",
    "RunlensError",
    "UnsupportedVersionError",
    "UsageError",
    "analyze",
    "load_run",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'runlens' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
