"""Console lines that count or name things some other way than ``step N`` before the fields.

Gradient boosting prints a bare round counter first (XGBoost and LightGBM ``[10]\\ttrain-rmse:...``,
CatBoost ``10:\\tlearn: 0.66\\ttest: 0.67``); TF's Estimator writes the step as the last field
(``loss = 2.31, step = 100 (0.3 sec)``); ESPnet glues the epoch to its word (``3epoch results:``) and
heads a line's fields with the set they belong to (``[train] loss=2.40, ... [valid] loss=2.10``);
early stopping repeats the best round's line after ``Best iteration is:``. (TF's ``Model diverged
with loss = NaN.``, a line with no step, is read with the other warnings: :mod:`._logsignals`.) The patterns and the rules for them live here; the step
finder (:mod:`._textline`) and the scanner (:mod:`.text`) call them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import numpy as np

from runlens.io.importers._common import Series
from runlens.io.reader.names import (
    LOSS,
    METRIC,
    TRAIN,
    VAL,
    counter_core,
    is_loss_scale,
    is_lr,
    is_step,
    tokens,
)

Fields = list[tuple[str, float]]

# A bare round counter opening the line, before a name: ``[0] 0.5 0.4`` (an R vector) or ``12:34`` is none.
LEADING = re.compile(r"^(?:\[(\d+)\]|(\d+):)[ \t]+(?=[A-Za-z_]|\[[A-Za-z]\w*\] )")
# The epoch glued to its word; ``3/25epoch`` (a progress count) is none.
GLUED_EPOCH = re.compile(r"(?<![\w./])(\d+)epoch\b")
# The step marker written as a field (``step = 100``, ``step=100``), not as a header (``step 100``).
_FIELD_SEP = re.compile(r"[:=]")
# Names that are a data set's alone (CatBoost's ``learn``, ``test``).
SET_ONLY = TRAIN | VAL
# A bracketed data set's name heading the fields that follow it.
_SECTION = re.compile(r"\[([A-Za-z]+)\]")
# "Best iteration is:" / "Stopping. Best iteration:": a line naming the best that ends in a colon
# announces that the next line repeats the best round's line.
BEST_NEXT = re.compile(r"\bbest\b[^:]*:\s*$", re.I)


def keyed_rest(text: str, m: re.Match, read: Callable[[str], Fields]) -> tuple[str, int, bool]:
    """``(text of the fields, its offset, is an evaluation's summary)`` for a line whose step marker
    ``m`` was found.

    The fields follow the marker, or precede it when the marker is a ``name = N`` field with no field
    after it: the step was written last. A dict of results that records the step it was computed at
    among its own fields (``for global step 1000: ..., global_step = 1000, ...``) is an evaluation's
    summary: a training line names its step once.
    """
    after = read(text[m.end():])
    step = int(m.group(1))
    # The same counter again (``global step 1000`` ... ``global_step = 1000``); another counter that
    # happens to equal it (``step 0: It: 0``, a line numbered before its own ``It``) says nothing.
    marker = counter_core(tokens(text[m.start():m.start(1)]))
    summary = any(is_step(tokens(k)) and v == step and counter_core(tokens(k)) == marker for k, v in after)
    if not after and _FIELD_SEP.search(text, m.start(), m.start(1)) and read(text[:m.start()]):
        return text[:m.start()], 0, summary
    if after and not _names_loss(after) and _names_loss(read(text[:m.start()])):
        # The loss before the marker, other fields after it (arcface_torch's "Speed 463.03 samples/sec
        # Loss 44.1258 LearningRate 0.0781 Epoch: 0 Global Step: 2750 Fp16 Grad Scale: 12800"): the
        # fields after it alone would drop the loss. The whole line's are the line's fields.
        return text, 0, summary
    return text[m.end():], m.end(), summary


def _names_loss(fields: Fields) -> bool:
    """Whether a field is named a loss (a loss scale is not one)."""
    return any(not LOSS.isdisjoint(t) and not is_loss_scale(t) for k, _ in fields if (t := tokens(k)))


def set_named(fields: Fields) -> Fields | None:
    """On a round's line, a name that is a data set's alone is the set's objective: ``learn`` is read as
    ``learn loss``; None when no name is a set's alone."""
    if not any(k.lower() in SET_ONLY for k, _ in fields):
        return None
    return [(f"{k} loss" if k.lower() in SET_ONLY else k, v) for k, v in fields]


def qualified(text: str, out: list[tuple[str, float, tuple[int, int]]],
              offset: int) -> list[tuple[str, float, tuple[int, int]]]:
    """A line's fields with the names their place on the line gives them: a ``[set]`` section's, a
    loss group's parts, a repeated name's set (:func:`in_sections`, :func:`in_loss_group`,
    :func:`repeats_by_set`)."""
    if "[" in text:
        out = in_sections(text, out, offset)
    # A group's label holds no value of its own: a line with a loss-named field has no such label to look
    # for (most lines: the regex is then not run at all).
    if ("oss" in text or "OSS" in text) and not any("oss" in k or "OSS" in k for k, _, _ in out):
        out = in_loss_group(text, out, offset)
    if ":" in text and any(k.lower() in SET_ONLY for k, _, _ in out):
        out = in_metric_group(text, out, offset)
    return repeats_by_set(out)


def in_sections(text: str, out: list[tuple[str, float, tuple[int, int]]],
                offset: int) -> list[tuple[str, float, tuple[int, int]]]:
    """The fields with the name of the set whose ``[set]`` section holds them put before their own names:
    one line reports both sets, and the names alone do not say which is which."""
    heads = [(m.end() + offset, m.group(1)) for m in _SECTION.finditer(text) if m.group(1).lower() in SET_ONLY]
    if not heads:
        return out
    named = []
    for key, value, span in out:
        section = next((name for at, name in reversed(heads) if at <= span[0]), None)
        if section is not None and not (TRAIN | VAL) & set(tokens(key)):
            key = f"{section} {key}"
        named.append((key, value, span))
    return named


def repeats_by_set(out: list[tuple[str, float, tuple[int, int]]]) -> list[tuple[str, float, tuple[int, int]]]:
    """A name that repeats on one line, after fields that name their set (``Train acc: 0.59 loss: 0.61
    Val acc: 0.58 loss: 0.63``), belongs to the set the nearest such field before it names: read as
    ``Train loss``, ``Val loss``. Left as printed when no name repeats (nothing is ambiguous then)."""
    names = [k.lower() for k, _, _ in out]
    if len(set(names)) == len(names):
        return out
    repeated = {n for n, count in Counter(names).items() if count > 1}  # one pass: a line may hold 10^5 fields
    current: str | None = None
    named = []
    for key, value, span in out:
        words = tokens(key)
        own = next((w for w in words if w in SET_ONLY), None)
        if own is not None:
            current = key.split()[0] if key.split()[0].lower() in SET_ONLY else own
        elif current is not None and key.lower() in repeated:
            key = f"{current} {key}"
        named.append((key, value, span))
    return named if current is not None else _second_record(named)


def _second_record(out: list[tuple[str, float, tuple[int, int]]]) -> list[tuple[str, float, tuple[int, int]]]:
    """A group of two names or more printed again, in the same order, later on the line, with no field
    naming a set (CenterNet's ``epoch: 5 |loss 11.54 | hm_loss 9.21 | ... | loss 35.19 | hm_loss 9.21 |
    ...``, the evaluation's record appended to the epoch's line): the second record is the evaluation's,
    read as ``val <name>``, not a second training point at the same step."""
    names = [k.lower() for k, _, _ in out]
    for i, name in enumerate(names):
        if name not in names[i + 1:]:
            continue
        j = names.index(name, i + 1)
        width = 0
        while i + width < j and j + width < len(names) and names[i + width] == names[j + width]:
            width += 1
        if width < 2:
            return out
        return [(f"val {k}" if j <= at < j + width else k, v, span) for at, (k, v, span) in enumerate(out)]
    return out


# A loss word that labels a group of fields rather than holding a value (PyTorch-YOLOv3's ``[Losses: x
# 0.1, y 0.2, ..., total 2.1, recall: 0.5]``): the group runs to its closing bracket or the line's end.
_LOSS_GROUP = re.compile(r"\blosses?\s*:\s*(?!(?:nan|inf)\b)(?=[A-Za-z_]\w*\s*[:=]?\s*[-+]?(?:\d|\.\d|nan|inf))",
                         re.I)


def in_loss_group(text: str, out: list[tuple[str, float, tuple[int, int]]],
                  offset: int) -> list[tuple[str, float, tuple[int, int]]]:
    """The fields of a group a loss word labels are the loss's parts: named ``loss <name>`` (``total``
    becomes the total loss) unless the name already says a loss or another quantity (``recall``)."""
    groups = []
    for m in _LOSS_GROUP.finditer(text):
        close = text.find("]", m.end())
        groups.append((m.end() + offset, (close if close >= 0 else len(text)) + offset))
    if not groups:
        return out
    named = []
    for key, value, span in out:
        words = tokens(key)
        if any(a <= span[0] < b for a, b in groups) and not (set(words) & (LOSS | METRIC | SET_ONLY)) \
                and not is_lr(words) and not is_step(words):
            key = f"loss {key}"
        named.append((key, value, span))
    return named


# A metric word that labels the sets' values after it (mlpack's ``0 - accuracy: train = 19.2%, valid =
# 19.6%``): the word holds no value of its own, the set names after it are that metric's, not the loss's.
_METRIC_GROUP = re.compile(rf"\b({'|'.join(sorted(METRIC - {'time', 'eta', 'memory', 'mem'}))})\s*:\s*"
                           r"(?=[A-Za-z_]\w*\s*[:=]?\s*[-+]?(?:\d|\.\d|nan|inf))", re.I)


def in_metric_group(text: str, out: list[tuple[str, float, tuple[int, int]]],
                    offset: int) -> list[tuple[str, float, tuple[int, int]]]:
    """The bare set names in a group a metric word labels are that metric's values (``train accuracy``),
    up to the next field named otherwise: a set name alone is read as its loss elsewhere."""
    heads = [(m.end() + offset, m.group(1)) for m in _METRIC_GROUP.finditer(text)]
    if not heads:
        return out
    named = []
    for key, value, span in out:
        head = next((word for at, word in reversed(heads) if at <= span[0]), None)
        if head is not None and key.lower() in SET_ONLY:
            key = f"{key} {head}"
        elif head is not None:
            heads = [h for h in heads if h[0] > span[0]]  # a named field ends the group
        named.append((key, value, span))
    return named


_ECHO_RUN = 3  # records of one value in a row that make an echo, not evaluations


def first_of_runs(series: Series, column: str, warnings: list[str]) -> Series:
    """A validation series echoed on training lines (NeMo prints the last ``val_loss`` on every progress
    line until the next evaluation): each run of one value repeated unchanged is one evaluation, at the
    step it first appeared.

    Told from genuinely equal evaluations by the runs: at least two values, each held unchanged over
    ``_ECHO_RUN`` or more records in a row. Fresh evaluations of a loss printed to a few significant
    digits do not repeat exactly, run after run; a series of one value throughout (a stuck loss, or one
    evaluation) is left as it is, since nothing tells the two apart there.
    """
    v = series.values
    if len(v) < 2 * _ECHO_RUN:
        return series
    starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))  # NaN != NaN: never an echo
    lengths = np.diff(np.append(starts, len(v)))
    if len(starts) < 2 or int((lengths >= _ECHO_RUN).sum()) < 2:
        return series
    warnings.append(f"{column}: {len(v)} values repeated unchanged over consecutive lines (the last evaluation "
                    f"printed again until the next): read as {len(starts)} evaluations")
    times = series.times[starts] if series.times is not None else None
    return Series(series.steps[starts], v[starts], times)
