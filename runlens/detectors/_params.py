"""Detector parameters, declared once and checked at construction.

A detector lists ``constraints = {"window": Interval(int, 10, None), ...}``;
the base class checks every constructor argument against it right after
``__init__`` and raises :class:`~runlens.errors.UsageError` with
scikit-learn's message template, e.g. ``The 'window' parameter of
LossSpikes must be an int >= 10. Got 3 instead.`` A bound may name another
parameter (``Interval(float, "healthy_ratio", None)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from runlens.errors import UsageError

_KIND_WORDS = {int: "an int", float: "a float"}


@dataclass(frozen=True)
class Interval:
    """A number of ``kind`` (``int``, or ``float`` which accepts ints too) within bounds.

    ``closed`` is ``"both"``, ``"left"``, ``"right"`` or ``"neither"``; a
    bound is a number, the name of another parameter, or None (unbounded).
    """

    kind: type
    low: float | str | None = None
    high: float | str | None = None
    closed: str = "both"

    def describe(self, params: dict[str, Any]) -> str:
        words = _KIND_WORDS.get(self.kind, f"a {self.kind.__name__}")
        lo, hi = (self._bound(b, params) for b in (self.low, self.high))
        lo_in, hi_in = self.closed in ("both", "left"), self.closed in ("both", "right")
        if lo is not None and hi is not None:
            return f"{words} in the range {'[' if lo_in else '('}{lo}, {hi}{']' if hi_in else ')'}"
        if lo is not None:
            return f"{words} {'>=' if lo_in else '>'} {lo}"
        if hi is not None:
            return f"{words} {'<=' if hi_in else '<'} {hi}"
        return words

    def accepts(self, value: Any, params: dict[str, Any]) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int and not isinstance(value, int):
            return False
        if self.kind is float and not (isinstance(value, (int, float)) and not math.isnan(value)):
            return False
        lo, hi = (_number(params, b) for b in (self.low, self.high))
        lo_in, hi_in = self.closed in ("both", "left"), self.closed in ("both", "right")
        if lo is not None and not (value >= lo if lo_in else value > lo):
            return False
        return hi is None or (value <= hi if hi_in else value < hi)

    @staticmethod
    def _bound(b: float | str | None, params: dict[str, Any]) -> str | None:
        if b is None:
            return None
        if isinstance(b, str):
            return f"{b} ({params.get(b)!r})"
        return f"{b:g}" if isinstance(b, float) else str(b)


def _number(params: dict[str, Any], b: float | str | None) -> float | None:
    if isinstance(b, str):
        v = params.get(b)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return b


def validate(owner: str, constraints: dict[str, Interval], params: dict[str, Any]) -> None:
    """Raise UsageError for the first parameter that breaks its constraint."""
    for name, rule in constraints.items():
        if name in params and not rule.accepts(params[name], params):
            raise UsageError(f"The {name!r} parameter of {owner} must be {rule.describe(params)}. "
                             f"Got {params[name]!r} instead.")
