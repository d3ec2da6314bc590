"""Repeated blocks of ``key value`` lines: one block per iteration, one row per block.

Many tools print a metrics dump as a block of lines, one name and one value
each, then the next block: Stable-Baselines3 draws boxes (``| rollout/ | |``
section rows, ``|    loss | 0.803 |`` under them, a dash rule around),
RLlib and Ray Tune print ``Result for ...:`` and indented ``key: value``
lines, custom loops print ``epoch: 3`` / ``loss: 0.41`` / ``val_loss: 0.52``.
Read line by line, none of these carries a step beside a loss; read as
blocks, each block is a record and the roles read its names as any table's.

The rules, by structure alone:

- a pair line is ``key | value`` (inside a box's borders), ``key: value`` or
  ``key  value`` (two spaces at least); a key with no value opens a section
  whose name prefixes the keys indented under it (``train/loss``,
  ``info/learner/.../total_loss``); a key of several words with no value is
  the block's title (``Result for PPO_...``, ``Epoch 3``), not a section; a
  title that is a word and a number (``Epoch 3/25``, ``epoch 100 done``) is the block's counter;
- a blank line, a rule (``-----``, ``+===+``, box-drawing lines), a line of
  another shape, or a key seen again in the block ends the block;
- it is a log only when at least two numeric keys are in two blocks and in half
  the blocks at least, and one of those changes between blocks: a box of settings, a config of
  ``key: value`` lines, or YAML sections of different keys are one record or
  none, not a history (blocks headed by a rising count are one whatever their values: a loss
  stuck, or NaN at every report); or when one block, holding half the lines, records a
  step: a loss and a step counter, each with a value (the last table a run
  printed before it stopped);
- blocks under different titles that are not counters (``Result for A``,
  ``Result for B``: Tune's trials) are different runs: the first title's
  blocks are read;
- the counter is the block's key that counts (steps, iterations, updates,
  epochs) rising in every block, the widest such; :mod:`.roles` names the
  index from it when no step or epoch column is named as such, else the
  block's order is the index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from runlens.io.reader.names import is_lossish, is_step, names_count, tokens
from runlens.io.reader.table import Records, Table
from runlens.io.reader.values import parse

_BORDER = re.compile(r"[|│┃║]")
_RULE_CHARS = frozenset("-=+_*~─━═┄┈╌┼├┤┬┴╭╮╰╯┌┐└┘╞╡╪╔╗╚╝╠╣╦╩╬|│┃║ ")
_COLON = re.compile(r"^(\s*)([A-Za-z_][\w./\-\[\]() ]{0,80}?)\s*:(?:\s+(.*?))?\s*$")
_SPACED = re.compile(r"^(\s*)([A-Za-z_][\w./\-\[\]()]{0,80})\s{2,}(\S.*?)\s*$")
# A word may follow the count (chainer-neural-style's ``epoch 100 done``).
_TITLE_COUNT = re.compile(r"^((?:[A-Za-z]+\s+){0,2}?)([A-Za-z]+)\s*[#:]?\s*(\d+)(?:\s*/\s*\d+)?(?:\s+[a-z]+)?$")


def _title_count(title: str) -> re.Match[str] | None:
    """A title that counts blocks: a word and a number (``Epoch 3/25``), or a phrase ending in a
    counting word and its number (``TRAIN EPOCH  0``); ``Result for trial 2`` names a run."""
    m = _TITLE_COUNT.match(title)
    if m is None or (m.group(1) and not names_count((m.group(2).lower(),))):
        return None
    return m


@dataclass
class _Block:
    title: str | None = None
    pairs: dict[str, str] = field(default_factory=dict)
    lines: int = 0

    def numeric(self) -> set[str]:
        return {k for k, v in self.pairs.items() if parse(v) is not None}


def _is_rule(s: str) -> bool:
    return sum(not c.isspace() for c in s) >= 3 and set(s) <= _RULE_CHARS


def _pair(line: str) -> tuple[int, str, str] | None:
    """``(indent, key, value)`` of a pair line (value ``""``: a section or a title); None otherwise."""
    body = line.rstrip()
    if _BORDER.match(body.lstrip()):
        cells = _BORDER.split(body.strip())[1:]
        if cells and not cells[-1].strip():
            cells = cells[:-1]  # the closing border
        if len(cells) == 2:
            key = cells[0].rstrip()
            if not key.strip() or key.strip()[0].isdigit():
                return None
            return len(key) - len(key.lstrip()), key.strip(), cells[1].strip()
        if len(cells) != 1:
            return None
        body = cells[0]  # a box of one cell a row (``│ loss   0.8 │``)
    m = _COLON.match(body) or _SPACED.match(body)
    if m is None:
        return None
    return len(m.group(1)), m.group(2).strip(), (m.group(3) or "").strip()


def _split(lines: list[str]) -> tuple[list[_Block], int]:
    """The blocks of ``lines`` and how many non-blank lines there are."""
    blocks: list[_Block] = []
    cur = _Block()
    stack: list[tuple[int, str]] = []
    nonblank = 0

    def close() -> None:
        nonlocal cur
        if cur.pairs:
            blocks.append(cur)
        cur = _Block()
        stack.clear()

    for line in lines:
        s = line.strip()
        if not s or _is_rule(s):
            close()
            nonblank += bool(s)
            continue
        nonblank += 1
        got = _pair(line)
        if got is None and _title_count(title := s.rstrip(":;.")):
            # ``Epoch 3`` alone on its line heads its block as ``Epoch 3:`` does (OpenNN ends it ``;``)
            got = (0, title, "")
        if got is None:
            close()
            continue
        indent, key, value = got
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not value and " " in key:  # a title: a phrase, not a name
            if cur.pairs or cur.title is not None:
                close()
            cur.title, cur.lines = key, cur.lines + 1
            continue
        path = "/".join([*(name for _, name in stack), key.rstrip("/")])
        if path in cur.pairs:
            close()  # the same key again: the next block began without a rule
        if not value:
            stack.append((indent, key.rstrip("/")))
            cur.pairs.setdefault(path, "")
        else:
            cur.pairs[path] = value
        cur.lines += 1
    close()
    return blocks, nonblank


def _history(blocks: list[_Block], nonblank: int) -> list[_Block] | None:
    """The blocks that make a history (see the module's rules), or None when they do not."""
    blocks = [b for b in blocks if len(b.numeric()) >= 2]
    if sum(b.lines for b in blocks) < 0.5 * nonblank:
        return None
    if len(blocks) <= 1:
        return blocks if blocks and _one_step(blocks[0]) else None
    seen: dict[str, set[str]] = {}
    for b in blocks:
        for k in b.numeric():
            seen.setdefault(k, set()).add(b.pairs[k])
    # A history repeats its keys: a key in fewer than half the blocks is not one of them (keys that
    # hold their own counter, ``loss at step 0:``, meet again only where two runs both start).
    shared = [k for k, vals in seen.items() if sum(k in b.pairs for b in blocks) >= max(2, len(blocks) / 2)]
    # Blocks headed by a count that rises are a history even when no value changes: a loss stuck at
    # one value, or NaN at every report (chainer-neural-style's ``epoch 100 done`` over six ``nan``).
    if len(shared) < 2 or not (_counted(blocks) or any(len(seen[k]) > 1 for k in shared)):
        return None
    return blocks


def _counted(blocks: list[_Block]) -> bool:
    """Whether every block is headed by a count (:func:`_title_count`) and the counts rise."""
    counts = [_title_count(b.title) if b.title is not None else None for b in blocks]
    if any(m is None for m in counts):
        return False
    values = [int(m.group(3)) for m in counts if m is not None]
    return all(b > a for a, b in zip(values[:-1], values[1:], strict=True))


def _one_step(block: _Block) -> bool:
    """One block that records a training step: a loss and a counter of steps, both with values
    (guided-diffusion's last table before the run stopped, its loss ``nan``). A box of settings names
    a loss function, not a loss's value, and counts epochs to run, not one done: both at once with a
    value each is what a step's record holds."""
    numeric = block.numeric()
    return (any(is_lossish(tokens(k)) for k in numeric)
            and any(is_step(tokens(k.rsplit("/", 1)[-1])) for k in numeric))


def looks(lines: list[str]) -> bool:
    """Whether the head ``lines`` are repeated blocks of ``key value`` lines."""
    return _history(*_split(lines[:2000])) is not None


def read(lines: list[str]) -> Table | None:
    """The blocks of ``lines`` as a table, one row a block; None when they are not a history."""
    blocks = _history(*_split(lines))
    if blocks is None:
        return None
    notes = []
    named = [b.title for b in blocks if b.title is not None and _title_count(b.title) is None]
    runs = list(dict.fromkeys(named))
    if len(runs) > 1:
        blocks = [b for b in blocks if b.title in (None, runs[0])]
        notes.append(f"blocks under {len(runs)} titles (several runs): those of {runs[0]!r} were read")
    rec = Records("key/value blocks")
    for b in blocks:
        row: dict[str, object] = dict(b.pairs)
        m = _title_count(b.title or "")
        if m is not None and m.group(2).lower() not in row:
            row[m.group(2).lower()] = m.group(3)  # ``Epoch 3:`` over its block counts the blocks
        rec.add(row)
    table = rec.table()
    table.notes += notes
    table.counter = _counter(table)
    return table


def _counter(table: Table) -> str | None:
    """The column that counts the blocks: a counting word, in every row, integral and rising; the widest."""
    best: tuple[float, str] | None = None
    for name in table.names:
        v = table.values[name]
        if not names_count(tokens(name)) or not table.present[name].all() or table.n < 2:
            continue
        if np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.diff(v) > 0):
            if best is None or v[-1] > best[0]:
                best = (float(v[-1]), name)
    return best[1] if best else None
