"""The detectors: one module per finding code, registered on import.

Adding a detector is adding one module here (and its tests); importing this
package imports every module in it, which registers them. The contract each
detector is held to (parameters, data needs, Skip, dependencies, advice) is in
:mod:`runlens.detectors._base`.
"""

from __future__ import annotations

import importlib
import pkgutil

from runlens.detectors._base import REGISTRY, Context, Detector, Interval, Needs, Skip, register

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_mod}")

__all__ = ["REGISTRY", "Context", "Detector", "Interval", "Needs", "Skip", "register"]
