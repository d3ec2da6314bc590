"""Loss parts logged without their total: summed where they are logged together, or a ``total``
column proven the sum of its neighbours."""

from __future__ import annotations

import numpy as np

from runlens.io.reader.names import (
    METRIC,
    NEUTRAL,
    TOTAL,
    is_epoch,
    is_grad_norm,
    is_lr,
    is_step,
    is_val,
    tokens,
)
from runlens.io.reader.picks import Pick
from runlens.io.reader.table import Table

#: The terms of a one-stage detector's loss named by their target alone, printed with no total (YOLOv5's
#: ``box obj cls`` header from v6.0 to v6.2, its oriented variant's ``theta``, YOLOv8's ``dfl``): a box
#: regression beside an objectness or classification term is no count or size, whatever else a table holds.
DETECTOR_TERMS = frozenset({"box", "obj", "cls", "dfl", "theta"})


def detector_terms(cols: list[str]) -> list[str]:
    """The columns named each by one :data:`DETECTOR_TERMS` word, when ``box`` is one of two or more and
    no column is named a total: a ``total`` beside them that is not their sum (:func:`total_of_parts`
    found none) leaves what they are in doubt."""
    if any(TOTAL & set(t) and set(t) <= NEUTRAL for c in cols if (t := tokens(c))):
        return []
    found = [c for c in cols if len(t := tokens(c)) == 1 and t[0] in DETECTOR_TERMS]
    words = {tokens(c)[0] for c in found}
    return found if "box" in words and len(words) >= 2 else []


def sum_of_parts(table: Table, lossy: list[str], role: str) -> tuple[Pick, list[str]]:
    """Loss parts without a total, summed where they are logged together. A sum needs every part
    on its row: parts printed on lines of their own (a GAN's discriminator and generator steps
    alternate) share no row, and their sum would be empty; the part on the most rows is the loss
    then, with the parts printed beside it on at least half of its rows."""
    count = {c: int(table.present[c].sum()) for c in lossy}
    best = max(lossy, key=lambda c: (count[c], -lossy.index(c)))
    beside = [c for c in lossy if 2 * int((table.present[c] & table.present[best]).sum()) >= count[best]]
    if len(beside) == len(lossy):
        return Pick(role, tuple(lossy), "sum", f"loss parts logged without a total: summed ({len(lossy)} parts)"), lossy
    if len(beside) > 1:
        return Pick(role, tuple(beside), "sum", f"loss parts logged without a total: summed ({len(beside)} parts "
                    f"logged together; {', '.join(repr(c) for c in lossy if c not in beside)} on other lines)"), beside
    most = "the first of those on the most lines" if sum(count[c] == count[best] for c in lossy) > 1 else "on the most lines"
    return Pick(role, (best,), "column", f"loss parts logged on lines of their own: {best!r}, "
                f"{most} ({count[best]}), is read as the loss "
                f"(the others: {', '.join(repr(c) for c in lossy if c != best)}; --loss names another)"), []


# A total's parts are printed beside it: of more candidate columns than this, the nearest are searched
# (every subset of 16 is 65,536 sums on a few rows, then the matches on every row).
_MAX_PARTS = 16
_REL = 1e-3  # values printed to 4 significant digits sum to their printed total within a few 1e-4


def total_of_parts(table: Table, cols: list[str]) -> Pick | None:
    """A column named by a total's neutral words alone (``total``, ``sum``) that is the sum of two or more
    other columns at every row: the total of the parts, the training loss (YOLOv5's ``box obj cls total``).

    Only the values prove it: a ``total`` that is not a sum of its neighbours (a count, a time) stays a
    column of its own; counters, rates, norms, metrics and validation columns are never parts.
    """
    for total in cols:
        t = tokens(total)
        # The rows where the total is a number: a run that diverged (``nan`` in every column) is proven
        # on the rows before, and its NaN total is then the finding.
        rows = table.present[total] & np.isfinite(table.values[total])
        if not t or not set(t) <= NEUTRAL or not TOTAL & set(t) or not rows.any():
            continue
        at = cols.index(total)
        parts = sorted((c for c in cols if c != total and _may_be_part(table, c, rows)),
                       key=lambda c: abs(cols.index(c) - at))[:_MAX_PARTS]
        parts.sort(key=cols.index)
        x = np.stack([table.values[c][rows] for c in parts], axis=1) if len(parts) >= 2 else None
        found = _summands(table.values[total][rows], x) if x is not None else None
        if found is not None:
            names = "+".join(parts[j] for j in found)
            return Pick("loss", (total,), "column", f"{total!r} is the sum of {names} at every row")
    return None


def _may_be_part(table: Table, c: str, rows: np.ndarray) -> bool:
    t = tokens(c)
    v = table.values[c][rows]
    if not table.present[c][rows].all() or not np.all(np.isfinite(v)) or not np.any(v != 0):
        return False  # a part missing, non-finite or always zero proves nothing
    return not (is_epoch(t) or is_step(t) or is_lr(t) or is_grad_norm(t) or is_val(t) or METRIC & set(t))


def _summands(y: np.ndarray, x: np.ndarray) -> list[int] | None:
    """The columns of ``x`` (two or more) that sum to ``y`` on every row, the most of them; None if none do."""
    k = x.shape[1]
    masks = ((np.arange(1, 1 << k)[:, None] >> np.arange(k)) & 1).astype(bool)
    masks = masks[masks.sum(axis=1) >= 2]
    scale = np.maximum(np.abs(y), 1e-12)[:, None]
    probe = np.unique(np.linspace(0, len(y) - 1, min(len(y), 8)).astype(int))
    near = np.all(np.abs(x[probe] @ masks.T - y[probe, None]) <= _REL * scale[probe], axis=0)
    masks = masks[near]
    if len(masks):
        masks = masks[np.all(np.abs(x @ masks.T - y[:, None]) <= _REL * scale, axis=0)]
    if not len(masks):
        return None
    best = masks[int(np.argmax(masks.sum(axis=1)))]
    return [int(j) for j in np.flatnonzero(best)]
