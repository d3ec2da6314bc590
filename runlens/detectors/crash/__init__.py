"""The ``crash_*`` detectors: one module per crash code, over one shared decoding.

:mod:`~runlens.detectors.crash.decode` reads a crashed run's recorded
exception into a code, a cause and fixes; :class:`~runlens.detectors.crash.base.CrashDetector`
reports it when the decoded code is the detector's own. Importing this package
registers every ``crash_*`` module in it.
"""

from __future__ import annotations

import importlib
import pkgutil

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("crash_")):
    importlib.import_module(f"{__name__}.{_mod}")
