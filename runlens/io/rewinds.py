"""Where a table's step went back, in the order its rows were written, with no resume to explain it.

Format v1 keeps the last row of each step, so a step counter that restarts
(a batch index passed as the step, a second training in the same folder)
silently replaces rows. A resume goes back too, by design, to the step its
attempt starts from (run.json ``attempts[i].first_step``); any other
rewind is a fault the run's own tables show, as long as nothing compacted
them (the recorder counts what it saw in ``attempts[i].steps_went_back``
for that case).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def rewinds(step: np.ndarray, meta: Mapping[str, Any]) -> dict[str, int] | None:
    """``{"times", "rows", "first_from", "first_to"}`` of ``step`` (row order) or None.

    ``times``: rows whose step is below the previous row's; ``rows``: rows whose step an
    earlier or later row shares (they replace each other). A row that starts a later
    attempt at its ``first_step`` is a resume, not counted. None when the step never went
    back or stood still unexplained.
    """
    if step.size < 2:
        return None
    d = np.diff(step)
    odd = np.flatnonzero(d <= 0)
    starts = _attempt_starts(meta)
    if odd.size and starts.size:
        odd = odd[~np.isin(step[odd + 1], starts)]
    if odd.size == 0:
        return None
    return {"times": int(np.count_nonzero(d[odd] < 0)), "rows": int(step.size - np.unique(step).size),
            "first_from": int(step[odd[0]]), "first_to": int(step[odd[0] + 1])}


def _attempt_starts(meta: Mapping[str, Any]) -> np.ndarray:
    attempts = meta.get("attempts")
    if not isinstance(attempts, list):
        return np.empty(0, dtype=np.int64)
    firsts = [a.get("first_step") for a in attempts[1:] if isinstance(a, Mapping)]
    return np.array([s for s in firsts if isinstance(s, int) and not isinstance(s, bool)], dtype=np.int64)
