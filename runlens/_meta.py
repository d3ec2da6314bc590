"""run.json's ``config`` and ``error``, read one way by a :class:`~runlens.io.run.Run` and by its
:class:`~runlens.diagnosis.Diagnosis` (which keeps the run's meta as a plain value)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MetaFields:
    """``config`` and ``error`` of a class holding run.json as ``meta``."""

    __slots__ = ()
    meta: Mapping[str, Any]

    @property
    def config(self) -> Mapping[str, Any]:
        """run.json ``config`` (empty when absent or not an object)."""
        cfg = self.meta.get("config")
        return cfg if isinstance(cfg, Mapping) else {}

    @property
    def error(self) -> Mapping[str, Any] | None:
        """run.json ``error`` of a crashed run, else None."""
        err = self.meta.get("error")
        return err if isinstance(err, Mapping) else None
