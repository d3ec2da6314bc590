"""The last reading of a console log in no shape the text reader knows: the numbers its lines name.

A loop's own print (``Loss error: 0.37``, ``I:10 Train-Err:0.312 Test-Err:0.420``,
``Epoch 3 [60.2s]: train==[65.2=64.5 + 0.7]``, ``170 / 178 : loss = nan``) often
carries no step marker the text reader's patterns know, and no field spelled as
they expect. When that reader finds no training signal, this one reads every
line by one rule, without patterns per trainer:

- a *value* is a number standing alone (not part of a word such as ``d1`` or a
  unit such as ``60.2s``), or ``nan``/``inf``;
- its *name* is the text between it and the value before it, cut at the last
  separator (``:``, ``=``, ``,``, ``;``, ``|``, brackets): the words that touch it;
- a line's first value is its *counter* when it is a whole number with no
  name, or named by a counting word (``I``, ``iter``, ``Epoch``, ``step``); a
  line that holds only a counter (``epoch=29``) is the counter of the lines
  below it that have none; a number with a fraction right after the counter,
  with no name, on a line that names nothing, is the loss when no line names one;
- the training loss is the name a loss or an error word makes a loss
  (:mod:`runlens.io.reader.names`'s vocabulary), on the training side, on the
  most lines (a loss word before an error word; two names on as many lines
  are the user's to choose); the validation loss the same on the validation side. A name
  that is only a side (``train``, ``test``) is that side's loss when no line
  names a loss. ``total`` after a ``loss:`` on its line is the loss.

Three lines with the loss at least, or one with a non-finite loss (a run that
printed NaN once is a finding however short), or two beside two of the validation
loss (a paste of a run's first and last epochs). Only the candidates' numbers are
kept while the log streams by, never its text: a long log that names no loss
costs a pass over its lines and no memory. The index is the counter when
it rises on every loss line, else the lines in order; the import warnings say
which name was taken, so a reader can check it (``--loss NAME`` names another).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import math
import re
from array import array
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from runlens.errors import ImportFailedError
from runlens.io.importers._anypick import BARE, GRAINS, LOSSY, candidate, only_side, pick
from runlens.io.importers._anysaid import accuracies, broken_metrics, keep_accuracy, said
from runlens.io.importers._clean import strip_prefixes
from runlens.io.importers._common import (
    SIGNAL_COLUMNS,
    Imported,
    Series,
    Take,
    is_val_set,
    last_per_step,
)
from runlens.io.importers._logsignals import Watch
from runlens.io.importers._postfix import postfix_fields
from runlens.io.importers._ranks import one_rank
from runlens.io.importers._textblock import blocks
from runlens.io.reader.names import (
    COUNT_WORDS,
    ERROR_WORDS,
    METRIC,
    TOTAL,
    TRAIN,
    VAL,
    tokens,
)
from runlens.io.reader.source import open_limited

_VALUE = re.compile(r"(?<![\w.])([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?))(?![\w.])",
                    re.IGNORECASE)
_CUT = re.compile(r"[:=,;|\[\](){}<>]")
_AFTER_COUNTER = re.compile(r"[\s\]):|,-]*")
_GROUPS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_TRAILING = re.compile(r"[\s,;|]*")
_SUBSCRIPT = re.compile(r"\s*\]\s*[:=]")
_SOURCE_FILE = re.compile(r"\.(?:py|pyx|cc|cpp|cu|c|h|hpp|lua|jl|java|js|ts|go|rs|r|m|scala)$", re.IGNORECASE)
_MAX_LINE = 4096  # a longer line is a dump, not a loop's print
_MAX_NAMES = 256  # distinct names kept: a log of ever new names is not a series of one
MIN_LINES = 3
# Short counters loops print as the whole name (``I:10``, ``i = 3``, ``n 4``), beside the counting words.
_COUNTERS = COUNT_WORDS | {"i", "it", "ep", "e", "n", "epoch", "batch", "episode", "round", "iter", "t"}
# Metric words that may head a group of sides' values, holding none of their own (``accuracy: train = ..``).
_GROUP_METRICS = METRIC - ERROR_WORDS - {"time", "eta", "memory", "mem"}


class _Seen:
    """The candidate names a scan met (a loss, an error, a side alone), each with its lines' values,
    and the counter of each line that carried one: numbers, never the text."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}  # name -> lines carrying it
        self.first: dict[str, int] = {}  # name -> order first seen
        self.values: dict[str, tuple[array, array]] = {}  # name -> (line numbers, values)
        self.lines, self.counters = array("q"), array("q")  # lines with a candidate, their counter (-1: none)
        # Every other name's non-finite tail: ``[line, value]`` of its last finite value (line -1: none
        # yet), then the lines and values of the NaN/Inf after it. A metric that broke (a KL divergence, a
        # reward gone NaN beside a finite loss) is a finding; its finite history is not, and is not kept.
        self.tails: dict[str, tuple[list[float], array, array]] = {}
        # What the other lines say in words, each event with the row it was read at.
        self.watch, self.said, self.stated_at, self.error_row = Watch(), array("q"), array("q"), -1
        self.accs: dict[str, tuple[array, array]] = {}  # the names of an accuracy: their lines and values

    def add(self, row: int, counter: int | None, fields: list[tuple[str, float]]) -> bool:
        """Keep a line's candidates' values; whether it had any."""
        kept = False
        for name, value in fields:
            if name not in self.names:
                if len(self.names) >= _MAX_NAMES or not candidate(name):
                    self._other(row, name, value)
                    keep_accuracy(self.accs, row, name, value)
                    continue
                self.names[name], self.first[name] = 0, len(self.first)
                self.values[name] = (array("q"), array("d"))
            self.names[name] += 1
            rows, vals = self.values[name]
            rows.append(row)
            vals.append(value)
            kept = True
        if kept:
            self.lines.append(row)
            self.counters.append(-1 if counter is None else counter)
        return kept

    def words(self, row: int, raw: str) -> None:
        """A line with no candidate's value: what it says in words (TF's "Model diverged with loss = NaN.",
        an exception the run died of), with the row it was said at (its step is known at the end)."""
        before = len(self.watch.events), len(self.watch.stated), self.watch.error
        if self.watch.see(raw, None, stepless=True):
            self.said.extend([row] * (len(self.watch.events) - before[0]))
            self.stated_at.extend([row] * (len(self.watch.stated) - before[1]))
        if self.watch.error is not before[2] and self.watch.error is not None:
            self.error_row = row

    def _other(self, row: int, name: str, value: float) -> None:
        # Called for every other field of every line: the finite case, nearly all of them, only stores.
        tail = self.tails.get(name)
        if tail is None:
            if len(self.tails) >= _MAX_NAMES or not name:
                return
            tail = self.tails[name] = ([-1, 0.0], array("q"), array("d"))
        if math.isfinite(value):
            last, rows, values = tail
            last[0], last[1] = row, value
            if rows:
                del rows[:], values[:]
        else:
            tail[1].append(row)
            tail[2].append(value)


def _name(label: str) -> tuple[str, bool, bool, str]:
    """The words touching a value (the text before it, cut at its last separator); whether a loss
    word opened the label before the cut (``loss: x 1.2``: the parts of a loss); whether a side's word
    stood alone there (``[valid] ... ce-mean-words : 7.06``: the line reports a validation); the metric
    word that stood alone there, if any (``accuracy: train = 19.2%``: the sides after it are its values)."""
    words = [w for w in (p.strip(" \t-+*/#>~.!?'\"") for p in _CUT.split(label)) if w]
    if not words:
        return "", False, False, ""
    name = " ".join(words[-1].split()[-4:])
    if _SOURCE_FILE.search(name):
        name = ""  # ``[loss_scaler.py:183:update_scale]``: a logger's file and line, not a metric
    before = words[:-1]
    if before and set(tokens(name)) <= GRAINS and LOSSY & set(tokens(before[-1])):
        # ``Train Loss: epoch NaN - batch NaN``: the loss at each grain is the loss's name with the grain.
        name = f"{' '.join(before[-1].split()[-4:])} {name}"
    heading = tokens(before[-1]) if before else ()
    return (name, any(LOSSY & set(tokens(w)) for w in before),
            any(set(t) <= VAL for w in before if (t := tokens(w))),
            before[-1].strip() if len(heading) == 1 and heading[0] in _GROUP_METRICS else "")


def parse_line(raw: str) -> tuple[int | None, list[tuple[str, float]]]:
    """``(counter, [(name, value), ...])`` of one line by the module's rule."""
    text = strip_prefixes(raw[:_MAX_LINE])
    if (post := postfix_fields(text)) is not None:  # ``10.5 loss, 3e-4 LR``: each name follows its value
        return None, [(name, value) for name, value, _ in post]
    fields: list[tuple[str, float]] = []
    counter: int | None = None
    bare: tuple[float, int] | None = None
    counter_end = -1  # where the line's leading counter ends: a bare value must follow it at once
    pos, in_loss, in_val, indexed, metric = 0, False, False, "", ""
    for i, m in enumerate(_VALUE.finditer(text)):
        name, opened, held_out, heads = _name(text[pos:m.start()])
        metric = heads or ("" if opened else metric)
        if indexed and not name:
            name, indexed = indexed, ""
        pos = m.end()
        try:
            value = float(m.group(1))
        except ValueError:
            continue
        if name and value.is_integer() and _SUBSCRIPT.match(text, m.end()) and text[:m.start()].rstrip().endswith("["):
            # ``train_batch_loss[ 6510 ]:  1.57``: the whole number in brackets indexes the value after it.
            counter = int(value) if counter is None and value >= 0 else counter
            indexed = name
            continue
        toks = tokens(name)
        in_loss, in_val = in_loss or opened, in_val or held_out
        if i == 0 and value.is_integer() and value >= 0 and (not toks or (len(toks) == 1 and toks[0] in _COUNTERS)):
            counter, counter_end = int(value), m.end()
            continue
        if not toks or not any(c.isalpha() for c in name):
            if i == 1 and counter_end >= 0 and _AFTER_COUNTER.fullmatch(text, counter_end, m.start()) \
                    and not value.is_integer():
                bare = value, m.end()
            continue
        if in_loss and set(toks) <= TOTAL:
            name = "loss " + name  # ``loss: x 1.2, y 0.8, total 2.0``: the total of the loss's parts
        if metric and only_side(toks):
            name = f"{name} {metric}"  # ``accuracy: train = 19.2%, valid = 19.6%``: the accuracy of each side
        elif in_val and not (VAL | TRAIN) & set(tokens(name)):
            name = "val " + name
        fields.append((name, value))
    if bare is not None and not fields and _alone(text, *bare):
        fields.append((BARE, bare[0]))
    return counter, fields


def _alone(text: str, bare: float, end: int) -> bool:
    """Whether ``bare`` (ending at ``end``) is the one number outside brackets after the counter and
    the last thing on the line outside them: ``[3] 0.69 (0.3, 0.2) [53s]`` and ``3 0.69`` print one
    value; ``0,0.100,1.100,2.100`` (a headerless table) prints several, ``Step 0: 61.349 sec`` a time
    and ``5000: 3.00%`` a share, none the loss."""
    if _TRAILING.fullmatch(_GROUPS.sub(" ", text[end:])) is None:
        return False
    loose = [float(m.group(1)) for m in _VALUE.finditer(_GROUPS.sub(" ", text[:end]))]
    return loose == [bare] or (len(loose) == 2 and loose[0].is_integer() and loose[1] == bare)


def scan(lines: Iterable[str]) -> _Seen:
    seen = _Seen()
    header: int | None = None  # a line that holds only a counter (``epoch=29``) heads the lines below it
    for row, raw in enumerate(lines):
        if not any(c.isdigit() for c in raw) and "nan" not in (low := raw.lower()) and "inf" not in low:
            seen.words(row, raw)
            continue
        counter, fields = parse_line(raw)
        if fields:
            if seen.add(row, header if counter is None else counter, fields):
                seen.watch.trained()
            else:
                seen.words(row, raw)
        else:
            if counter is not None:
                header = counter
            seen.words(row, raw)
    return seen


def _enough(values: array, beside: array | None = None) -> bool:
    """``MIN_LINES`` values, or one that is not finite, or two beside two of the other side's (a
    training and a held-out loss at two epochs: the few points a short log's readings take)."""
    return (len(values) >= MIN_LINES or not all(map(math.isfinite, values))
            or (len(values) >= 2 and beside is not None and len(beside) >= 2))


def finds_loss(lines: list[str]) -> bool:
    """Whether this reading finds a training or validation loss in ``lines`` (a log's head: what the
    sniff asks)."""
    seen = scan(lines)
    train, val = pick(seen)
    return _kept(seen, train, val) != (None, None)


def _kept(seen: _Seen, train: str | None, val: str | None) -> tuple[str | None, str | None]:
    """The picked names with enough values to read (:func:`_enough`); the counter's bare value only where
    the counters of its lines rise (``3 2.3`` then ``1 2.2``: a first column in no order counts nothing)."""
    if train is not None and not _enough(seen.values[train][1], None if val is None else seen.values[val][1]):
        train = None
    if train == BARE and not _rises(_counters_at(seen, seen.values[BARE][0])[1]):
        train = None
    if val is not None and train is None and not _enough(seen.values[val][1]):
        val = None
    return train, val


def _counters_at(seen: _Seen, rows: array) -> tuple[np.ndarray, np.ndarray]:
    """Which of the kept lines are ``rows`` (a mask), and those lines' counters (-1: none)."""
    keyed = np.isin(np.frombuffer(seen.lines, dtype=np.int64), np.frombuffer(rows, dtype=np.int64))
    return keyed, np.frombuffer(seen.counters, dtype=np.int64)[keyed]


def _rises(at: np.ndarray) -> bool:
    """Whether every line has a counter and they rise: the index, and what makes a bare value a series."""
    return bool(at.size) and bool(np.all(at >= 0)) and bool(np.all(np.diff(at) > 0))


def _signal(columns: list[str] | tuple[str, ...]) -> bool:
    return any(c == "loss" or c in SIGNAL_COLUMNS or is_val_set(c) for c in columns)


def instead(path: Path, encoding: str, take: Take, columns: list[str], rows: bool) -> Take | None:
    """This reading of the log, as its one run, when the text reader's (its runs' ``columns``, whether
    they hold ``rows``, ``take``) has no training signal once the roles are read again over its series
    (loss parts summed, a lone part or error taken as the loss, as the import that follows does);
    None when the text reader's stands, or this one finds nothing either."""
    from runlens.io.importers.table import reinfer
    from runlens.io.reader.objective import PROXIES

    if _signal(columns):
        return None
    if rows:
        imp = reinfer(take(None))
        # A loss read through an accuracy, an error rate or a reward is what is left when no name says
        # loss: this reading's named loss comes first, and the proxy stands when it finds none.
        roles = imp.config.get("import_roles") or {}
        if _signal([k for table in (imp.train, imp.evals) for k, s in table.items()
                    if len(s.steps) and (roles.get(k) or {}).get("how") not in PROXIES]):
            return None
    found = read(path, encoding)
    return None if found is None else functools.partial(_only_run, found)


def _only_run(imp: Imported, run: int | None) -> Imported:
    if run not in (None, 1):
        raise ImportFailedError(f"{imp.source}: --run {run}: the log holds 1 run")
    return dataclasses.replace(imp, warnings=list(imp.warnings), config=dict(imp.config), train=dict(imp.train),
                               evals=dict(imp.evals))


def read(path: Path, encoding: str = "utf-8") -> Imported | None:
    """The log at ``path`` by this reading; None when it finds neither loss (a validation loss alone
    is read, as another tool's evaluations-only log is: the curve then says what it lacks)."""
    with io.TextIOWrapper(open_limited(path), encoding=encoding, errors="replace") as f:
        # In blocks, a line cut in pieces as the text reader cuts it: one huge "line" costs no more memory.
        seen = scan(line for lines in one_rank(blocks(f, _MAX_LINE)) for line in lines)
    train, val = _kept(seen, *pick(seen))
    key = train or val
    if key is None:
        return None
    rows = np.frombuffer(seen.lines, dtype=np.int64)
    counters = np.frombuffer(seen.counters, dtype=np.int64)
    keyed, at = _counters_at(seen, seen.values[key][0])
    by_counter = _rises(at)
    # Each line's place in the run: its counter, or the number of key lines printed before it (a
    # validation line between two loss lines belongs to the one before).
    order = np.maximum(np.cumsum(keyed) - 1, 0)
    # By the counter, a line without one (an evaluation between two loss lines) takes the last loss line's.
    place = np.where(counters >= 0, counters, at[order]) if by_counter else order
    imp = Imported(kind="text", source=path)
    for name, target, table in ((train, "loss", imp.train), (val, "val_loss", imp.evals)):
        if name is not None:
            at_rows, values = (np.frombuffer(a, dtype=t) for a, t in zip(seen.values[name], (np.int64, np.float64),
                                                                           strict=True))
            # One value per place, the last printed (two evaluations between two loss lines).
            table[target] = last_per_step(Series(place[np.searchsorted(rows, at_rows)], values))[0]
    broken_metrics(imp, seen, rows, place)
    said(imp, seen.watch, (seen.said, seen.stated_at, seen.error_row), rows, place)
    accuracies(imp, seen.accs, rows, place)
    imp.config["index_kind"] = "step" if by_counter else "row"
    what = "loss" if train is not None else "validation loss"
    imp.index_why = (f"the number each {what} line starts with, rising on every one, is the index" if by_counter
                     else f"no counter rises on every {what} line: those lines, numbered from 0 in order, are the index")
    named = "; ".join(f"the {w} is {n!r} ({seen.names[n]} lines)"
                      for w, n in (("training loss", train), ("validation loss", val)) if n is not None)
    imp.warnings.append(f"no line is in a format runlens knows: read by the names beside the numbers; {named}. "
                        "Check it, or name the field with `runlens import text --loss NAME`")
    imp.config["import_fields"] = {t: n for t, n in (("loss", train), ("val_loss", val)) if n is not None}
    imp.config["log_style"] = {"named values": int(keyed.sum())}
    return imp
